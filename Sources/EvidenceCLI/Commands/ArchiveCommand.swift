import ArgumentParser
import EvidenceArchive
import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import Foundation
import Logging

struct ArchiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive",
        abstract: "Archive one item now, in the foreground, with progress.",
        discussion: Help.reflow("""
        Runs the item's pending archive and share jobs here instead of waiting for `evidence
        run`: uploads the original, receipts, certificates and manifest to its rule's account
        (resuming a chunked upload that was interrupted, verifying each file by the provider's
        hash), then makes or reuses the share link. A failed archive job is retried. Safe while
        `evidence run` is running: a job it is working on is left to it.

          evidence archive 12
          evidence archive 3fa9c2 --json

        Exit codes: 0 archived (or already) · 1 no such item, not ready, or the provider failed
        (the message says which account answered what) · 2 usage or config error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Folder of watch rules (*.toml).", valueName: "dir"))
    var rules: String?

    @Argument(help: ArgumentHelp("Item id, hash prefix or source path.", valueName: "item"))
    var item: String

    struct Report: Encodable {
        var item: Int64
        var state: String
        var files: [ArchivedFile]
        var links: [SharedLink]
        var ran: [String]
    }

    func run() async throws {
        let config = try global.loadConfig()
        let homePath = try global.homePath(config)
        let ruleList = try RuleSet.load(explicit: rules, config: config, home: homePath)
        let home = try global.openHome(mustExist: true)
        var it = try ItemResolver.resolve(item, in: home)
        StderrLogHandler.bootstrap(level: global.verbose ? .debug : .warning, format: .text)
        let logger = Logger(label: "evidence")
        let byName = Dictionary(ruleList.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let archives: Archives
        do {
            archives = try Archives.build(config: config, used: Set(ruleList.compactMap(\.archive)), home: homePath, logger: logger)
        } catch { throw CLIError.config(error.description) }

        let progress = Progress(totalBytes: it.size, totalFiles: 1, quiet: global.quiet || global.json)
        let archiver = ArchiveHandler(home: home, rules: LiveRules(byName), archives: archives, progress: { path, sent, total in
            progress.update(fileBytes: min(sent, total), name: path)
        })
        let sharer = ShareHandler(home: home, rules: LiveRules(byName), archives: archives)
        let owner = Lease.owner(role: "archive", node: config.nodeName)
        var ran: [String] = []
        // Archive, then the share job the archive transition queues.
        for kind in [JobKind.archive, JobKind.share] {
            let pending = try home.catalog.jobs(itemID: it.id).filter { $0.kind == kind && $0.state != .done }
            for job in pending {
                guard let claimed = try home.catalog.claimJob(id: job.id, owner: owner, lease: 120, now: Date()) else {
                    Output.err("item #\(it.id): its \(kind) job is being run by `evidence run` right now; leaving it to it")
                    continue
                }
                let outcome: JobOutcome
                do throws(JobError) {
                    // Renewed while it runs, however long the upload takes.
                    outcome = try await Lease.keep(home.catalog, job: claimed.id, owner: owner, lease: 120) { () async throws(JobError) in
                        kind == JobKind.archive ? try await archiver.run(claimed) : try await sharer.run(claimed)
                    }
                } catch {
                    Progress.clearLine()
                    _ = try? home.catalog.failJob(claimed.id, owner: owner, error: error.message,
                                                  retryAt: error.retryable ? Date().addingTimeInterval(error.retryAfter ?? 30) : nil,
                                                  onGiveUp: nil)
                    try? home.catalog.flushHead()
                    Output.err("item #\(it.id): \(kind) failed: \(error.message)")
                    throw ExitCode(1)
                }
                switch outcome {
                case .done(let transition): try home.catalog.completeJob(claimed.id, owner: owner, transition: transition)
                default: try home.catalog.releaseJob(claimed.id, owner: owner, runAt: Date())
                }
                ran.append(kind.rawValue)
            }
        }
        Progress.clearLine()
        try home.catalog.flushHead()
        it = try ItemResolver.resolve(String(it.id), in: home)
        let files = try home.catalog.archivedFiles(itemID: it.id)
        let links = try home.catalog.sharedLinks(itemID: it.id)
        if files.isEmpty && ran.isEmpty {
            let rule = try home.catalog.sources(itemID: it.id).compactMap(\.rule).first.flatMap { byName[$0] }
            let why = rule == nil ? "its rule is gone" : rule?.archive == nil ? "its rule \"\(rule!.name)\" has no `archive`"
                : "it is \(it.state.rawValue); it is archived once confirmed and certified (by `evidence run`)"
            Output.err("item #\(it.id) has nothing to archive: \(why)")
            throw ExitCode(1)
        }
        if global.json {
            Output.json(Report(item: it.id, state: it.state.rawValue, files: files, links: links, ran: ran))
            return
        }
        Output.line("item #\(it.id) \(it.state.rawValue)\(ran.isEmpty ? " (already archived)" : "")")
        Output.table(["role", "account", "remote path", "verified by"],
                     files.map { [$0.role.rawValue, $0.account, $0.remotePath, $0.verifiedBy] })
        for l in links {
            Output.line("link: \(l.url)\(l.expires.map { " (expires \(Output.date($0)))" } ?? "")\(l.passwordProtected ? " (password)" : "")")
            if let f = l.fallback { Output.line("  note: \(f)") }
        }
    }
}
