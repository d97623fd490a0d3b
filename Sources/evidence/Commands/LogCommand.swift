import ArgumentParser
import EvidenceCatalog
import EvidencePipeline
import Foundation

struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "The custody log.",
        subcommands: [Verify.self]
    )

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify the custody log's hash chain and head anchor.",
            discussion: """
            Each event's hash covers the previous event's hash and the event's canonical bytes;
            an edited, deleted, inserted or reordered event breaks the chain from that point.
            Exit codes: 0 intact · 1 broken · 2 usage error.
            """
        )

        @OptionGroup var global: GlobalOptions

        func run() throws {
            let home = try global.openHome(mustExist: true)
            let report = try home.catalog.verifyChain()
            if global.json {
                Output.json(report)
            } else {
                Output.line("\(report.ok ? "✓" : "✗") custody chain: \(report.events) events, head \(report.headHash)")
                for p in report.problems { Output.line("  ✗ \(p)") }
            }
            if !report.ok { throw ExitCode(1) }
        }
    }
}
