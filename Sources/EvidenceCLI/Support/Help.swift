/// `--help` text as swift-argument-parser wraps it: at the terminal's width. A discussion is
/// written in the source as paragraphs broken at ~95 columns; printed as written it would be
/// wrapped twice on an 80-column terminal (each source line broken again, leaving stubs). So
/// each paragraph's lines are joined into one, and the parser wraps it once, at the width the
/// reader has. Lines that start with a space (examples, tables) and list items (`- `, `• `,
/// `1. `) start a line of their own; an indented line is printed as written.
enum Help {
    static func reflow(_ text: String) -> String {
        var out: [String] = []
        var current: String?
        func flush() {
            if let c = current { out.append(c) }
            current = nil
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                flush()
                out.append("")
            } else if line.first == " " || line.first == "\t" {
                flush()
                out.append(line)
            } else if startsItem(line) {
                flush()
                current = line
            } else {
                current = current.map { $0 + " " + line } ?? line
            }
        }
        flush()
        return out.joined(separator: "\n")
    }

    /// `- item`, `• item`, `* item`, `1. item`, `2) item`.
    static func startsItem(_ line: String) -> Bool {
        if line.hasPrefix("- ") || line.hasPrefix("• ") || line.hasPrefix("* ") { return true }
        let digits = line.prefix { $0.isNumber }
        guard !digits.isEmpty, digits.count <= 2 else { return false }
        let rest = line.dropFirst(digits.count)
        return rest.hasPrefix(". ") || rest.hasPrefix(") ")
    }
}
