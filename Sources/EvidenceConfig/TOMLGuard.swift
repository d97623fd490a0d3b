/// Refuses the few malformed TOML shapes that TOMLKit's toml++ (3.4.0) does not report but
/// asserts on — SIGABRT in debug builds, `__builtin_assume` (undefined behaviour) in release —
/// found by `make fuzz`. Each is invalid TOML anyway, so refusing it first changes no valid file.
/// (Table headers with an impossible key are found by `KeyLineIndex`.)
///
/// - `}` right after `[` or `,` (blanks, newlines and comments between): `a = [}`, `a = ["x",}`.
/// - a date followed by `T` and no digit: `1979-05-27T;7:32`.
enum TOMLGuard {
    struct Problem: Equatable {
        var line: Int
        var column: Int
        var message: String
    }

    static func check(_ source: String) -> Problem? {
        let s = Array(source.unicodeScalars)
        var line = 1, column = 0
        var last: Unicode.Scalar = "\n"  // last character outside strings, comments and blanks
        var i = 0
        func isDigit(_ k: Int) -> Bool { k >= 0 && k < s.count && ("0"..."9").contains(s[k]) }
        func starts(_ text: String, at k: Int) -> Bool {
            let t = Array(text.unicodeScalars)
            return k + t.count <= s.count && Array(s[k..<k + t.count]) == t
        }
        /// Moves past `count` scalars, counting lines.
        func advance(_ count: Int = 1) {
            for _ in 0..<count where i < s.count {
                if s[i] == "\n" { line += 1; column = 0 } else { column += 1 }
                i += 1
            }
        }
        /// `YYYY-MM-DD` just before `i`, and no digit after it.
        func endsDateWithoutTime() -> Bool {
            i >= 10 && isDigit(i - 1) && isDigit(i - 2) && s[i - 3] == "-" && isDigit(i - 4)
                && isDigit(i - 5) && s[i - 6] == "-" && isDigit(i - 10) && !isDigit(i + 1)
        }
        while i < s.count {
            let c = s[i]
            switch c {
            case "#":
                while i < s.count, s[i] != "\n" { advance() }
            case "\"", "'":
                let triple = starts(String(repeating: String(c), count: 3), at: i)
                let delimiter = triple ? String(repeating: String(c), count: 3) : String(c)
                advance(delimiter.unicodeScalars.count)
                while i < s.count {
                    if c == "\"", s[i] == "\\" { advance(2); continue }
                    if starts(delimiter, at: i) { advance(delimiter.unicodeScalars.count); break }
                    if !triple, s[i] == "\n" { break }  // unterminated: toml++ reports it
                    advance()
                }
                last = c
            case " ", "\t", "\r", "\n":
                advance()
            case "}" where last == "[" || last == ",":
                return Problem(line: line, column: column + 1, message: "`}` cannot follow `\(last)`")
            case "T" where endsDateWithoutTime(), "t" where endsDateWithoutTime():
                return Problem(line: line, column: column + 1, message: "a date's `\(c)` must be followed by a time (HH:MM:SS)")
            default:
                last = c
                advance()
            }
        }
        return nil
    }
}
