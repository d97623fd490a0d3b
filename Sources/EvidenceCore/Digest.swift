/// A SHA-256 digest, kept as its 64-character lowercase hex form (the form every
/// tool an auditor uses prints: `sha256sum`, `openssl dgst`, store paths).
public struct SHA256Digest: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public let hex: String

    /// Accepts exactly 64 hex characters (either case); stores lowercase.
    public init?(hex: String) {
        let lower = hex.lowercased()
        guard lower.utf8.count == 64, lower.utf8.allSatisfy({ Hex.isHexDigit($0) }) else { return nil }
        self.hex = lower
    }

    public init(bytes: some Collection<UInt8>) {
        precondition(bytes.count == 32, "SHA-256 digests are 32 bytes")
        self.hex = Hex.encode(bytes)
    }

    public var description: String { hex }
    /// First 8 hex characters, used in names (`{sha8}`) and short listings.
    public var short: String { String(hex.prefix(8)) }

    public static func < (a: Self, b: Self) -> Bool { a.hex < b.hex }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        guard let d = SHA256Digest(hex: s) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a SHA-256 hex digest: \(s.prefix(80))")
        }
        self = d
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(hex)
    }
}

public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// The common case (a digest in an array) written straight into the string's storage.
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { b in
            String(unsafeUninitializedCapacity: b.count * 2) { out in
                for (i, x) in b.enumerated() {
                    out[2 * i] = digits[Int(x >> 4)]
                    out[2 * i + 1] = digits[Int(x & 0x0f)]
                }
                return b.count * 2
            }
        }
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let hi = value(u[i]), let lo = value(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    static func isHexDigit(_ c: UInt8) -> Bool { value(c) != nil }
    /// A lowercase hex digit (what every digest this tool writes is made of).
    public static func isLowercaseHexDigit(_ c: UInt8) -> Bool { (0x30...0x39).contains(c) || (0x61...0x66).contains(c) }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
