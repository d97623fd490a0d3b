import ArgumentParser
import EvidencePipeline
import Foundation

struct RetryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Re-queue failed work: one item's, or every failed job.",
        discussion: Help.reflow("""
        Failed jobs get fresh attempts and run at once (by `evidence run`); a failed item goes
        back to the state it failed from. With ITEM, its jobs waiting in back-off (an outage, a
        refused upload) are made due now as well. Quarantined files are not jobs: fix the file (or its
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
        // A job waiting in back-off (an outage, a refused upload) runs now too.
        let woken = try itemID.map { try home.catalog.wakeQueuedJobs(itemID: $0, now: Date()) } ?? 0
        try home.catalog.flushHead()
        if global.json {
            Output.json(["requeued": n, "woken": woken])
        } else if n == 0 && woken == 0 {
            Output.line("nothing to retry" + (itemID != nil ? ": the item has no failed job and none waiting" : ""))
        } else {
            Output.line([n > 0 ? "\(n) job(s) re-queued" : nil, woken > 0 ? "\(woken) waiting job(s) due now" : nil]
                .compactMap { $0 }.joined(separator: ", "))
        }
    }
}
