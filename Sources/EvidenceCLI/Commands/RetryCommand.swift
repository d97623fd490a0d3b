import ArgumentParser
import EvidencePipeline
import Foundation

struct RetryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Re-queue failed work: one item's, or every failed job.",
        discussion: Help.reflow("""
        Failed jobs get fresh attempts and run at once (by `evidence run`); a failed item goes
        back to the state it failed from. Quarantined files are not jobs: fix the file (or its
        permissions) and it is taken again when it changes, at the next start, or on SIGUSR1.

        Exit codes: 0 re-queued (or nothing to do) · 1 no such item · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Every failed job.")
    var failed = false

    @Argument(help: ArgumentHelp("Item id, hash prefix or source path.", valueName: "item"))
    var item: String?

    func validate() throws {
        if failed == (item != nil) { throw ValidationError("give either ITEM or --failed") }
    }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let itemID = try item.map { try ItemResolver.resolve($0, in: home).id }
        let n = try home.catalog.retryFailed(itemID: itemID)
        try home.catalog.flushHead()
        if global.json {
            Output.json(["requeued": n])
        } else {
            Output.line(n == 0 ? "nothing to retry" : "\(n) job(s) re-queued")
        }
    }
}
