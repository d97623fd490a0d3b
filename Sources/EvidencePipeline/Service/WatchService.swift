import EvidenceBlocking
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceWatch
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Watches the rules' folders and ingests each settled file: up to `workers` read (hash + copy)
/// at once, and those read wait together for their batch's commit (`Ingestor.commit`), so a
/// burst is made durable in a few group commits rather than one per file.
///
/// The folders themselves are the queue: a file detected but not yet recorded when the
/// process dies is found again by the start-up scan, and a file already recorded at that
/// exact version is skipped, so every file is taken exactly once.
public final class WatchService: Service, Sendable {
    /// The watcher and the rules it watches; replaced together by a reload (`replace`).
    private let current: Mutex<(watcher: Watcher, rules: [String: WatchRule])>
    var watcher: Watcher { current.withLock { $0.watcher } }
    var rules: [String: WatchRule] { current.withLock { $0.rules } }
    let ingestor: Ingestor
    let workers: Int
    let logger: Logger
    let retryDelays: [Double]
    let metrics: PipelineMetrics
    private let counters = Mutex(Counters())
    /// Rules whose folders had their initial scan (watches set up, existing files queued).
    private let scanned = Mutex(Set<String>())
    /// Files being read at once (`workers`); files read and waiting for their commit are not counted.
    private let reading: AsyncGate

    public struct Counters: Sendable, Equatable {
        public var ingested = 0
        public var duplicates = 0
        public var skipped = 0
        public var rejected = 0
        public var failed = 0
    }

    public var stats: Counters { counters.withLock { $0 } }

    /// Whether every rule's folder that exists is watched: its initial scan is done (for
    /// `/readyz`). A folder that does not exist (yet) is waited for, logged, and shown by
    /// `doctor` and `rules check`; it does not make the service unready.
    public var isWatching: Bool {
        let present = rules.values.filter { FileManager.default.fileExists(atPath: $0.path) }.map(\.name)
        return scanned.withLock { $0.isSuperset(of: present) }
    }

