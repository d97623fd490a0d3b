import EvidenceBlocking
import EvidenceCatalog
import EvidenceCore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Runs durable jobs from the catalog's queue with up to `workers` at once.
///
/// On graceful shutdown it stops claiming, gives in-flight jobs `drainTimeout` seconds to
/// finish, then cancels them and returns their leases to the queue (not counted as attempts).
public final class JobRunner: Service, Sendable {
    let catalog: any Catalog
    let handlers: [JobKind: any JobHandler]
    let owner: String
    let workers: Int
    let lease: Double
    let backoff: Backoff
    let drainTimeout: Double
    let logger: Logger
    let idlePoll: Double
    let metrics: PipelineMetrics
    /// Accounts and notaries whose credentials were refused: their jobs wait instead of running
    /// (nil: a refusal is an ordinary failed attempt).
    let pauses: Pauses?
    /// The queue's clock: when jobs are due, when a retry runs. Injected so that back-off and
    /// waits are tested by moving it, not by sleeping.
    let now: @Sendable () -> Date
    private let stopping = Mutex(false)
    private let started = Mutex(false)

    public init(catalog: any Catalog, handlers: [any JobHandler], owner: String, workers: Int, lease: Double = 300,
                backoff: Backoff = Backoff(), drainTimeout: Double = 10, idlePoll: Double = 0.2,
                metrics: PipelineMetrics = .disabled, pauses: Pauses? = nil, now: @escaping @Sendable () -> Date = { Date() },
                logger: Logger) {
        self.now = now
        self.pauses = pauses
        self.catalog = catalog
        self.handlers = Dictionary(handlers.map { ($0.kind, $0) }, uniquingKeysWith: { a, _ in a })
        self.owner = owner
        self.workers = max(1, workers)
        self.lease = lease
        self.backoff = backoff
        self.drainTimeout = drainTimeout
        self.idlePoll = idlePoll
        self.metrics = metrics
        self.logger = logger
        metrics.registerJobKinds(self.handlers.keys.map(\.rawValue).sorted())
    }

    var isStopping: Bool { stopping.withLock { $0 } }

    /// How long an idle worker waits between looks at the queue when the catalog wakes it.
    static let signalledPoll = 2.0
    /// How often the secrets of paused accounts and notaries are looked at.
    static let secretCheck = 3.0

    /// The job kinds this runner has handlers for.
    public var kinds: [JobKind] { handlers.keys.sorted { $0.rawValue < $1.rawValue } }

    /// Whether the workers are claiming jobs: from after the leases of a previous run went
    /// back to the queue until graceful shutdown begins (for `/readyz`).
    public var isRunning: Bool { started.withLock { $0 } && !isStopping }

