import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation

/// One notary for one item: submit, then poll until it confirms (pending may last hours and
/// survives restarts: the job waits without spending attempts).
///
/// No double notarization: a QED report's slug is recorded before polling starts, and when no
/// slug is recorded (first run, or a crash between the POST and the record) the notary is asked
/// for reports of this hash first, and a live one is adopted instead of submitting again.
public struct NotarizeHandler: JobHandler {
    public let kind = JobKind.notarize
    let home: EvidenceHome
    let rules: LiveRules
    let notaries: Notaries
    let metrics: PipelineMetrics
    /// The time a batching TSA's windows are read by (tests move it instead of sleeping).
    let now: @Sendable () -> Date

    public init(home: EvidenceHome, rules: LiveRules, notaries: Notaries, metrics: PipelineMetrics = .disabled,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.home = home; self.rules = rules; self.notaries = notaries; self.metrics = metrics; self.now = now
    }

    public func pauseScope(of job: QueuedJob) -> String? {
        guard case .notarize(_, let notary) = job.payload else { return nil }
        return CredentialPause.scope(.notary, notary)
    }

    public func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard let itemID = job.itemID, case .notarize(let ruleName, let notaryName) = job.payload else {
            throw JobError("notarize job \(job.id) has no item or is not a notarize job", retryable: false)
        }
        guard let rule = rules[ruleName] else {
            throw JobError("rule \"\(ruleName)\" is no longer configured", retryable: true)
        }
        guard let notary = notaries.entries[notaryName] else {
            throw JobError("notary \"\(notaryName)\" is not configured ([notaries.\(notaryName)] in evidence.toml)", retryable: true)
        }
        let home = self.home
        let (found, proofs, sources) = try await blockingJobWork {
            (try home.catalog.item(id: itemID), try home.catalog.proofs(itemID: itemID), try home.catalog.sources(itemID: itemID))
        }
        guard let item = found else { throw JobError("item \(itemID) is gone", retryable: false) }
        let existing = proofs.first { $0.notary == notaryName }
        if existing?.state == .confirmed { return .done(nil) }
        let context = Context(home: home, item: item, rule: rule, notary: notary, metrics: metrics, now: now)