    public init(watcher: Watcher, rules: [WatchRule], ingestor: Ingestor, workers: Int, logger: Logger,
                retryDelays: [Double] = [1, 2, 5, 10, 30, 60, 120, 300], metrics: PipelineMetrics = .disabled) {
        self.current = Mutex((watcher, Dictionary(rules.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })))
        self.ingestor = ingestor
        self.workers = max(1, workers)
        self.logger = logger
        self.retryDelays = retryDelays
        self.metrics = metrics
        self.reading = AsyncGate(self.workers)
        metrics.registerWatcher()
    }

    /// Watches `rules` with `watcher` from now on (SIGHUP reloaded the rules): the old watcher
    /// stops, files being read finish, and the new one's initial scan finds every file again
    /// (those already taken are recognised and skipped).
    public func replace(watcher: Watcher, rules: [WatchRule]) {
        let old = current.withLock { state in
            defer { state = (watcher, Dictionary(rules.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })) }
            return state.watcher
        }
        old.stop()
    }

    /// The rules changed in what the ingest reads (their stages, labels, `empty`), not in what
    /// is watched: the watcher goes on.
    public func update(rules: [WatchRule]) {
        current.withLock { $0.rules = Dictionary(rules.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a }) }
    }

    public func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
          // Reading is limited by `reading`; this bounds the files read and waiting for a commit.
          let maxInFlight = workers + Ingestor.maxPending
          var inFlight = 0
          while true {
            let watching = self.watcher
            let events = watching.events()
            for try await event in events.cancelOnGracefulShutdown() {
                switch event {
                case .settled(let file):
                    if inFlight >= maxInFlight {
                        try await group.next()
                        inFlight -= 1
                    }
                    inFlight += 1
                    group.addTask { await self.take(file) }
                case .rejected(let rule, let path, let reason):
                    counters.withLock { $0.rejected += 1 }
                    metrics.fileQuarantined()
                    logger.warning("quarantined: \(reason)", metadata: ["rule": "\(rule)", "path": "\(path)"])
                    let ingestor = self.ingestor
                    group.addTask {
                        _ = await onIOThread {
                            ingestor.quarantine(path: path, rule: rule, reason: reason.hasPrefix(path) ? reason : "\(path): \(reason)")
                        }
                    }
                case .rescanned(let rule, let cause):
                    if cause == .initialScan { scanned.withLock { _ = $0.insert(rule) } }
                    logger.notice("rescanned \(rule): \(cause)")
                }
            }
            // The stream ended: a reload replaced the watcher (watch the new rules), or the
            // service is stopping.
            guard self.watcher !== watching, !Task.isCancelled, !Task.isShuttingDownGracefully else { break }
            logger.notice("watching the reloaded rules", metadata: ["rules": "\(rules.keys.sorted().joined(separator: ","))"])
          }
          // Stopping: in-flight ingests finish (each is one file's read + fsync).
          try await group.waitForAll()
        }
    }

    /// Forces a full rescan (SIGUSR1, or an operator after fixing a problem).
    public func rescan() { watcher.injectOverflow() }

    /// One settled file, from the look-up of its source to its commit. Its async frame lives as
    /// long as the file waits (for a reading slot, for its batch's commit), and a burst keeps
    /// `workers + Ingestor.maxPending` of them: what is not awaited (the rule's checks, the
    /// log lines of each outcome) is in synchronous helpers, whose locals stay on the thread's
    /// stack. Written inline, they made this frame 15 KB, 4 MB for a burst of 300.
    func take(_ file: SettledFile) async {
        let catalog = ingestor.home.catalog
        // Catalog calls block on SQLite: keep them off the cooperative threads too.
        let known = await onIOThread { Self.isKnown(file, in: catalog) }
        guard let admitted = admit(file, known: known) else { return }
        var attempt = 0
        while true {
            let (staging, rereads) = await ingestor.stage(path: file.path, rule: file.rule, lifecycle: admitted.lifecycle,
                                                          retrying: admitted.reread, slots: reading)
            let outcome: Ingestor.Outcome
            switch staging {
            case .finished(let o): outcome = o
            case .staged(let staged): outcome = await ingestor.commit(staged)
            }
            guard let delay = report(outcome, file: file, rereads: rereads, attempt: attempt) else { return }
            try? await Task.sleep(for: .seconds(delay))
            attempt += 1
        }
    }

    /// What a file taken is ingested with, from its rule.
    struct Admitted {
        let lifecycle: ItemLifecycle?
        /// A file still being written is read again by the ingestor (after each delay, once quiet
        /// for the rule's settle time, doubled at each re-read up to settle_max); a failure of
        /// the home itself is tried again by `take`.
        let reread: Ingestor.Reread
    }

    private static func isKnown(_ file: SettledFile, in catalog: any Catalog) -> Bool {
        let id = file.identity
        return (try? catalog.itemForSource(path: file.path, device: id.device, inode: id.inode,
                                           size: id.size, mtimeNanos: id.mtimeNanos)) != nil
    }

    /// nil when the file is not taken (already ingested, or empty under `empty = "skip"`), said in the log.
    @inline(never)   // see `take`
    private func admit(_ file: SettledFile, known: Bool) -> Admitted? {
        if known {
            counters.withLock { $0.skipped += 1 }
            logger.debug("already ingested", metadata: ["path": "\(file.path)"])
            return nil
        }
        let rule = rules[file.rule]
        if file.identity.size == 0, rule?.empty == .skip {
            counters.withLock { $0.skipped += 1 }
            logger.notice("empty file not taken (the rule says empty = \"skip\")", metadata: ["path": "\(file.path)", "rule": "\(file.rule)"])
            return nil
        }
        return Admitted(lifecycle: rule.map(ItemLifecycle.init),
                        reread: Ingestor.Reread(delays: retryDelays, quiet: max(0.2, rule?.settle ?? 1), maxQuiet: rule?.settleMax))
    }

    /// Counts and logs an outcome; returns the delay before the next attempt when the home
    /// failed and attempts are left, nil when the file is finished with (for now).
    @inline(never)   // see `take`
    private func report(_ outcome: Ingestor.Outcome, file: SettledFile, rereads: Int, attempt: Int) -> Double? {
        switch outcome {
        case .ingested(let o):
            counters.withLock { if case .created = o { $0.ingested += 1 } else { $0.duplicates += 1 } }
            metrics.fileIngested()
            var metadata: Logger.Metadata = ["path": "\(file.path)", "rule": "\(file.rule)",
                                             "item": "\(o.item.id)", "sha256": "\(o.item.sha256.hex)"]
            if o.item.isEmpty {
                // Taken (it is what the device wrote), and said at warning level: a camera
                // that writes nothing usually has a fault worth a look.
                metadata["empty"] = "0 bytes: flagged empty"
                logger.warning("\(o.label)", metadata: metadata)
            } else {
                logger.info("\(o.label)", metadata: metadata)
            }
            return nil
        case .rejected(let reason, _):
            counters.withLock { $0.rejected += 1 }
            metrics.fileQuarantined()
            logger.warning("quarantined: \(reason)", metadata: ["rule": "\(file.rule)"])
            return nil
        case .retryLater(let reason):
            counters.withLock { $0.failed += 1 }
            logger.error("giving up for now after \(rereads) re-reads (restart or SIGUSR1 rescans): \(reason)")
            return nil
        case .failed(let reason):
            guard attempt < retryDelays.count, !Task.isCancelled else {
                counters.withLock { $0.failed += 1 }
                logger.error("giving up for now (restart or SIGUSR1 rescans): \(reason)")
                return nil
            }
            logger.warning("will retry in \(retryDelays[attempt])s: \(reason)")
            return retryDelays[attempt]
        }
    }
}
