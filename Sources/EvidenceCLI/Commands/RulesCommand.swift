import ArgumentParser
import EvidenceConfig
import Foundation

struct RulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Watch rules.",
        subcommands: [Check.self]
    )

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate the watch rules (and the config they refer to).",
            discussion: Help.reflow("""
            Loads every *.toml in DIR (default: the config's `rules`, or ./watch-rules) and
            reports each problem with file, line and field; checks that notaries and archives
            named by rules exist in evidence.toml and that watched folders exist.

            A watched folder that does not exist yet is a warning, here as in `doctor` and `run`
            (which watches it once it appears, and runs the other rules meanwhile).

            Exit codes: 0 all rules valid · 2 a rule or the config is invalid.
            """)
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("Rules folder.", valueName: "dir"))
        var dir: String?

        static func text(_ a: AfterAction) -> String {
            switch a {
            case .keep: return "keep"
            case .delete: return "delete"
            case .move(let dir): return "move:\(dir)"
            }
        }

        struct Rule: Encodable {
            var name: String, file: String, path: String, settle: Double, notary: [String], archive: String?, after: String
        }

        func run() throws {
            let config = try global.loadConfig()
            var warnings: [String] = []
            let rules = try RuleSet.load(explicit: dir, config: config, home: try global.homePath(config)) { warnings.append($0) }
            if global.json {
                Output.json(rules.map { Rule(name: $0.name, file: $0.file, path: $0.path, settle: $0.settle,
                                             notary: $0.notary, archive: $0.archive, after: Self.text($0.after)) })
            } else {
                for r in rules {
                    Output.line("✓ \(r.name)  \(r.path)  settle \(r.settle)s  notary \(r.notary.isEmpty ? "-" : r.notary.joined(separator: ","))  archive \(r.archive ?? "-")  after \(Self.text(r.after))")
                }
                for w in warnings { Output.line("! \(w)") }
                Output.line("\(rules.count) rule(s) valid")
            }
        }
    }
}
