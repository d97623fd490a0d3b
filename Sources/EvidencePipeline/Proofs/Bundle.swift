import EvidenceCatalog
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation
import Glibc

/// The auditor's bundle of one item: everything needed to check it offline with standard
/// tools (`sha256sum -c`, `openssl ts -verify`), and `manifest.json` for `evidence verify DIR`.
///
/// ```
/// original/<file name>            the evidence file, byte for byte
/// proofs/<notary>.json            confirmed QED report (the receipt)
/// proofs/<notary>.tsr             RFC 3161 token;  proofs/<notary>-ca.pem  the TSA's CA (when configured)
/// certificates/<origin>.pdf       evidence.pdf (ours) and each notary's
/// custody.jsonl                   the item's custody events, one JSON object a line
/// manifest.json  VERIFY.md  SHA256SUMS (covers every other file)
/// ```
public struct BundleManifest: Codable, Sendable {
    public struct ItemInfo: Codable, Sendable {
        public var id: Int64
        public var sha256: String
        public var size: Int64
        public var fileName: String
        public var state: String
        public var dateTaken: Date?
        public var media: String?
    }
    public struct FileEntry: Codable, Sendable {
        public var path: String
        public var role: String
        public var sha256: String
        public var size: Int64
    }
    public var format: String
    public var item: ItemInfo
    public var proofs: [Proof]
    public var certificates: [String]
    public var custodyHead: String?
    public var files: [FileEntry]
    public var generatedAt: Date

    public static let formatName = "evidence-bundle/1"
}

public enum BundleError: Error, CustomStringConvertible {
    case exists(String)
    case io(String, String)

    public var description: String {
        switch self {
        case .exists(let p): return "\(p): already exists and is not empty; choose a new folder"
        case .io(let p, let d): return "\(p): \(d)"
        }
    }
}

