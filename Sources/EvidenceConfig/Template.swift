import Foundation

/// What a template's placeholders expand to, for one evidence file.
public struct TemplateValues: Sendable, Equatable {
    /// `{rule}`: the rule's name.
    public var rule: String
    /// `{name}`: the file name with extension (`clip.mp4`).
    public var name: String
    /// `{dir}`: the source file's directory, as the caller chooses to show it
    /// (the pipeline passes the path relative to the rule's watched folder, `""` at its top).
    public var dir: String
    /// `{sha256}`: lowercase hex digest; `{sha8}` is its first 8 characters.
    public var sha256: String
    /// `{size}`: size in bytes.
    public var size: Int64
    /// `{yyyy} {mm} {dd} {hh}` are taken from this instant in `timeZone` (default UTC).
    public var date: Date
    public var timeZone: TimeZone

    public init(
        rule: String, name: String, dir: String, sha256: String, size: Int64, date: Date,
        timeZone: TimeZone = TimeZone(identifier: "UTC")!
    ) {
        self.rule = rule
        self.name = name
        self.dir = dir
        self.sha256 = sha256
        self.size = size
        self.date = date
        self.timeZone = timeZone
    }

    /// `{stem}`: `name` without its last extension (`clip.tar.gz` → `clip.tar`; `.profile` → `.profile`).
    public var stem: String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// `{ext}`: the last extension without the dot (`mp4`), `""` when none.
    public var ext: String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }
}

/// Templates of `remote_path`, `name` and `note`: text with `{placeholder}`s; `{{` and `}}`
/// stand for literal braces. Values are inserted verbatim (no escaping or sanitizing).
public enum Template {
    /// The placeholders `expand` knows, without braces.
    public static let placeholders = ["rule", "name", "stem", "ext", "dir", "sha8", "sha256", "yyyy", "mm", "dd", "hh", "size"]

    /// nil when `t` is well formed; else an operator-facing message (unknown placeholder,
    /// unclosed or unmatched brace).
    public static func validate(_ t: String) -> String? {
        switch parse(t) {
        case .failure(let message): return message
        case .success(let pieces):
            for case .placeholder(let p) in pieces where !placeholders.contains(p) {
                return "unknown placeholder {\(p)}; known: " + placeholders.map { "{\($0)}" }.joined(separator: " ")
            }
            return nil
        }
    }

    /// `t` with its placeholders replaced. Unknown placeholders (rejected by `validate`) are left as written;
    /// a malformed template is returned unchanged.
    public static func expand(_ t: String, _ v: TemplateValues) -> String {
        guard case .success(let pieces) = parse(t) else { return t }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = v.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour], from: v.date)
        func pad(_ n: Int?, _ width: Int) -> String {
            let s = String(n ?? 0)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        var out = ""
        for piece in pieces {
            switch piece {
            case .literal(let s): out += s
            case .placeholder(let p):
                switch p {
                case "rule": out += v.rule
                case "name": out += v.name
                case "stem": out += v.stem
                case "ext": out += v.ext
                case "dir": out += v.dir
                case "sha8": out += String(v.sha256.prefix(8))
                case "sha256": out += v.sha256
                case "yyyy": out += pad(c.year, 4)
                case "mm": out += pad(c.month, 2)
                case "dd": out += pad(c.day, 2)
                case "hh": out += pad(c.hour, 2)
                case "size": out += String(v.size)
                default: out += "{\(p)}"
                }
            }
        }
        return out
    }

    private enum Piece {
        case literal(String)
        case placeholder(String)
    }

    private enum Parsed {
        case success([Piece])
        case failure(String)
    }

    private static func parse(_ t: String) -> Parsed {
        var pieces: [Piece] = []
        var literal = ""
        var i = t.startIndex
        while i < t.endIndex {
            let c = t[i]
            let next = t.index(after: i)
            if c == "{" {
                if next < t.endIndex && t[next] == "{" {
                    literal.append("{")
                    i = t.index(after: next)
                    continue
                }
                guard let close = t[next...].firstIndex(where: { $0 == "}" || $0 == "{" }), t[close] == "}" else {
                    return .failure("unclosed `{` in \"\(t)\" (write `{{` for a literal brace)")
                }
                let name = String(t[next..<close])
                guard !name.isEmpty else { return .failure("empty placeholder {} in \"\(t)\"") }
                if !literal.isEmpty { pieces.append(.literal(literal)); literal = "" }
                pieces.append(.placeholder(name))
                i = t.index(after: close)
            } else if c == "}" {
                guard next < t.endIndex && t[next] == "}" else {
                    return .failure("unmatched `}` in \"\(t)\" (write `}}` for a literal brace)")
                }
                literal.append("}")
                i = t.index(after: next)
            } else {
                literal.append(c)
                i = next
            }
        }
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        return .success(pieces)
    }
}
