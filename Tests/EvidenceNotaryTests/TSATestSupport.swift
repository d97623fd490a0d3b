import EvidenceCore
import EvidenceNotary
import EvidenceSandbox
import Foundation
import Testing
import EvidenceTesting

/// A fresh temporary directory, removed when the value is discarded by `withTempDirectory`.
func withTempDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("evidence-notary-tests-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    return try body(dir)
}

/// SHA-256 of `data` computed by `openssl dgst` (independent of the code under test).
func opensslSHA256(of data: Data, in dir: String) throws -> SHA256Digest {
    let file = dir + "/dgst-\(UUID().uuidString).bin"
    try data.write(to: URL(fileURLWithPath: file))
    defer { try? FileManager.default.removeItem(atPath: file) }
    let out = try OpenSSLCLI.check(["dgst", "-sha256", "-r", file])
    let hex = String(out.prefix(while: { !$0.isWhitespace }))
    return try #require(SHA256Digest(hex: hex), "openssl dgst printed \(out)")
}

/// The hex bytes of an `openssl … -text` hex dump (`0000 - 2c f2 4d …-26 e8 …   ascii`)
/// starting on the line after `header`.
func hexDump(after header: String, in text: String) -> String {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard let start = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == header }) else { return "" }
    lines = Array(lines[(start + 1)...])
    var hex = ""
    for line in lines {
        let trimmed = line.drop(while: { $0 == " " })
        guard trimmed.count > 7 else { break }
        let offset = trimmed.prefix(4)
        guard offset.allSatisfy(\.isHexDigit), trimmed.dropFirst(4).hasPrefix(" - ") else { break }
        // 16 bytes take 47 columns ("xx xx … xx-xx … xx"); the ASCII column follows.
        let bytes = trimmed.dropFirst(7).prefix(47)
        hex += bytes.filter { $0.isHexDigit }
    }
    return hex.lowercased()
}

/// The value after `Label:` on its own line in `openssl … -text` output.
func textField(_ label: String, in text: String) -> String? {
    for line in text.split(separator: "\n") {
        let t = line.trimmingCharacters(in: .whitespaces)
        if t.hasPrefix(label + ":") {
            return String(t.dropFirst(label.count + 1)).trimmingCharacters(in: .whitespaces)
        }
    }
    return nil
}

extension SHA256Digest {
    static let known = SHA256Digest(hex: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03")!  // sha256("hello\n")
    static let other = SHA256Digest(hex: String(repeating: "ab", count: 32))!
}

extension TimestampVerifier {
    /// For tests that run one check both ways: `caFile` nil is the parse-only `inspect`
    /// (status, imprint, nonce), a file the full signature and chain check.
    static func verify(response: Data, for request: TimestampRequest, caFile: String?,
                       untrustedFile: String? = nil) throws(TimestampError) -> TimestampToken {
        guard let caFile else { return try inspect(response: response, for: request) }
        return try verify(response: response, for: request, trust: TSATrust(caFiles: [caFile]), untrustedFile: untrustedFile)
    }

    static func verify(response: Data, digest: SHA256Digest, caFile: String?,
                       untrustedFile: String? = nil) throws(TimestampError) -> TimestampToken {
        guard let caFile else { return try inspect(response: response, digest: digest) }
        return try verify(response: response, digest: digest, trust: TSATrust(caFiles: [caFile]), untrustedFile: untrustedFile)
    }
}