public enum BundleWriter {
    /// Writes the bundle into a temporary sibling folder, fsyncs every file, then renames it onto
    /// `dir` (which must not exist, or be empty). `tsaCAFiles` maps notary names to their CA files.
    @discardableResult
    public static func write(home: EvidenceHome, item: Item, to dir: String,
                             tsaCAFiles: [String: String]) throws -> BundleManifest {
        let fm = FileManager.default
        let target = (dir as NSString).standardizingPath
        if let entries = try? fm.contentsOfDirectory(atPath: target) {
            guard entries.isEmpty else { throw BundleError.exists(target) }
            try fm.removeItem(atPath: target)
        }
        let parent = (target as NSString).deletingLastPathComponent
        try fm.createDirectory(atPath: parent.isEmpty ? "." : parent, withIntermediateDirectories: true)
        let temp = target + ".partial-\(getpid())"
        try? fm.removeItem(atPath: temp)
        for sub in ["", "/original", "/proofs", "/certificates"] {
            try fm.createDirectory(atPath: temp + sub, withIntermediateDirectories: true)
        }
        var keep = false
        defer { if !keep { try? fm.removeItem(atPath: temp) } }

        let sources = try home.catalog.sources(itemID: item.id)
        let proofs = try home.catalog.proofs(itemID: item.id)
        let certificates = try home.catalog.certificates(itemID: item.id)
        let events = try home.catalog.events(itemID: item.id)
        let fileName = BundleNames.safe(sources.first?.name ?? item.sha256.hex)
        var files: [BundleManifest.FileEntry] = []

        func add(_ rel: String, role: String, data: Data) throws {
            try AtomicFile.write(data, to: temp + "/" + rel, mode: 0o644)
            files.append(.init(path: rel, role: role, sha256: SHA256Hasher.hash(data).hex, size: Int64(data.count)))
        }

        // The original, streamed from the store (constant memory), checked against its hash.
        let originalRel = "original/" + fileName
        let copied = try home.store.copyObject(item.sha256, to: temp + "/" + originalRel)
        guard copied.digest == item.sha256 else {
            throw BundleError.io(home.store.objectPath(item.sha256), "store object hashes to \(copied.digest.hex), not \(item.sha256.hex): run `evidence fsck`")
        }
        files.append(.init(path: originalRel, role: "original", sha256: item.sha256.hex, size: copied.size))

        for p in proofs where p.state == .confirmed {
            guard let receipt = p.receipt else { continue }
            let name = BundleNames.safe(p.notary)
            let data = try home.store.read(receipt)
            if p.kind == .rfc3161 {
                try add("proofs/\(name).tsr", role: "rfc3161-token", data: data)
                if let ca = tsaCAFiles[p.notary] {
                    try add("proofs/\(name)-ca.pem", role: "rfc3161-ca", data: try Data(contentsOf: URL(fileURLWithPath: ca)))
                }
            } else {
                try add("proofs/\(name).json", role: "qed-report", data: data)
            }
        }
        for c in certificates {
            try add("certificates/\(BundleNames.safe(c.origin)).pdf", role: "certificate", data: try home.store.read(c.sha256))
        }
        let custody = try events.map { String(decoding: try CanonicalJSON.encode($0), as: UTF8.self) }.joined(separator: "\n") + "\n"
        try add("custody.jsonl", role: "custody", data: Data(custody.utf8))

        let manifest = BundleManifest(
            format: BundleManifest.formatName,
            item: .init(id: item.id, sha256: item.sha256.hex, size: item.size, fileName: fileName, state: item.state.rawValue,
                        dateTaken: item.dateTaken, media: item.media?.summary),
            proofs: proofs, certificates: certificates.map(\.origin), custodyHead: events.last?.hash,
            files: files, generatedAt: Date())
        try add("manifest.json", role: "manifest", data: try CanonicalJSON.encoder(pretty: true).encode(manifest))
        try add("VERIFY.md", role: "instructions", data: Data(verifyText(manifest).utf8))
        let sums = files.sorted { $0.path < $1.path }.map { "\($0.sha256)  \($0.path)\n" }.joined()
        try AtomicFile.write(Data(sums.utf8), to: temp + "/SHA256SUMS", mode: 0o644)
        for sub in ["/original", "/proofs", "/certificates", ""] { fsyncDirectory(temp + sub) }
        guard rename(temp, target) == 0 else {
            throw BundleError.io(target, "rename from \(temp) failed: \(String(cString: strerror(errno)))")
        }
        fsyncDirectory(parent.isEmpty ? "." : parent)
        keep = true
        return manifest
    }

    static func verifyText(_ m: BundleManifest) -> String {
        var s = """
        # Verifying evidence item #\(m.item.id)

        File: `original/\(m.item.fileName)` — \(m.item.size) bytes
        SHA-256: `\(m.item.sha256)`

        Run these in this folder; every one must succeed. No `evidence` software is needed.

        1. Every file is intact (the original, proofs, certificates, custody log, manifest):

               sha256sum -c SHA256SUMS

        2. The original's SHA-256 is the one notarized:

               sha256sum 'original/\(m.item.fileName)'     # must print \(m.item.sha256)

        """
        var step = 3
        for p in m.proofs where p.state == .confirmed {
            let n = BundleNames.safe(p.notary)
            if p.kind == .rfc3161 {
                s += """
                \(step). RFC 3161 time-stamp by \(p.notary) (serial \(p.remoteID ?? "?"), time \(p.provenAt.map(Timestamp.string) ?? "?")):

                       openssl ts -verify -data 'original/\(m.item.fileName)' -in proofs/\(n).tsr -CAfile proofs/\(n)-ca.pem
                       openssl ts -reply -in proofs/\(n).tsr -text      # shows the time and the imprint

                   (without `proofs/\(n)-ca.pem`, use the TSA's published CA certificate.)

                """
            } else {
                s += """
                \(step). QED report by \(p.notary): `proofs/\(n).json` holds the confirmed report; its `hash` must be
                   the SHA-256 above. Transaction \(p.txHash ?? "?") on \(p.network ?? "?"), block \(p.blockHeight.map(String.init) ?? "?"):
                   \(p.link ?? "")

                       grep -o '"hash": *"[0-9a-f]\\{64\\}"' proofs/\(n).json | head -1

                """
            }
            step += 1
        }
        s += """
        \(step). `custody.jsonl` lists the item's custody events; each event's `hash` is
           SHA-256(prev_hash + "\\n" + body) as documented in `evidence` (`evidence verify .` recomputes them).

        `evidence verify .` runs all of these checks at once and reports them point by point.

        """
        return s
    }
}

