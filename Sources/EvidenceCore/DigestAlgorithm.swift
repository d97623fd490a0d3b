/// The digests an item may be recorded under besides its SHA-256 (which names it and is always
/// computed): what NSRL and forensic tools look files up by. A rule asks for them with
/// `digests = ["sha256", "sha1", "md5"]`; they are computed from the same read as the SHA-256,
/// each on its own thread, and recorded in the item's `ingested` custody event under their names.
public enum DigestAlgorithm: String, CaseIterable, Sendable, Codable {
    case sha256, sha1, md5, sha512

    /// The ones a rule adds to SHA-256, in the order they are shown (NSRL's order: MD5, SHA-1).
    public static let extras: [DigestAlgorithm] = [.md5, .sha1, .sha512]

    /// The file a bundle lists the original's digest in, for `<tool> -c`.
    public var sumsFile: String {
        switch self {
        case .sha256: "SHA256SUMS"
        case .sha1: "SHA1SUMS"
        case .md5: "MD5SUMS"
        case .sha512: "SHA512SUMS"
        }
    }

    /// The coreutils program that checks `sumsFile`.
    public var tool: String { rawValue + "sum" }

    /// How it is written for people: MD5, SHA-1, SHA-256, SHA-512.
    public var label: String {
        switch self {
        case .sha256: "SHA-256"
        case .sha1: "SHA-1"
        case .md5: "MD5"
        case .sha512: "SHA-512"
        }
    }

    public var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha1: 20
        case .md5: 16
        case .sha512: 64
        }
    }

    /// The extra digests recorded by an item's `ingested` and `seen-again` events (lowercase hex,
    /// by algorithm), first recording of each kept.
    public static func recorded(in events: [CustodyEvent]) -> [DigestAlgorithm: String] {
        var out: [DigestAlgorithm: String] = [:]
        for e in events where e.is(.ingested) || e.is(.seenAgain) {
            let d = e.fields
            for a in extras where out[a] == nil {
                if let hex = d[a.rawValue], hex.utf8.count == a.byteCount * 2, hex.utf8.allSatisfy({ Hex.isLowercaseHexDigit($0) }) {
                    out[a] = hex
                }
            }
        }
        return out
    }
}