        switch notary.client {
        case .qed(let qed):
            return try await context.qed(qed, existing: existing, sources: sources)
        case .rfc3161(let tsa):
            if notary.config.batch > 0 { return try await context.batched(existing: existing, kind: .rfc4998) }
            return try await context.timestamp(tsa)
        case .opentimestamps:
            return try await context.batched(existing: existing, kind: .opentimestamps)
        }
    }

    struct Context {
        let home: EvidenceHome
        let item: Item
        let rule: WatchRule
        let notary: Notaries.Entry
        let metrics: PipelineMetrics
        let now: @Sendable () -> Date
        var name: String { notary.config.name }

        func qed(_ qed: QEDClient, existing: Proof?, sources: [SourceSighting]) async throws(JobError) -> JobOutcome {
            let report: QEDReport
            let submittedAt: Date
            if existing?.state == .pending, let slug = existing?.remoteID {
                report = try await call(.poll) { () throws(NotaryError) in try await qed.report(slug: slug) }
                submittedAt = existing?.submittedAt ?? item.createdAt
            } else {
                // A failed report stays failed: after `retry`, a new one is made.
                let failedSlug = existing?.state == .failed ? existing?.remoteID : nil
                let found = try await call(.lookup) { () throws(NotaryError) in try await qed.reports(hash: item.sha256) }
                if let live = found.last(where: { $0.status != .failed && $0.slug != failedSlug }) {
                    report = live
                } else {
                    let submission = makeSubmission(sources: sources)
                    report = try await call(.submit) { () throws(NotaryError) in try await qed.submit(submission) }
                }
                submittedAt = Date()
                try await save(Proof(itemID: item.id, notary: name, kind: .qed, state: .pending, remoteID: report.slug,
                                     submittedAt: submittedAt))
            }
            switch report.status {
            case .pending:
                // Poll sooner at first, then less often, never beyond poll_max.
                let age = -submittedAt.timeIntervalSinceNow
                let wait = min(notary.config.pollMax, max(notary.config.pollFirst, age / 4))
                return .notYet(until: Date().addingTimeInterval(wait), reason: "\(name) report \(report.slug) pending")
            case .confirmed:
                let (itemID, notaryName) = (item.id, name)
                try await save(receipt: report.raw) { receipt in
                    Proof(itemID: itemID, notary: notaryName, kind: .qed, state: .confirmed, remoteID: report.slug,
                          receipt: receipt, txHash: report.txHash, blockHeight: report.blockHeight,
                          network: report.networkName, link: report.explorerURL, provenAt: report.blockTime,
                          submittedAt: submittedAt)
                }
                return .done(nil)
            case .failed:
                let reason = report.failureReason ?? "the notary reported failure"
                try await save(Proof(itemID: item.id, notary: name, kind: .qed, state: .failed, remoteID: report.slug,
                                     error: reason, submittedAt: submittedAt))
                // A failed job is what `evidence retry` re-queues.
                throw JobError("\(name) report \(report.slug) failed: \(reason)", retryable: false)
            }
        }

        func timestamp(_ tsa: TSAClient) async throws(JobError) -> JobOutcome {
            let (token, url) = try await call(.timestamp) { () throws(NotaryError) in try await tsa.timestamp(item.sha256) }
            let (itemID, notaryName) = (item.id, name)
            try await save(receipt: token.response) { receipt in
                Proof(itemID: itemID, notary: notaryName, kind: .rfc3161, state: .confirmed, remoteID: token.serial,
                      receipt: receipt, network: token.tsaName, link: url, provenAt: token.genTime,
                      submittedAt: Date())
            }
            return .done(nil)
        }

        /// A batching TSA (RFC 4998): join the window open now by saving a pending proof under its
        /// key, and wait for its `stamp` job, which saves this item's evidence record. A window
        /// stamped without this item (it joined as the window was read) means joining the next
        /// one; a window whose time-stamp failed for good fails this proof (`retry` joins anew).
        func batched(existing: Proof?, kind: ProofKind) async throws(JobError) -> JobOutcome {
            let catalog = home.catalog
            let itemID = item.id
            var submittedAt = now()
            if let existing, existing.kind == kind, existing.state == .pending, let window = existing.remoteID {
                submittedAt = existing.submittedAt ?? submittedAt
                // Re-enqueued after a crash between the proof and the job: due when the window ends, not now.
                let spec = JobSpec(.stamp(notary: name, window: window), runAt: StampHandler.end(ofWindow: window))
                let stamp = try await blockingJobWork {
                    try catalog.enqueue(spec, itemID: nil, dedupeKey: StampHandler.dedupeKey(window: window))
                }
                switch stamp.state {
                case .done:
                    // Its proofs are saved before it completes: read this item's again.
                    let now = try await blockingJobWork { try catalog.proofs(itemID: itemID).first { $0.notary == name } }
                    if now?.state == .confirmed { return .done(nil) }
                case .failed:
                    let reason = "the time-stamp of batch \(window) failed: \(stamp.lastError ?? "no reason recorded")"
                    let failed = Proof(itemID: item.id, notary: name, kind: kind, state: .failed, remoteID: window,
                                       error: reason, submittedAt: existing.submittedAt)
                    // Only over the pending proof of that window (the job may have confirmed it before failing).
                    if try await save(failed, ifPendingIn: window) == nil {
                        return .notYet(until: now().addingTimeInterval(1), reason: "\(name): its proof changed; looking again")
                    }
                    throw JobError("\(name): \(reason)", retryable: false)
                case .running:
                    // The job finishes its members' queued jobs when their records are saved; this
                    // one, running now, looks again once put back. Its lease bounds the wait.
                    return .notYet(until: max(stamp.leaseExpiresAt ?? now(), now().addingTimeInterval(10)),
                                   reason: "\(name): batch \(window) is being time-stamped", unless: confirmedMeanwhile())
                default:
                    let what = kind == .opentimestamps && existing.receipt != nil
                        ? "a Bitcoin block attesting batch \(window) (its calendars answered)" : "the time-stamp of batch \(window)"
                    return .notYet(until: max(stamp.nextRunAt.addingTimeInterval(1), now().addingTimeInterval(10)),
                                   reason: "\(name): waiting for \(what)", unless: confirmedMeanwhile())
                }
                // Stamped without this item (it joined as the members were read): the next window.
                let (next, end) = StampHandler.window(notary: name, seconds: notary.config.batch, now: now())
                let joined = Proof(itemID: item.id, notary: name, kind: kind, state: .pending, remoteID: next, submittedAt: submittedAt)
                if try await save(joined, ifPendingIn: window) == nil {
                    return .notYet(until: now().addingTimeInterval(1), reason: "\(name): its proof changed; looking again")
                }
                let nextSpec = JobSpec(.stamp(notary: name, window: next), runAt: end)
                _ = try await blockingJobWork { try catalog.enqueue(nextSpec, itemID: nil, dedupeKey: StampHandler.dedupeKey(window: next)) }
                return .notYet(until: end.addingTimeInterval(Self.fallback), reason: "\(name): in time-stamp batch \(next)",
                               unless: confirmedMeanwhile())
            }
            let (window, end) = StampHandler.window(notary: name, seconds: notary.config.batch, now: now())
            try await save(Proof(itemID: item.id, notary: name, kind: kind, state: .pending, remoteID: window, submittedAt: submittedAt))
            let spec = JobSpec(.stamp(notary: name, window: window), runAt: end)
            _ = try await blockingJobWork { try catalog.enqueue(spec, itemID: nil, dedupeKey: StampHandler.dedupeKey(window: window)) }
            return .notYet(until: end.addingTimeInterval(Self.fallback), reason: "\(name): in time-stamp batch \(window)",
                           unless: confirmedMeanwhile())
        }

        /// How long after its window ends a member looks for itself. The window's stamp job,
        /// due at the end, finishes its members' queued jobs as it saves their records, so a
        /// member normally never runs again; it looks only when the job could not (it failed,
        /// or this member joined as the members were read).
        static let fallback: Double = 3

        /// Whether this item's proof of this notary is confirmed (asked after the job is put back).
        func confirmedMeanwhile() -> @Sendable () -> Bool {
            let (catalog, itemID, name) = (home.catalog, item.id, self.name)
            return { ((try? catalog.proofs(itemID: itemID))?.first { $0.notary == name }?.state == .confirmed) }
        }

        func makeSubmission(sources: [SourceSighting]) -> QEDSubmission {
            let t = ItemTemplate(item: item, sources: sources, rule: rule)
            return QEDSubmission(hash: item.sha256, fileName: t.fileName, originalCreatedAt: t.dateTaken,
                                 name: t.expand(rule.nameTemplate), note: t.expand(rule.noteTemplate), metaData: rule.metaData)
        }

        /// One request to the notary, timed whatever its outcome; its error as a job error.
        func call<T>(_ operation: PipelineMetrics.NotaryOperation, _ body: () async throws(NotaryError) -> T) async throws(JobError) -> T {
            do { return try await metrics.timeNotary(name, operation, body) } catch {
                throw JobError(error, notary: name)
            }
        }

        /// The receipt stored, then the proof made to name it saved (`save`), in one visit to an
        /// I/O thread.
        func save(receipt data: Data, _ proof: @escaping @Sendable (SHA256Digest) -> Proof) async throws(JobError) {
            let (store, catalog, lifecycle) = (home.store, home.catalog, ItemLifecycle(rule: rule))
            _ = try await blockingJobWork {
                let saved = proof(try store.put(data).digest)
                return try catalog.saveProof(saved, then: lifecycle.decide(onSaving: saved))
            }
        }

        /// `save`, only while this item's proof is still pending in `window`; nil when it no longer is.
        func save(_ proof: Proof, ifPendingIn window: String) async throws(JobError) -> Item? {
            let catalog = home.catalog
            let lifecycle = ItemLifecycle(rule: rule)
            return try await blockingJobWork {
                try catalog.saveProof(proof, ifCurrent: .pending, remoteID: window, receipt: nil, then: lifecycle.decide(onSaving: proof))
            }
        }

        func save(_ proof: Proof) async throws(JobError) {
            let catalog = home.catalog
            let lifecycle = ItemLifecycle(rule: rule)
            _ = try await blockingJobWork {
                try catalog.saveProof(proof, then: lifecycle.decide(onSaving: proof))
            }
        }
    }
}