/// Checks a bundle folder offline, point by point. One changed byte anywhere fails a check.
public enum BundleVerifier {
    public struct Check: Codable, Sendable {
        public var check: String
        public var ok: Bool
        public var detail: String
    }

    public static func isBundle(_ dir: String) -> Bool {
        FileManager.default.fileExists(atPath: dir + "/manifest.json") && FileManager.default.fileExists(atPath: dir + "/SHA256SUMS")
    }

    public static func verify(_ dir: String) -> [Check] {
        var checks: [Check] = []
        func check(_ name: String, _ ok: Bool, _ detail: String) { checks.append(Check(check: name, ok: ok, detail: detail)) }

        // 1. SHA256SUMS: every listed file matches, and every file present is listed.
        guard let sumsText = try? String(contentsOfFile: dir + "/SHA256SUMS", encoding: .utf8) else {
            check("SHA256SUMS", false, "\(dir)/SHA256SUMS: missing or not UTF-8"); return checks
        }
        var listed: [String: String] = [:]
        for line in sumsText.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].count == 64, parts[1].hasPrefix(" ") else {
                check("SHA256SUMS", false, "malformed line: \(line.prefix(100))"); continue
            }
            let rel = String(parts[1].dropFirst())
            listed[rel] = String(parts[0])
            if rel.contains("..") || rel.hasPrefix("/") { check("SHA256SUMS", false, "\(rel): path leaves the bundle"); continue }
            switch Result(catching: { try FileHasher.hash(path: dir + "/" + rel) }) {
            case .success(let r):
                check("file intact", r.digest.hex == parts[0], r.digest.hex == parts[0] ? rel : "\(rel): hashes to \(r.digest.hex), SHA256SUMS says \(parts[0])")
            case .failure(let e):
                check("file intact", false, "\(rel): \(e)")
            }
        }
        let present = allFiles(dir).filter { $0 != "SHA256SUMS" }
        for extra in present.subtracting(listed.keys).sorted() { check("no unlisted files", false, "\(extra): not in SHA256SUMS") }

        // 2. The manifest agrees with the files.
        guard let data = FileManager.default.contents(atPath: dir + "/manifest.json"),
              let m = try? CanonicalJSON.decoder().decode(BundleManifest.self, from: data) else {
            check("manifest", false, "\(dir)/manifest.json: missing or not a valid \(BundleManifest.formatName) manifest"); return checks
        }
        check("manifest", m.format == BundleManifest.formatName, "format \(m.format), item #\(m.item.id)")
        for f in m.files where listed[f.path] != f.sha256 {
            check("manifest matches SHA256SUMS", false, "\(f.path): manifest \(f.sha256.prefix(16))…, SHA256SUMS \(listed[f.path]?.prefix(16) ?? "missing")")
        }
        guard let digest = SHA256Digest(hex: m.item.sha256) else {
            check("manifest", false, "item sha256 is not a SHA-256 hex digest"); return checks
        }
        let original = "original/" + m.item.fileName
        check("original is the notarized content", listed[original] == m.item.sha256,
              listed[original] == m.item.sha256 ? "\(original): sha256 \(m.item.sha256)" : "\(original): \(listed[original] ?? "missing") ≠ \(m.item.sha256)")

        // 3. Proofs.
        for p in m.proofs where p.state == .confirmed {
            let n = BundleNames.safe(p.notary)
            let file = "proofs/\(n)." + (p.kind == .rfc3161 ? "tsr" : "json")
            guard let receipt = FileManager.default.contents(atPath: "\(dir)/\(file)") else {
                check(ProofCheck.name(p), false, "\(file) missing"); continue
            }
            let ca = "\(dir)/proofs/\(n)-ca.pem"
            let c = ProofCheck.check(p, receipt: receipt, digest: digest, caFile: FileManager.default.fileExists(atPath: ca) ? ca : nil,
                                     label: file)
            check(c.check, c.ok, c.detail)
        }

        // 4. Custody events recompute, and the last one is the manifest's head.
        if let text = try? String(contentsOfFile: dir + "/custody.jsonl", encoding: .utf8) {
            var last: String?
            var bad: [String] = []
            var count = 0
            for line in text.split(separator: "\n") {
                guard let e = try? CanonicalJSON.decoder().decode(CustodyEvent.self, from: Data(line.utf8)) else {
                    bad.append("line \(count + 1) is not a custody event"); continue
                }
                count += 1
                let h = SHA256Hasher.hash(CustodyEvent.chainInput(prevHash: e.prevHash, body: e.canonicalBody)).hex
                if h != e.hash { bad.append("event #\(e.seq) hashes to \(h.prefix(16))…, says \(e.hash.prefix(16))…") }
                last = e.hash
            }
            if last != m.custodyHead { bad.append("last event \(last?.prefix(16) ?? "-") is not the manifest's head \(m.custodyHead?.prefix(16) ?? "-")") }
            check("custody events", bad.isEmpty, bad.isEmpty ? "\(count) events, each hash recomputed" : bad.joined(separator: "; "))
        } else {
            check("custody events", false, "custody.jsonl missing")
        }

        // 5. Certificates are PDFs.
        for origin in m.certificates {
            let rel = "certificates/\(BundleNames.safe(origin)).pdf"
            let head = FileManager.default.contents(atPath: dir + "/" + rel)?.prefix(5)
            check("certificate \(origin)", head == Data("%PDF-".utf8), head == Data("%PDF-".utf8) ? rel : "\(rel): missing or not a PDF")
        }
        return checks
    }

    static func allFiles(_ dir: String) -> Set<String> {
        var out = Set<String>()
        guard let e = FileManager.default.enumerator(atPath: dir) else { return out }
        while let rel = e.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: dir + "/" + rel, isDirectory: &isDir), !isDir.boolValue { out.insert(rel) }
        }
        return out
    }
}

