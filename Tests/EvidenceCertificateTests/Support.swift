import EvidenceProcess
import EvidenceCertificate
import EvidenceCore
import Foundation
import Glibc
import Testing
import EvidenceTesting

typealias TempDir = TempDirectory

struct ToolResult {
    var out: String
    var err: String
    var status: Int32
}

/// Runs a command (looked up on PATH) with output captured through files.
func tool(_ args: [String], in dir: TempDir) -> ToolResult {
    do {
        let r = try ChildProcess.run(args[0], Array(args.dropFirst()), separateStandardError: true)
        return ToolResult(out: r.output, err: r.standardError, status: r.status)
    } catch {
        return ToolResult(out: "", err: "cannot run \(args[0]): \(error)", status: -1)
    }
}

/// A rendered certificate on disk plus what the standard PDF tools say about it.
struct RenderedPDF {
    let dir: TempDir
    let path: String
    let data: Data

    /// With `EVIDENCE_CERT_SAMPLE_DIR` set, a copy named `keepAs` is left there for a human to look at.
    init(_ content: CertificateContent, keepAs: String? = nil) throws {
        dir = TempDir()
        data = try CertificateRenderer.render(content)
        path = dir.write("certificate.pdf", data)
        if let keepAs, let keep = ProcessInfo.processInfo.environment["EVIDENCE_CERT_SAMPLE_DIR"] {
            _ = FileManager.default.createFile(atPath: keep + "/" + keepAs, contents: data)
        }
    }

    /// `qpdf --check`: exit 0 and no warnings.
    func qpdfCheck() -> ToolResult { tool(["qpdf", "--check", path], in: dir) }

    func info() -> [String: String] {
        let r = tool(["pdfinfo", "-enc", "UTF-8", path], in: dir)
        var fields: [String: String] = [:]
        for line in r.out.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    var pageCount: Int { Int(info()["Pages"] ?? "") ?? -1 }

    func text(layout: Bool = false) -> String {
        var args = ["pdftotext", "-enc", "UTF-8"]
        if layout { args.append("-layout") }
        args += [path, "-"]
        return tool(args, in: dir).out
    }

    /// Renders every page to 8-bit gray PGM at `dpi`.
    func grayPages(dpi: Int = 60) -> [GrayImage] {
        let prefix = dir.path + "/gray"
        let r = tool(["pdftoppm", "-r", String(dpi), "-gray", path, prefix], in: dir)
        guard r.status == 0 else { return [] }
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [])
            .filter { $0.hasPrefix("gray-") && $0.hasSuffix(".pgm") }
            .sorted { pageNumber($0) < pageNumber($1) }
        return files.compactMap { GrayImage(pgm: FileManager.default.contents(atPath: dir.path + "/" + $0) ?? Data()) }
    }

    private func pageNumber(_ name: String) -> Int {
        Int(name.dropFirst("gray-".count).dropLast(".pgm".count)) ?? 0
    }
}

/// A binary (P5) PGM, as `pdftoppm -gray` writes it.
struct GrayImage {
    let width: Int
    let height: Int
    let pixels: [UInt8]

    init?(pgm: Data) {
        let bytes = [UInt8](pgm)
        var i = 0
        func token() -> String? {
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "#") {
                    while i < bytes.count, bytes[i] != 10 { i += 1 }
                } else if bytes[i] == 32 || (9...13).contains(bytes[i]) {
                    i += 1
                } else { break }
            }
            let start = i
            while i < bytes.count, !(bytes[i] == 32 || (9...13).contains(bytes[i])) { i += 1 }
            return start < i ? String(decoding: bytes[start..<i], as: UTF8.self) : nil
        }
        guard token() == "P5", let w = token().flatMap({ Int($0) }), let h = token().flatMap({ Int($0) }),
              let maxval = token().flatMap({ Int($0) }), maxval == 255 else { return nil }
        i += 1  // the single whitespace byte after maxval
        guard bytes.count - i >= w * h else { return nil }
        width = w
        height = h
        pixels = Array(bytes[i..<(i + w * h)])
    }

    func pixel(_ x: Int, _ y: Int) -> UInt8 { pixels[y * width + x] }

    /// Fraction of pixels darker than `threshold`.
    func inkFraction(threshold: UInt8 = 200) -> Double {
        Double(pixels.lazy.filter { $0 < threshold }.count) / Double(max(1, pixels.count))
    }

    /// Pixels darker than near-white within `points` of any edge (page drawn at `dpi`).
    func inkInBorder(points: Double, dpi: Int = 60) -> Int {
        let band = Int((points * Double(dpi) / 72).rounded(.down))
        var count = 0
        for y in 0..<height {
            for x in 0..<width where x < band || x >= width - band || y < band || y >= height - band {
                if pixel(x, y) < 245 { count += 1 }
            }
        }
        return count
    }
}

/// Text with all whitespace removed, so wrapped lines compare in one piece.
func squeezed(_ s: String) -> String {
    String(s.unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) }.map(Character.init))
}

func hexDigest(_ seed: Int) -> String {
    // Deterministic, distinct 64-hex strings.
    var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 0x1234_5678
    var out = ""
    for _ in 0..<4 {
        state ^= state >> 33
        state = state &* 0xff51_afd7_ed55_8ccd
        state ^= state >> 29
        out += String(format: "%016llx", state)
    }
    return out
}

enum Samples {
    static let sha = SHA256Digest(hex: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")!
    static let generated = Date(timeIntervalSince1970: 1_773_486_000)

    static var qed: CertificateContent.Proof {
        .init(notary: "QED", status: "confirmed", time: Date(timeIntervalSince1970: 1_773_480_123.5),
              reference: "0x4a1f0c2b9e8d7a6c5b4f3e2d1c0b9a8f7e6d5c4b3a29180716253443526170ab",
              detail: "Polygon PoS mainnet · block 51234567",
              link: "https://polygonscan.com/tx/0x4a1f0c2b9e8d7a6c5b4f3e2d1c0b9a8f7e6d5c4b3a29180716253443526170ab")
    }

    static var tsa: CertificateContent.Proof {
        .init(notary: "RFC 3161 TSA", status: "granted", time: Date(timeIntervalSince1970: 1_773_479_001),
              reference: "0x5F3A9C01D2E4", detail: "FreeTSA (https://freetsa.org/tsr), policy 1.2.3.4.1")
    }

    static var content: CertificateContent {
        CertificateContent(
            fileName: "bodycam-2026-03-14_0815.mp4", size: 48_213_771, sha256: sha,
            mediaSummary: "mov,mp4 · 12.0 s · h264 1920×1080 30 fps · aac 48000 Hz 2 ch",
            dateTaken: Date(timeIntervalSince1970: 1_773_476_100), ingestedAt: Date(timeIntervalSince1970: 1_773_476_160.25),
            itemID: 42, proofs: [qed, tsa],
            verifyCommands: [
                "sha256sum -c SHA256SUMS",
                "openssl ts -verify -data clip.mp4 -in clip.mp4.tsr -CAfile tsa-ca.pem -untrusted tsa.pem",
            ],
            custodyHead: "c0ffee00" + String(repeating: "ab", count: 28),
            generatedAt: generated)
    }
}
