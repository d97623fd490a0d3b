import ArgumentParser
import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Counts per state and rule, totals, and what needs attention.",
        discussion: Help.reflow("""
        States follow the item lifecycle: detected, settled, ingested, submitted, confirmed,
        certified, archived, shared, done; failed and quarantined need an operator. An item
        whose path changed after it was taken (a file still growing, or replaced) counts as
        superseded: it stays stored and notarized, and is not archived unless its archive had
        started. 0-byte items are counted as empty besides their state.

          evidence status                          the summary
          evidence status --pending --older-than 10m   items on their way 10 min+
          evidence status --json                   everything, for scripts

        An account or notary whose credentials were refused (HTTP 401/403) is shown first as
        PAUSED, with what to fix: its jobs wait and nothing is sent to it until the secret
        changes, SIGHUP, or `evidence accounts resume NAME`.

        Exit codes: 0 nothing needs attention · 1 items failed, files are quarantined, jobs
        are failing, an account or notary is paused, or (with --pending) pending items were
        listed · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "List items still on their way (not done, failed or quarantined), oldest first.")
    var pending = false

    @Option(name: .long, help: ArgumentHelp("With --pending: only items at least this old (e.g. 10m, 2h, 1d).", valueName: "duration"))
    var olderThan: DurationArgument?

    struct PendingItem: Encodable {
        var id: Int64
        var sha256: String
        var state: String
        var ageSeconds: Double
        var reason: String?
        var source: String?
        var lastError: String?
    }

    struct Report: Encodable {
        var home: String
        var items: Int
        var bytes: Int64
        var sources: Int
        var custodyEvents: Int
        var custodyAnchors: ChainAnchors.Summary
        var states: [String: Int]
        /// Items of 0 bytes (also counted in `states`).
        var empty: Int
        var rules: [String: [String: Int]]
        /// Per node: items it took in first, jobs it runs now (several nodes on one catalog).
        var nodes: [NodeRow]
        var oldestPendingAgeSeconds: Double?
        var jobs: [String: Int]
        var failingJobs: [QueuedJob]
        var quarantined: [QuarantineEntry]
        var pending: [PendingItem]?
        /// Accounts and notaries whose credentials were refused: their work waits.
        var paused: [CredentialPause]
        var proofs: [String: ProofSummary]
        var links: [SharedLink]
    }

    struct NodeRow: Encodable {
        var node: String
        var takenIn: Int
        var runningJobs: Int

        static func of(_ s: CatalogSummary) -> [NodeRow] {
            Set(s.takenInByNode.keys).union(s.runningByNode.keys).sorted().map {
                NodeRow(node: $0, takenIn: s.takenInByNode[$0] ?? 0, runningJobs: s.runningByNode[$0] ?? 0)
            }
        }
    }

    /// Per notary: how many proofs are pending (and the oldest's age), confirmed, failed (with why).
    struct ProofSummary: Encodable {
        var pending = 0
        var oldestPendingAgeSeconds: Double?
        var confirmed = 0
        var failed = 0
        var failures: [String] = []

        static func of(_ proofs: [Proof]) -> [String: ProofSummary] {
            var out: [String: ProofSummary] = [:]
            for p in proofs {
                var s = out[p.notary] ?? ProofSummary()
                switch p.state {
                case .pending:
                    s.pending += 1
                    let age = -(p.submittedAt ?? p.updatedAt).timeIntervalSinceNow
                    s.oldestPendingAgeSeconds = max(s.oldestPendingAgeSeconds ?? 0, age)
                case .confirmed: s.confirmed += 1
                case .failed:
                    s.failed += 1
                    if s.failures.count < 20 { s.failures.append("item #\(p.itemID): \(p.error ?? "failed")") }
                }
                out[p.notary] = s
            }
            return out
        }
    }

    /// "12, the newest covers event #345, written 2m ago; 3 events since" (or why there are none).
    static func anchorLine(_ a: ChainAnchors.Summary) -> String {
        guard let seq = a.newestSeq else {
            return "none: [custody] anchor_tsa time-stamps the custody log (see evidence help log)"
        }
        let age = a.newestAgeSeconds.map { ", written \(DurationText.format(seconds: $0)) ago" } ?? ""
        let since = a.eventsSinceNewest == 0 ? "every event covered" : "\(a.eventsSinceNewest) event(s) since, not yet covered"
        return "\(a.count), the newest covers event #\(seq)\(age); \(since)"
    }

    func validate() throws {
        if olderThan != nil && !pending { throw ValidationError("--older-than goes with --pending") }
    }

    func run() throws {
        let home = try global.openHome()
        let c = home.catalog
        let s = try c.summary()
        let q = try c.quarantine(includeResolved: false)
        let troubled = try c.troubledJobs(limit: 100)
        let paused = try Pauses.all(in: c).values.sorted { $0.scope < $1.scope }
        let jobs = try c.jobCounts()
        var pendingItems: [PendingItem]?
        if pending {
            let age = olderThan?.seconds ?? 0
            pendingItems = try c.pendingItems(olderThan: Date().addingTimeInterval(-age)).map { item in
                let jobs = try c.jobs(itemID: item.id)
                return PendingItem(id: item.id, sha256: item.sha256.hex, state: item.stateLabel,
                                   ageSeconds: -item.createdAt.timeIntervalSinceNow, reason: item.stateReason,
                                   source: try c.sources(itemID: item.id).first?.path,
                                   lastError: jobs.compactMap(\.lastError).last)
            }
        }
        let oldestAge = s.oldestPending.map { -$0.timeIntervalSinceNow }
        let proofs = ProofSummary.of(try c.allProofs())
        let head = try c.lastEvent()
        let anchors = ChainAnchors.summary(directory: ChainAnchors.directory(home), headSeq: head?.seq ?? 0,
                                           headIsRecord: head.map(ChainAnchors.isRecordOfPrevious) ?? false)

        if global.json {
            Output.json(Report(home: home.path, items: s.items, bytes: s.bytes, sources: s.sources,
                               custodyEvents: s.events, custodyAnchors: anchors, states: s.byState, empty: s.empty, rules: s.byRule,
                               nodes: NodeRow.of(s),
                               oldestPendingAgeSeconds: oldestAge, jobs: jobs, failingJobs: troubled,
                               quarantined: q, pending: pendingItems, paused: paused, proofs: proofs, links: try c.allSharedLinks()))
        } else if let pendingItems {
            Output.table(["ITEM", "STATE", "AGE", "SHA256", "SOURCE", "WHY"], pendingItems.map {
                ["#\($0.id)", $0.state, DurationText.format(seconds: $0.ageSeconds), String($0.sha256.prefix(12)),
                 $0.source ?? "-", $0.lastError ?? $0.reason ?? "waiting for its next job"]
            })
            Output.line("\(pendingItems.count) pending item(s)" + (olderThan.map { " older than \($0)" } ?? ""))
        } else {
            for p in paused { Output.line("✗ PAUSED: \(p.line)") }
            if !paused.isEmpty { Output.line() }
            Output.line("home     \(home.path)")
            Output.line("items    \(s.items) (\(Output.bytes(s.bytes))), \(s.sources) sources, \(s.events) custody events")
            Output.line("anchors  " + Self.anchorLine(anchors))
            Output.line("pending  " + (oldestAge.map { "oldest \(DurationText.format(seconds: $0)) old" } ?? "none"))
            Output.line("jobs     " + (jobs.isEmpty ? "none" : JobStateOrder.all.compactMap { k in jobs[k].map { "\(k) \($0)" } }.joined(separator: ", ")))
            Output.line()
            var rows = ItemState.allCases.map { [$0.rawValue, String(s.byState[$0.rawValue] ?? 0)] }
            rows.append([CatalogSummary.superseded, String(s.byState[CatalogSummary.superseded] ?? 0)])
            rows.append(["quarantined", String(q.count)])
            if s.empty > 0 { rows.append(["(empty: 0 bytes)", String(s.empty)]) }
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
            let nodes = NodeRow.of(s)
            if nodes.count > 1 || nodes.contains(where: { $0.runningJobs > 0 }) {
                Output.line()
                Output.table(["NODE", "TAKEN IN", "RUNNING JOBS"], nodes.map { [$0.node, String($0.takenIn), String($0.runningJobs)] })
            }
            if !proofs.isEmpty {
                Output.line()
                Output.table(["NOTARY", "PENDING", "OLDEST PENDING", "CONFIRMED", "FAILED"], proofs.keys.sorted().map { n in
                    let p = proofs[n]!
                    return [n, String(p.pending), p.oldestPendingAgeSeconds.map { DurationText.format(seconds: $0) } ?? "-",
                            String(p.confirmed), String(p.failed)]
                })
                for n in proofs.keys.sorted() { for f in proofs[n]!.failures { Output.line("  ✗ \(n): \(f)") } }
            }
            if !troubled.isEmpty {
                Output.line()
                Output.line("Failing jobs:")
                Output.table(["JOB", "KIND", "ITEM", "STATE", "ATTEMPTS", "LAST ERROR"], troubled.prefix(20).map {
                    ["\($0.id)", $0.kind.rawValue, $0.itemID.map { "#\($0)" } ?? "-", $0.state.rawValue,
                     "\($0.attempts)/\($0.maxAttempts)", $0.lastError ?? ""]
                })
            }
            if !q.isEmpty {
                Output.line()
                Output.line("Quarantined (left in place, not stored):")
                for e in q.prefix(50) { Output.line("  \(Output.date(e.at))  \(e.reason)") }
                if q.count > 50 { Output.line("  … and \(q.count - 50) more (see --json)") }
            }
        }
        let attention = (s.byState[ItemState.failed.rawValue] ?? 0) > 0 || !q.isEmpty || !troubled.isEmpty || !paused.isEmpty
            || !(pendingItems?.isEmpty ?? true)
        if attention { throw ExitCode(1) }
    }
}

enum JobStateOrder {
    static let all = ["queued", "running", "done", "failed"]
}