func fsyncDirectory(_ path: String) {
    let fd = open(path, O_RDONLY | O_DIRECTORY)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    close(fd)
}

/// Checks one confirmed proof's receipt against the content digest: the same code for bundles
/// (offline) and for items in the store.
public enum ProofCheck {
    static func name(_ p: Proof) -> String {
        p.kind == .rfc3161 ? "RFC 3161 token \(p.notary)" : "QED report \(p.notary)"
    }

    /// `label` names the receipt in messages (a bundle path or a store object path).
    public static func check(_ p: Proof, receipt: Data, digest: SHA256Digest, caFile: String?, label: String) -> BundleVerifier.Check {
        if p.kind == .rfc3161 {
            do {
                let token = try TimestampVerifier.verify(response: receipt, digest: digest, caFile: caFile)
                let serialOK = p.remoteID == nil || p.remoteID == token.serial
                return .init(check: name(p), ok: serialOK,
                             detail: "serial \(token.serial)\(serialOK ? "" : " (recorded \(p.remoteID ?? "-"))"), time \(Timestamp.string(token.genTime))"
                                + (caFile != nil ? ", signature and chain verified" : ", imprint only (no CA configured)"))
            } catch {
                return .init(check: name(p), ok: false, detail: "\(label): \(error.message)")
            }
        }
        guard let obj = try? JSONSerialization.jsonObject(with: receipt) as? [String: Any] else {
            return .init(check: name(p), ok: false, detail: "\(label): not a JSON object")
        }
        let hash = obj["hash"] as? String, status = obj["status"] as? String
        let tx = (obj["tx"] as? [String: Any])?["hash"] as? String
        let ok = hash == digest.hex && status == "confirmed" && tx != nil && tx == p.txHash
        return .init(check: name(p), ok: ok,
                     detail: ok ? "confirmed, tx \(tx ?? "")"
                         : "\(label): report hash \(hash ?? "-"), status \(status ?? "-"), tx \(tx ?? "-") (recorded tx \(p.txHash ?? "-"))")
    }
}
