import ArgumentParser
import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Counts per state and rule, totals, and what needs attention.",
        discussion: """
        States follow the item lifecycle: detected, settled, ingested, submitted, confirmed,
        certified, archived, shared, done; failed and quarantined need an operator.

        Exit codes: 0 nothing needs attention · 1 some items failed or files are quarantined · 2 usage error.
        """
    )

    @OptionGroup var global: GlobalOptions

    struct Report: Encodable {
        var home: String
        var items: Int
        var bytes: Int64
        var sources: Int
        var custodyEvents: Int
        var states: [String: Int]
        var rules: [String: [String: Int]]
        var quarantined: [QuarantineEntry]
    }

    func run() throws {
        let home = try global.openHome()
        let s = try home.catalog.summary()
        let q = try home.catalog.quarantine(includeResolved: false)
        if global.json {
            Output.json(Report(home: home.path, items: s.items, bytes: s.bytes, sources: s.sources,
                               custodyEvents: s.events, states: s.byState, rules: s.byRule, quarantined: q))
        } else {
            Output.line("home    \(home.path)")
            Output.line("items   \(s.items) (\(Output.bytes(s.bytes))), \(s.sources) sources, \(s.events) custody events")
            Output.line()
            let states = ItemState.allCases.filter { $0 != .quarantined }
            var rows = states.map { [$0.rawValue, String(s.byState[$0.rawValue] ?? 0)] }
            rows.append(["quarantined", String(q.count)])
            Output.table(["STATE", "COUNT"], rows)
            if !s.byRule.isEmpty {
                Output.line()
                Output.table(["RULE", "ITEMS", "BY STATE"], s.byRule.keys.sorted().map { rule in
                    let m = s.byRule[rule]!
                    return [rule, String(m.values.reduce(0, +)),
                            m.keys.sorted { (ItemState(rawValue: $0) ?? .done) < (ItemState(rawValue: $1) ?? .done) }
                                .map { "\($0) \(m[$0]!)" }.joined(separator: ", ")]
                })
            }
            if !q.isEmpty {
                Output.line()
                Output.line("Quarantined (left in place, not stored):")
                for e in q.prefix(50) { Output.line("  \(Output.date(e.at))  \(e.reason)") }
                if q.count > 50 { Output.line("  … and \(q.count - 50) more (see --json)") }
            }
        }
        if (s.byState[ItemState.failed.rawValue] ?? 0) > 0 || !q.isEmpty { throw ExitCode(1) }
    }
}
