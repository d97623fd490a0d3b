import Foundation

/// Where each key of a TOML document is written, found by scanning the source text
/// (TOMLKit does not expose node positions).
///
/// Understands `[table]` and `[[array]]` headers, bare/quoted/dotted keys, and skips the
/// continuation lines of multi-line arrays, inline tables and multi-line strings. Keys inside
/// inline tables are not indexed: `line(for:)` falls back to the closest enclosing key.
struct KeyLineIndex: Sendable {
    private var lines: [[String]: Int] = [:]
    /// The first table header whose key starts with a character no key can start with
    /// (`[!]`, `[é]`, `[` at the end of a line), 1-based. TOMLKit's toml++ does not check this
    /// itself: it asserts (SIGABRT in debug builds, undefined behaviour in release), so such a
    /// file is refused before it reaches TOMLKit.
    private(set) var badHeader: (line: Int, column: Int)?

    init(source: String) {
        var prefix: [String] = []
        var scanner = ValueScanner()
        var lineNumber = 0
        // "\r\n" is one Character in Swift: split on it too, or a CRLF file is all one line.
        for raw in source.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNumber += 1
            let line = Substring(raw.hasSuffix("\r") ? raw.dropLast() : raw)
            if scanner.continues {
                scanner.scan(line)
                continue
            }
            let text = line.drop(while: { $0 == " " || $0 == "\t" })
            guard let first = text.first, first != "#" else { continue }
            if first == "[" {
                if badHeader == nil, let column = Self.badHeaderKey(text) {
                    badHeader = (lineNumber, line.count - text.count + column)
                }
                let isArray = text.hasPrefix("[[")
                var rest = text.dropFirst(isArray ? 2 : 1)
                if let keys = Self.parseKeys(&rest, terminator: "]") {
                    prefix = keys
                    record(keys, lineNumber)
                }
                continue
            }
            var rest = text
            if let keys = Self.parseKeys(&rest, terminator: "=") {
                record(prefix + keys, lineNumber)
                scanner.scan(rest)
            }
        }
    }

    /// The line of `path`, else of its closest recorded ancestor; nil at the root.
    func line(for path: [String]) -> Int? {
        var p = path
        while !p.isEmpty {
            if let l = lines[p] { return l }
            p.removeLast()
        }
        return nil
    }

    /// Records the path and each not-yet-seen ancestor (implicit tables of dotted keys).
    private mutating func record(_ path: [String], _ line: Int) {
        guard !path.isEmpty else { return }
        for n in 1...path.count {
            let p = Array(path.prefix(n))
            if lines[p] == nil { lines[p] = line }
        }
    }

    /// For a line starting with `[`: the 1-based column (in `header`) of the header's first key
    /// character when no key can start with it, as toml++ reads a header: `[`, spaces or tabs,
    /// a second `[` only right after the first, spaces or tabs, then the key (bare or quoted).
    private static func badHeaderKey(_ header: Substring) -> Int? {
        var chars = Array(header.dropFirst())
        var column = 2
        func skipBlanks() -> Bool {
            let n = chars.prefix { $0 == " " || $0 == "\t" }.count
            chars.removeFirst(n); column += n
            return n > 0
        }
        if !skipBlanks(), chars.first == "[" {
            chars.removeFirst(); column += 1
            _ = skipBlanks()
        }
        guard let c = chars.first else { return column }  // the line ends where the key should be
        let bare = c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "-")
        return bare || c == "\"" || c == "'" || c == "]" ? nil : column
    }

    /// Parses `a.b."c d"` up to `terminator`, leaving `text` after it. Nil if malformed.
    private static func parseKeys(_ text: inout Substring, terminator: Character) -> [String]? {
        var keys: [String] = []
        while true {
            text = text.drop(while: { $0 == " " || $0 == "\t" })
            guard let c = text.first else { return nil }
            var key = ""
            if c == "\"" || c == "'" {
                text.removeFirst()
                var closed = false
                while let ch = text.first {
                    text.removeFirst()
                    if ch == c { closed = true; break }
                    if ch == "\\" && c == "\"", let next = text.first {
                        text.removeFirst()
                        key.append(next)
                    } else {
                        key.append(ch)
                    }
                }
                guard closed else { return nil }
            } else {
                while let ch = text.first, ch.isLetter || ch.isNumber || ch == "_" || ch == "-" {
                    key.append(ch)
                    text.removeFirst()
                }
                guard !key.isEmpty else { return nil }
            }
            keys.append(key)
            text = text.drop(while: { $0 == " " || $0 == "\t" })
            guard let sep = text.first else { return nil }
            text.removeFirst()
            if sep == terminator { return keys }
            guard sep == "." else { return nil }
        }
    }
}

/// Tracks, across lines, whether a value is still open (brackets, braces, multi-line strings).
private struct ValueScanner {
    private var depth = 0
    private var multiline: String?

    var continues: Bool { depth > 0 || multiline != nil }

    mutating func scan(_ line: Substring) {
        var s = line
        while !s.isEmpty {
            if let delim = multiline {
                guard let r = s.range(of: delim) else { return }
                s = s[r.upperBound...]
                // Quotes right after a closing delimiter belong to the string ("""a"""" is legal).
                s = s.drop(while: { String($0) == String(delim.first!) })
                multiline = nil
                continue
            }
            let c = s.first!
            if s.hasPrefix("\"\"\"") || s.hasPrefix("'''") {
                multiline = String(s.prefix(3))
                s = s.dropFirst(3)
                continue
            }
            s.removeFirst()
            switch c {
            case "#": return
            case "[", "{": depth += 1
            case "]", "}": depth = max(0, depth - 1)
            case "\"", "'":
                while let ch = s.first {
                    s.removeFirst()
                    if ch == c { break }
                    if ch == "\\" && c == "\"", !s.isEmpty { s.removeFirst() }
                }
            default: break
            }
        }
    }
}
