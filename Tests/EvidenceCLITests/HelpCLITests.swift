import ArgumentParser
@testable import EvidenceCLI
import EvidenceTesting
import Foundation
import Testing

/// `--help` on an 80-column terminal: every command's discussion wrapped once, at the terminal's
/// width (not broken again at the source's own line ends), and no example line running past 80.
@Suite("Help text on an 80-column terminal", .ownThread)
struct HelpCLITests {
    /// Every command of the tree, with its path.
    static func commands(_ type: any ParsableCommand.Type = Evidence.self, path: [String] = []) -> [([String], any ParsableCommand.Type)] {
        let name = type.configuration.commandName ?? "\(type)"
        let here = path + [name]
        return [(here, type)] + type.configuration.subcommands.flatMap { commands($0, path: here) }
    }

    @Test("every discussion: paragraphs are single lines (the parser wraps them once), indented lines fit in 80 columns")
    func discussions() {
        let all = Self.commands()
        #expect(all.count >= 30, "\(all.count) commands")
        var problems: [String] = []
        for (path, type) in all {
            for line in type.configuration.discussion.split(separator: "\n") {
                if line.hasPrefix(" ") && line.count > 80 { problems.append("\(path.joined(separator: " ")): \(line.count) columns: \(line)") }
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test("printed at COLUMNS=80: no stub lines left by a second wrap, nothing past column 80")
    func printed() {
        for path in [["status"], ["run"], ["accounts", "resume"], ["show"]] {
            let text = CLI.exec(["env", "COLUMNS=80", CLI.binary, "help"] + path).stdout
            let body = text.components(separatedBy: "\nUSAGE:").first ?? ""
            var paragraph: [String] = []
            func check() {
                for line in paragraph.dropLast() { #expect(line.count >= 55, "evidence \(path): a stub line \"\(line)\" (wrapped twice)") }
                paragraph = []
            }
            for line in body.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().map(String.init) {
                #expect(line.count <= 80, "evidence \(path): \(line)")
                if line.isEmpty || line.hasPrefix(" ") || line.hasPrefix("- ") { check() }
                if !line.isEmpty && !line.hasPrefix(" ") { paragraph.append(line) }
            }
            check()
        }
    }

    @Test("reflow joins a paragraph's lines and keeps indented lines and list items as they are")
    func reflow() {
        let text = "One paragraph\nbroken here.\n\n  evidence x   an example\n- item one\ncontinued\n- item two\n1. first"
        #expect(Help.reflow(text) == "One paragraph broken here.\n\n  evidence x   an example\n- item one continued\n- item two\n1. first")
    }
}
