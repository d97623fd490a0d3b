import EvidenceCore
import EvidenceNotary
import Foundation

extension FuzzTargets {
    /// QED's JSON answers: one report (`parse(answer:)`) and a page of the hash lookup (`parseList`).
    static let qed = FuzzTarget(
        name: "qed", summary: "QED report JSON: QEDReport.parse / parseList", tokens: [
            "\"slug\"", "\"status\"", "\"confirmed\"", "\"pending\"", "\"failed\"", "\"hash\"", "\"tx\"", "\"block_height\"",
            "\"block_time\"", "\"2024-05-01T12:34:56.123456+02:00\"", "\"results\"", "\"next\"", "\"/v1/reports/?page=2\"",
            "1e308", "-1e400", "18446744073709551616", "null", "{}", "[]", "\\ud800", "\"\\u0000\"",
        ]
    ) { data throws(FuzzViolation) in
        switch Result(catching: { () throws(NotaryError) in try QEDReport.parse(answer: data, notary: "qed") }) {
        case .success(let report):
            try require(report.raw == data, "qed", "raw is not the answer received")
            try require(!report.slug.isEmpty, "qed", "accepted a report without a slug")
            if report.status == .confirmed { try require(report.txHash != nil, "qed", "confirmed report without tx.hash") }
            _ = report.blockTime.map(Timestamp.string)
        case .failure(let error):
            try require(error.message.contains("QED") || error.message.hasPrefix("qed:"), "qed",
                        "error names neither the notary nor QED: \(error.message)")
            try require(!error.retryable, "qed", "a malformed answer is retryable: \(error.message)")
        }
        switch Result(catching: { () throws(QEDReport.ListError) in try QEDReport.parseList(data) }) {
        case .success(let page):
            if let next = page.next, let path = QEDClient.relativePath(next, base: "https://api.qed.digital/v1/") {
                let host = URL(string: "https://api.qed.digital/v1/" + path)?.host
                try require(host == nil || host == "api.qed.digital", "qed", "next page leaves the API host: \(next) → \(path)")
            }
        case .failure(let error):
            try require(!error.reason.isEmpty, "qed", "a refused list says nothing about why")
        }
    }

    /// A stored RFC 3161 reply (DER via OpenSSL), checked offline against the fixture's digest,
    /// with and without the TSA's CA (signature and chain).
    static func rfc3161(fixtures: String) -> FuzzTarget {
        let digest = fixtureDigest(fixtures)
        let ca = fixtures + "/tsa-ca.pem"
        return FuzzTarget(name: "rfc3161", summary: "RFC 3161 .tsr: TimestampVerifier.verify (DER, CMS)") { data throws(FuzzViolation) in
            for caFile in [nil, ca] {
                let token: TimestampToken
                do throws(TimestampError) {
                    if let caFile {
                        token = try TimestampVerifier.verify(response: data, digest: digest, caFile: caFile)
                    } else {
                        token = try TimestampVerifier.inspect(response: data, digest: digest)
                    }
                } catch {
                    try require(!error.message.isEmpty, "rfc3161", "error without a message (\(error.kind))")
                    try require(error.kind != .trustConfiguration, "rfc3161", "the fixture CA did not load: \(error.message)")
                    continue
                }
                try require(token.digest == digest, "rfc3161", "accepted a token for another digest")
                _ = Timestamp.string(token.genTime)
            }
        }
    }

    /// The SHA-256 of the fixture bundle's original (the digest its token proves).
    static func fixtureDigest(_ fixtures: String) -> SHA256Digest {
        let hex = (try? String(contentsOfFile: fixtures + "/bundle/SHA256SUMS", encoding: .utf8))?
            .split(separator: "\n").first { $0.contains("  original/") }?.prefix(64)
        return hex.flatMap { SHA256Digest(hex: String($0)) } ?? SHA256Digest(bytes: [UInt8](repeating: 0, count: 32))
    }
}