    public func run() async throws {
        let (catalog, owner) = (self.catalog, self.owner)
        // Leases of processes that are gone (a previous run killed) go back to the queue now;
        // one a live `evidence archive` holds stays with it.
        let released = try await onIOThread { () throws(CatalogError) in
            try catalog.releaseLeases(owners: catalog.leaseOwners().filter { Lease.isGone($0, current: owner) })
        }
        if released > 0 { logger.notice("returned \(released) job lease(s) of a previous run to the queue") }
        started.withLock { $0 = true }
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Bool.self) { group in
                var workersLeft = workers
                for _ in 0..<workers { group.addTask { await self.workerLoop(); return true } }
                if let pauses = self.pauses {
                    // A paused account or notary resumes once its secret changes: looked at every few seconds.
                    group.addTask {
                        var last: ContinuousClock.Instant?
                        while !self.isStopping && !Task.isCancelled {
                            if last.map({ ContinuousClock.now - $0 >= .seconds(Self.secretCheck) }) ?? true {
                                await onIOThread { pauses.checkSecrets() }
                                last = .now
                            }
                            try? await Task.sleep(for: .milliseconds(100))
                        }
                        return true
                    }
                    workersLeft += 1
                }
                // Bound the drain: once stopping, cancel whatever still runs after drainTimeout.
                group.addTask {
                    while !self.isStopping {
                        if Task.isCancelled { return false }
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                    try? await Task.sleep(for: .seconds(self.drainTimeout))
                    return false
                }
                while workersLeft > 0, let isWorker = await group.next() {
                    if isWorker { workersLeft -= 1 } else { group.cancelAll() }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            self.catalog.jobSignal?.notify()  // idle workers stop waiting now
        }
    }

    /// Claims and runs one job at a time until the runner stops.
    func workerLoop() async {
        let kinds = Array(handlers.keys)
        let (catalog, owner, lease, now) = (self.catalog, self.owner, self.lease, self.now)
        // Where the catalog wakes idle workers (PostgreSQL's NOTIFY), they look at the queue on
        // a wake-up, when the next job falls due, and otherwise only every `signalledPoll`
        // seconds (a safety net); elsewhere they poll every `idlePoll` seconds.
        let signal = catalog.jobSignal
        // The job claimed with the completion of the one before (`execute`), if any.
        var next: QueuedJob?
        while !isStopping && !Task.isCancelled {
            let seen = signal?.generation
            // SQLite calls block: they run on the I/O threads, never on the cooperative pool.
            let job: QueuedJob?
            if let claimed = next {
                job = claimed
                next = nil
            } else {
                do {
                    job = try await onIOThread { () throws(CatalogError) in
                        try catalog.claimJob(kinds: kinds, owner: owner, lease: lease, now: now())
                    }
                } catch {
                    // The catalog is unavailable (locked for long, disk gone): back off, never spin.
                    logger.error("cannot claim jobs: \(error)")
                    try? await Task.sleep(for: .seconds(min(5, idlePoll * 10)))
                    continue
                }
            }
            if let job {
                next = await execute(job, claimingNext: kinds)
                continue
            }
            let due = await onIOThread { (try? catalog.nextJobDue(kinds: kinds)) ?? nil }
            let poll = signal == nil ? idlePoll : Self.signalledPoll
            let wait = min(poll, max(0.005, due.map { $0.timeIntervalSince(now()) } ?? poll))
            if let signal, let seen {
                await signal.wait(after: seen, upTo: wait)
            } else {
                try? await Task.sleep(for: .seconds(wait))
            }
        }
        if let unstarted = next {
            // Claimed with the last completion as the runner began to stop, and not started:
            // back to the queue as it was (no attempt counted, due when it was due).
            do {
                try await onIOThread { () throws(CatalogError) in try catalog.releaseJob(unstarted.id, owner: owner, runAt: unstarted.nextRunAt) }
            } catch {
                logger.warning("job \(unstarted.id): claimed as the runner stopped, and not put back (its lease runs out instead): \(error)")
            }
        }
    }

    /// Runs one job and records its outcome. Done, it claims the worker's next job of `kinds` in
    /// the completion's transaction (unless the runner is stopping) and returns it: the worker
    /// runs it next without a claim of its own.
    func execute(_ job: QueuedJob, claimingNext kinds: [JobKind]) async -> QueuedJob? {
        guard let handler = handlers[job.kind] else { return nil }
        var log = logger
        log[metadataKey: "job"] = "\(job.id)"
        log[metadataKey: "kind"] = "\(job.kind.rawValue)"
        if let item = job.itemID { log[metadataKey: "item"] = "\(item)" }
        let (catalog, owner) = (self.catalog, self.owner)
        // Its account or notary refused the credentials: not run, no attempt counted.
        // (Looked at on an I/O thread only when the copy of the pauses is old or names the scope.)
        if let pauses, let scope = handler.pauseScope(of: job), !pauses.knownClear(scope),
           let p = await onIOThread({ pauses.confirmed(scope) }) {
            await hold(job, p, log: log)
            return nil
        }
        metrics.jobStarted(kind: job.kind.rawValue)
        defer { metrics.jobEnded(kind: job.kind.rawValue) }
        do {
            let outcome = try await Lease.keep(catalog, job: job.id, owner: owner, lease: lease, logger: log, now: now) { () async throws(JobError) in
                try await handler.run(job)
            }
            switch outcome {
            case .done(let transition):
                let claim = isStopping || Task.isCancelled ? nil : NextClaim(kinds: kinds, lease: lease, now: now())
                let next = try await onIOThread { () throws(CatalogError) -> QueuedJob? in
                    guard let claim else {
                        try catalog.completeJob(job.id, owner: owner, transition: transition)
                        return nil
                    }
                    return try catalog.completeJob(job.id, owner: owner, transition: transition, thenClaim: claim)
                }
                log.debug("job done")
                return next
            case .notYet(let until, let reason, let unless):
                try await onIOThread { () throws(CatalogError) in
                    try catalog.releaseJob(job.id, owner: owner, runAt: until) }
                if let unless, let itemID = job.itemID, await onIOThread({ unless() }) {
                    _ = await onIOThread { try? catalog.wakeQueuedJobs(itemID: itemID, kinds: [job.kind], now: self.now()) }
                    log.debug("job due again: what it waited for happened as it was put back")
                } else {
                    log.debug("job waits: \(reason)")
                }
            }
        } catch let error as JobError {
            if Task.isCancelled {
                _ = await onIOThread { try? catalog.releaseJob(job.id, owner: owner, runAt: self.now()) }
                return nil
            }
            if error.unreachable && error.retryable {
                await waitOut(job, error, log: log)
                return nil
            }
            if let pause = error.pause, let pauses {
                let p = await onIOThread { pauses.pause(pause.kind, pause.name, reason: error.message, fix: pause.fix) }
                await hold(job, p, log: log)
                return nil
            }
            let retryAt: Date? = error.retryable
                ? now().addingTimeInterval(max(error.retryAfter ?? 0, backoff.delay(afterAttempt: job.attempts)))
                : nil
            do {
                let after = try await onIOThread { () throws(CatalogError) in
                    try catalog.failJob(job.id, owner: owner, error: error.message, retryAt: retryAt, onGiveUp: error.onGiveUp)
                }
                if after.state == .failed {
                    metrics.jobFailed(kind: job.kind.rawValue)
                    log.error("job failed for good after \(after.attempts) attempt(s): \(error.message)")
                } else {
                    metrics.jobRetried(kind: job.kind.rawValue)
                    log.warning("job attempt \(after.attempts) failed, retrying at \(after.nextRunAt): \(error.message)")
                }
            } catch {
                log.error("cannot record job failure: \(error)")
            }
        } catch {
            log.error("cannot record job outcome: \(error)")
        }
        return nil
    }

    /// A service that cannot be reached: the job waits and is tried again without limit and
    /// without counting an attempt, its back-off growing with the outage (a quarter of its
    /// length so far, between `backoff.base` and `backoff.cap`), so a day's outage ends with
    /// every item done. Said once per job at warning level, when the outage begins for it.
    func waitOut(_ job: QueuedJob, _ error: JobError, log: Logger) async {
        let now = self.now()
        let since = Self.unreachableSince(job.lastError)
        let start = since ?? now
        let grown = min(backoff.cap, max(backoff.base, now.timeIntervalSince(start) / 4)) * Double.random(in: 0.75..<1.25)
        let delay = max(error.retryAfter ?? 0, grown)
        let note = error.message + Self.unreachableMark + Timestamp.string(start) + "]"
        let (catalog, owner) = (self.catalog, self.owner)
        do {
            try await onIOThread { () throws(CatalogError) in
                try catalog.holdJob(job.id, owner: owner, runAt: now.addingTimeInterval(delay), note: note)
            }
            metrics.jobRetried(kind: job.kind.rawValue)
            if since == nil {
                log.warning("\(note) (tried again without limit, the first time in \(Int(delay.rounded())) s)")
            } else {
                log.debug("still unreachable; next try in \(Int(delay.rounded())) s: \(error.message)")
            }
        } catch {
            log.error("cannot record job failure: \(error)")
        }
    }

    /// Ends the last error of a job waiting out an outage: the service's own message first (what
    /// `status` shows), then since when.
    static let unreachableMark = " [unreachable since "

    /// When the outage a job's last error records began (`waitOut`'s note), if it is one.
    static func unreachableSince(_ lastError: String?) -> Date? {
        guard let e = lastError, e.hasSuffix("]"), let mark = e.range(of: unreachableMark, options: .backwards) else { return nil }
        return Timestamp.parse(String(e[mark.upperBound...].dropLast()))
    }

    /// Puts a job of a paused account or notary back, not counted as an attempt, until the
    /// pause ends (which wakes it) or `Pauses.hold` passes.
    func hold(_ job: QueuedJob, _ p: CredentialPause, log: Logger) async {
        let (catalog, owner, at) = (self.catalog, self.owner, now().addingTimeInterval(Pauses.hold))
        do {
            try await onIOThread { () throws(CatalogError) in
                try catalog.holdJob(job.id, owner: owner, runAt: at, note: "waiting: \(p.kind.rawValue) \(p.name) is paused (credentials refused)")
            }
            log.debug("job waits: \(p.kind.rawValue) \(p.name) is paused")
        } catch {
            log.error("cannot hold the job of paused \(p.scope): \(error)")
        }
    }
}
