/// A JSON object whose values are all strings (`{"k":"v",…}`), the shape of every custody event's
/// details, read without Foundation's JSONDecoder, which costs ~20 µs an object: `log verify` and
/// the cross-check read a million of them. Anything else, or anything unusual (a lone surrogate, a
/// repeated key, a value that is not a string), returns nil and the caller uses JSONDecoder, so
/// the result is JSONDecoder's wherever this one is not sure.
public enum FlatStringJSON {
    public static func parse(_ text: String) -> [String: String]? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    static func parse(bytes u: UnsafeBufferPointer<UInt8>) -> [String: String]? {
        var i = 0
        let n = u.count
        func skipSpace() { while i < n, u[i] == 0x20 || u[i] == 0x0A || u[i] == 0x0D || u[i] == 0x09 { i += 1 } }
        func hex4() -> UInt32? {
            guard i + 4 <= n else { return nil }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = u[i]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                default: return nil
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }
        func string() -> String? {
            guard i < n, u[i] == 0x22 else { return nil }
            i += 1
            let start = i
            // The common case: no escape, copied as it is.
            while i < n, u[i] != 0x22, u[i] != 0x5C, u[i] >= 0x20 { i += 1 }
            if i < n, u[i] == 0x22 {
                defer { i += 1 }
                return String(decoding: UnsafeBufferPointer(rebasing: u[start..<i]), as: UTF8.self)
            }
            var out = Array(u[start..<i])
            while i < n {
                let c = u[i]
                if c == 0x22 { i += 1; return String(decoding: out, as: UTF8.self) }
                if c < 0x20 { return nil }
                if c != 0x5C { out.append(c); i += 1; continue }
                i += 1
                guard i < n else { return nil }
                let e = u[i]
                i += 1
                switch e {
                case 0x22, 0x5C, 0x2F: out.append(e)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x6E: out.append(0x0A)
                case 0x72: out.append(0x0D)
                case 0x74: out.append(0x09)
                case 0x75:
                    guard let v = hex4(), !(0xD800...0xDFFF).contains(v), let scalar = Unicode.Scalar(v) else { return nil }
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: return nil
                }
            }
            return nil
        }
        skipSpace()
        guard i < n, u[i] == 0x7B else { return nil }
        i += 1
        var out: [String: String] = [:]
        skipSpace()
        if i < n, u[i] == 0x7D {
            i += 1
        } else {
            while true {
                skipSpace()
                guard let key = string() else { return nil }
                skipSpace()
                guard i < n, u[i] == 0x3A else { return nil }
                i += 1
                skipSpace()
                guard let value = string(), out.updateValue(value, forKey: key) == nil else { return nil }
                skipSpace()
                guard i < n else { return nil }
                if u[i] == 0x2C { i += 1; continue }
                if u[i] == 0x7D { i += 1; break }
                return nil
            }
        }
        skipSpace()
        return i == n ? out : nil
    }
}

extension FlatStringJSON {
    /// The JSON text of an object of strings, keys in UTF-8 byte order, written directly. With
    /// `forTerminal: false` the bytes are exactly `JSONEncoder`'s with `.sortedKeys` and
    /// `.withoutEscapingSlashes` (`"` and `\` escaped, `\b \t \n \f \r` short, every other
    /// control character as `\u00xx`, the rest as its UTF-8; a test holds the two to the same
    /// bytes), without the encoder's boxing of every value: each custody event's details and
    /// each job's parameters are written so. `forTerminal: true` (log lines) also writes as
    /// `\uXXXX` everything `TerminalText` escapes (DEL, C1 controls, bidi marks, line and
    /// paragraph separators): still JSON of the same object, nothing a terminal acts on left raw.
    public static func write(_ object: [String: String], forTerminal: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + 32 * object.count)
        out.append(UInt8(ascii: "{"))
        // JSONEncoder's order: by UTF-8 bytes (code points), not String's canonical order, in
        // which "e\u{301}x" sorts after "é" instead of before "f".
        for (n, key) in object.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            appendString(key, to: &out, forTerminal: forTerminal)
            out.append(UInt8(ascii: ":"))
            appendString(object[key]!, to: &out, forTerminal: forTerminal)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func appendString(_ s: String, to out: inout [UInt8], forTerminal: Bool) {
        out.append(UInt8(ascii: "\""))
        if forTerminal, s.unicodeScalars.contains(where: { $0.value >= 0x7F && TerminalText.needsEscape($0) }) {
            for c in s.unicodeScalars {
                if c.value < 0x7F { appendASCII(UInt8(c.value), to: &out) }
                else if TerminalText.needsEscape(c) { appendUnicodeEscape(c.value, to: &out) }
                else { UTF8.encode(c) { out.append($0) } }
            }
        } else {
            for b in s.utf8 {
                if b < 0x80 { appendASCII(b, to: &out) } else { out.append(b) }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// An ASCII byte as JSONEncoder writes it (DEL raw).
    private static func appendASCII(_ c: UInt8, to out: inout [UInt8]) {
        let backslash = UInt8(ascii: "\\")
        switch c {
        case UInt8(ascii: "\""), backslash: out.append(backslash); out.append(c)
        case 0x08: out.append(backslash); out.append(UInt8(ascii: "b"))
        case 0x09: out.append(backslash); out.append(UInt8(ascii: "t"))
        case 0x0A: out.append(backslash); out.append(UInt8(ascii: "n"))
        case 0x0C: out.append(backslash); out.append(UInt8(ascii: "f"))
        case 0x0D: out.append(backslash); out.append(UInt8(ascii: "r"))
        case 0x00..<0x20: appendUnicodeEscape(UInt32(c), to: &out)
        default: out.append(c)
        }
    }

    /// `\uXXXX` (lowercase hex) of a code point of the Basic Multilingual Plane.
    private static func appendUnicodeEscape(_ v: UInt32, to out: inout [UInt8]) {
        out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), hexDigits[Int(v >> 12 & 0xF)], hexDigits[Int(v >> 8 & 0xF)],
                                hexDigits[Int(v >> 4 & 0xF)], hexDigits[Int(v & 0xF)]])
    }
}
