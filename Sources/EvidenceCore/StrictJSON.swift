/// Checks that JSON text means the same thing to every reader.
///
/// RFC 8259 leaves duplicate object keys undefined: Foundation's decoder keeps the first value,
/// `jq` and Python the last. A manifest with `"sha256"` twice shows an auditor's `jq` one hash
/// and our verifier another, so a document we check is refused when any object repeats a key.
/// Keys are compared after unescaping (`"a"` and `"\u0061"` are the same key to every reader)
/// and by Unicode canonical equivalence (stricter than Python, which tells NFC from NFD).
public enum StrictJSON {
    public enum Problem: Error, Equatable, CustomStringConvertible {
        /// `path` is the object's place in the document, as `$.item` or `$.proofs[0]`.
        case duplicateKey(key: String, path: String)
        case malformed(offset: Int, reason: String)

        public var description: String {
            switch self {
            case .duplicateKey(let key, let path):
                return "the key \"\(TerminalText.escape(key))\" appears twice in \(path): readers disagree on which value counts"
            case .malformed(let offset, let reason):
                return "not valid JSON at byte \(offset): \(reason)"
            }
        }
    }

    /// Throws the first duplicate key or syntax error; returns when the text is one JSON value
    /// (surrounded by optional whitespace) with no object repeating a key.
    public static func check(_ bytes: some Collection<UInt8>) throws(Problem) {
        var scanner = Scanner(bytes: Array(bytes))
        scanner.skipWhitespace()
        try scanner.value(path: "$", depth: 0)
        scanner.skipWhitespace()
        if scanner.i != scanner.bytes.count { throw .malformed(offset: scanner.i, reason: "text after the value") }
    }

    struct Scanner {
        let bytes: [UInt8]
        var i = 0
        static let maxDepth = 512

        mutating func skipWhitespace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        func fail(_ reason: String) -> Problem { .malformed(offset: i, reason: reason) }

        mutating func value(path: String, depth: Int) throws(Problem) {
            guard depth < Self.maxDepth else { throw fail("nested deeper than \(Self.maxDepth) levels") }
            guard i < bytes.count else { throw fail("unexpected end") }
            switch bytes[i] {
            case UInt8(ascii: "{"): try object(path: path, depth: depth)
            case UInt8(ascii: "["): try array(path: path, depth: depth)
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: try number()
            }
        }

        mutating func object(path: String, depth: Int) throws(Problem) {
            i += 1
            var keys: Set<String> = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return }
            while true {
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                let key = try string()
                // Swift's String equality is canonical equivalence: NFC and NFD spellings collide.
                guard keys.insert(key).inserted else { throw .duplicateKey(key: key, path: path) }
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                skipWhitespace()
                try value(path: path + "." + key, depth: depth + 1)
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end in an object") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(path: String, depth: Int) throws(Problem) {
            i += 1
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return }
            var index = 0
            while true {
                skipWhitespace()
                try value(path: "\(path)[\(index)]", depth: depth + 1)
                index += 1
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end in an array") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func literal(_ word: String) throws(Problem) {
            let w = Array(word.utf8)
            guard i + w.count <= bytes.count, Array(bytes[i..<i + w.count]) == w else { throw fail("unexpected character") }
            i += w.count
        }

        mutating func number() throws(Problem) {
            let start = i
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
            var digits = 0
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1; digits += 1 }
            guard digits > 0 else { i = start; throw fail("unexpected character") }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                var frac = 0
                while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1; frac += 1 }
                guard frac > 0 else { throw fail("a fraction needs digits") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                var exp = 0
                while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1; exp += 1 }
                guard exp > 0 else { throw fail("an exponent needs digits") }
            }
        }

        /// A string's decoded value; `i` is on the opening quote.
        mutating func string() throws(Problem) -> String {
            i += 1
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() throws(Problem) {
                guard !raw.isEmpty else { return }
                guard let s = String(validating: raw, as: UTF8.self) else { throw .malformed(offset: i, reason: "not UTF-8") }
                scalars.append(contentsOf: s.unicodeScalars)
                raw.removeAll(keepingCapacity: true)
            }
            while true {
                guard i < bytes.count else { throw fail("unterminated string") }
                let b = bytes[i]
                if b == UInt8(ascii: "\"") { i += 1; try flush(); return String(scalars) }
                if b < 0x20 { throw fail("a control character inside a string") }
                if b != UInt8(ascii: "\\") { raw.append(b); i += 1; continue }
                try flush()
                i += 1
                guard i < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var unit = try hex4()
                    if (0xD800...0xDBFF).contains(unit), i + 6 <= bytes.count,
                       bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") {
                        i += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("a lone surrogate") }
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let s = Unicode.Scalar(unit) else { throw fail("a lone surrogate") }
                    scalars.append(s)
                default: throw fail("an unknown escape")
                }
            }
        }

        mutating func hex4() throws(Problem) -> UInt32 {
            guard i + 4 <= bytes.count else { throw fail("a short \\u escape") }
            var v: UInt32 = 0
            for b in bytes[i..<i + 4] {
                v <<= 4
                switch b {
                case 0x30...0x39: v |= UInt32(b - 0x30)
                case 0x41...0x46: v |= UInt32(b - 0x41 + 10)
                case 0x61...0x66: v |= UInt32(b - 0x61 + 10)
                default: throw fail("a bad \\u escape")
                }
            }
            i += 4
            return v
        }
    }
}

/// Text from data (file names, bundle fields, server answers) made safe for a terminal or a
/// log line: control characters cannot move the cursor, clear the screen, start a new line or
/// reorder what follows. Each is shown as `\xHH` or `\u{HHHH}`, so nothing is hidden either.
public enum TerminalText {
    /// Escapes C0 and C1 controls (newline and tab included), DEL, and the Unicode bidirectional
    /// marks and line/paragraph separators.
    public static func escape(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: needsEscape) else { return s }
        var out = ""
        out.reserveCapacity(s.utf8.count + 8)
        for c in s.unicodeScalars {
            if needsEscape(c) { out += c.value < 0x100 ? hex2(c.value) : "\\u{\(String(c.value, radix: 16, uppercase: true))}" }
            else { out.unicodeScalars.append(c) }
        }
        return out
    }

    /// The same, but keeps newlines and tabs: for a block of our own text that may quote data.
    public static func escapeKeepingLines(_ s: String) -> String {
        s.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.split(separator: "\t", omittingEmptySubsequences: false).map { escape(String($0)) }.joined(separator: "\t")
        }.joined(separator: "\n")
    }

    static func hex2(_ v: UInt32) -> String {
        let digits = Array("0123456789ABCDEF")
        return "\\x" + String(digits[Int(v >> 4)]) + String(digits[Int(v & 0xF)])
    }

    static func needsEscape(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
