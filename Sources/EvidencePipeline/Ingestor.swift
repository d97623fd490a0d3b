import EvidenceCatalog
import EvidenceCore
import EvidenceMedia
import EvidenceStore
import Foundation

/// Takes files into the home in two steps: `stage` (one read pass, hash + copy into `tmp/`,
/// media probe of that copy) and `commit`, which makes whole batches durable at once (group
/// commit: `ObjectStore.commit`, then one catalog transaction) — or a clear refusal.
/// Group commit is the local store's: with another store (S3) `stage` stores the file as that
/// store does (durable when it returns), and only the catalog records are batched.
///
/// A file is acknowledged (its outcome handed back, its custody event and jobs visible) only
/// once its object and its catalog record are durable.
public struct Ingestor: Sendable {
    public let home: EvidenceHome
    /// Who is acting, for the custody log ("cli:root", "run:host:pid").
    public let actor: String
    /// Reads the stored copy's media facts: in this process by default, in a child process
    /// (`ChildMediaProbe`) for `evidence run` and `evidence ingest`.
    let prober: MediaProber
    let committer: GroupCommitter
    /// The extra digests of a file ingested without a rule (`evidence ingest --digest`); a rule's
    /// own `digests` apply to its files.
    public var digests: [DigestAlgorithm] = []

    /// Staged files a caller should let wait for their commit at most (each holds a temp file
    /// and its descriptor); more is no faster, as a batch takes at most `GroupCommitter.maxBatch`.
    public static let maxPending = 2 * GroupCommitter.maxBatch

    public init(home: EvidenceHome, actor: String, prober: @escaping MediaProber = { MediaProbe.probe(path: $0, name: $1) }) {
        self.home = home
        self.actor = actor
        self.prober = prober
        self.committer = GroupCommitter()
    }

    public enum Outcome: Sendable {
        /// Stored (or found already stored) and recorded.
        case ingested(IngestOutcome)
        /// Not taken: not a regular file, unreadable, vanished, … Recorded in quarantine when `quarantined`.
        case rejected(reason: String, quarantined: Bool)
        /// The file was still changing: nothing stored, try again later.
        case retryLater(reason: String)
        /// The home itself failed (disk full, catalog error): not the file's fault, nothing recorded.
        case failed(reason: String)

        public var isSuccess: Bool { if case .ingested = self { return true } else { return false } }
    }

    /// A file read into the store's `tmp/` and probed, waiting for its batch.
    public struct Staged: Sendable {
        enum Content: Sendable {
            /// In the local store's `tmp/`, not durable before `ObjectStore.commit`.
            case local(StagedObject)
            /// Already stored, durably, by a store without group commit.
            case stored(ObjectStore.IngestResult)
        }
        let content: Content
        public let path: String
        let rule: String?
        let lifecycle: ItemLifecycle?
        let media: MediaInfo?
        /// The extra digests (`md5`, `sha1`, `sha512` → hex) the rule (or the caller) asked for.
        let digests: [String: String]
        var digest: SHA256Digest {
            switch content { case .local(let o): return o.digest; case .stored(let r): return r.digest }
        }
    }

    public enum Staging: Sendable {
        /// Ready for `commit`.
        case staged(Staged)
        /// Nothing to commit: refused, changing, or the home failed.
        case finished(Outcome)
    }

    /// Ingests `path` and waits until it is durable and recorded. Never throws: every outcome is a
    /// value with a one-line reason that names the path.
    /// - Parameter lifecycle: the rule's lifecycle; its jobs are queued in the same transaction as the
    ///   catalog record (manual ingests pass none and queue nothing). Under a rule, the file is read
    ///   through its folder opened beneath the rule's root (`lifecycle.rule.path`) without following links.
    public func ingest(path: String, rule: String? = nil, lifecycle: ItemLifecycle? = nil, followSymlinks: Bool = false,
                       progress: ((Int64) -> Void)? = nil) -> Outcome {
        switch stage(path: path, rule: rule, lifecycle: lifecycle, followSymlinks: followSymlinks, progress: progress) {
        case .finished(let outcome):
            return outcome
        case .staged(let staged):
            final class Box: @unchecked Sendable { var outcome: Outcome? }   // ownership hand-off: written before `done` is signalled, read after
            let box = Box()
            let done = DispatchSemaphore(value: 0)
            commit(staged) { box.outcome = $0; done.signal() }
            done.wait()
            return box.outcome!
        }
    }

    /// Reads `path` once into the store's `tmp/` (hash + copy) and probes that copy. Blocks on I/O.
    public func stage(path: String, rule: String? = nil, lifecycle: ItemLifecycle? = nil, followSymlinks: Bool = false,
                      progress: ((Int64) -> Void)? = nil) -> Staging {
        let content: Staged.Content
        let wanted = lifecycle?.rule.digests ?? digests
        do throws(StoreError) {
            if let local = home.localStore {
                content = .local(try local.stage(path: path, followSymlinks: followSymlinks, beneath: lifecycle?.rule.path,
                                                 digests: wanted, progress: progress))
            } else {
                content = .stored(try home.store.ingest(path: path, followSymlinks: followSymlinks, beneath: lifecycle?.rule.path,
                                                        progress: progress))
            }
        } catch {
            switch error {
            case .changedDuringRead:
                return .finished(.retryLater(reason: error.description))
            case .diskFull, .insufficientSpace, .objectCorrupt, .ioError, .remote:
                return .finished(.failed(reason: error.description))
            case .notFound:
                return .finished(.rejected(reason: error.description, quarantined: false))
            default:
                return .finished(quarantine(path: path, rule: rule, reason: error.description))
            }
        }
        // Probe exactly the bytes that were hashed: the staged copy (nobody else writes it), or,
        // for a remote store, the local copy of what was stored.
        let name = (path as NSString).lastPathComponent
        let media: MediaInfo?
        var extra: [String: String] = [:]
        switch content {
        case .local(let object):
            media = prober(object.stagedPath, name)
            extra = object.digests
        case .stored(let result):
            // A store that is not files under the home (S3) stores as it reads; the extra digests
            // are read from the same local copy the probe reads, verified against the SHA-256.
            media = (try? home.store.withLocalCopy(of: result.digest) { local -> MediaInfo? in
                if !wanted.isEmpty, let read = try? FileHasher.hash(path: local, digests: wanted), read.result.digest == result.digest {
                    extra = read.digests
                }
                return prober(local, name)
            }) ?? nil
            if !wanted.isEmpty && extra.isEmpty {
                return .finished(.failed(reason: "\(path): stored as \(result.digest.hex), but its \(wanted.map(\.label).joined(separator: ", ")) "
                                         + "could not be computed from the store's copy"))
            }
        }
        return .staged(Staged(content: content, path: path, rule: rule, lifecycle: lifecycle, media: media, digests: extra))
    }

    /// How a file that changed while it was read (its writer still at it) is read again: after
    /// each of `delays` in turn, and then after `quiet` seconds more (0: at once), doubled at each
    /// re-read up to `maxQuiet`. The watcher (`quiet` = the rule's settle, `maxQuiet` its
    /// `settle_max`) and `evidence ingest` (`--retries`) both read through `stage(…, retrying:)`.
    public struct Reread: Sendable {
        public var delays: [Double]
        public var quiet: Double
        public var maxQuiet: Double

        public init(delays: [Double], quiet: Double, maxQuiet: Double? = nil) {
            self.delays = delays
            self.quiet = quiet
            self.maxQuiet = max(quiet, maxQuiet ?? quiet)
        }

        /// The quiet wait before re-read number `n` (from 1): `quiet` doubled `n` times, at most `maxQuiet`.
        public func quiet(before n: Int) -> Double {
            var q = quiet
            for _ in 0..<max(0, n) where q < maxQuiet { q = min(q * 2, maxQuiet) }
            return q
        }
    }

    /// `stage`, off the cooperative pool, read again while the file changes under the read
    /// (`Reread`). Answers the last staging and how many re-reads it took. `slots` bounds the
    /// reads at once: a place is held while reading, never while waiting. A file gone while
    /// waiting ends it as not found.
    public func stage(path: String, rule: String? = nil, lifecycle: ItemLifecycle? = nil, followSymlinks: Bool = false,
                      retrying reread: Reread, slots: AsyncGate? = nil,
                      progress: (@Sendable (Int64) -> Void)? = nil) async -> (staging: Staging, rereads: Int) {
        var rereads = 0
        while true {
            await slots?.acquire()
            let staging = await onIOThread { [self] in
                stage(path: path, rule: rule, lifecycle: lifecycle, followSymlinks: followSymlinks, progress: progress)
            }
            slots?.release()
            guard case .finished(.retryLater) = staging, rereads < reread.delays.count, !Task.isCancelled else {
                return (staging, rereads)
            }
            try? await Task.sleep(for: .seconds(reread.delays[rereads]))
            rereads += 1
            guard reread.quiet > 0 else { continue }
            // The writer was still busy: give it `quiet` more before the next read. A file gone
            // meanwhile is answered as one gone before its first read.
            try? await Task.sleep(for: .seconds(reread.quiet(before: rereads)))
            var st = stat()
            guard lstat(path, &st) == 0 else {
                return (.finished(.rejected(reason: "\(path): no longer there (it was still being written)", quarantined: false)), rereads)
            }
        }
    }

    /// Queues a staged file for the next batch and returns at once; `done` is called (on the
    /// committing thread: keep it short) once the batch is durable and recorded, or failed.
    /// Callers bound how many they leave waiting (`maxPending`).
    public func commit(_ staged: Staged, then done: @escaping @Sendable (Outcome) -> Void) {
        let home = self.home, actor = self.actor
        committer.submit(GroupCommitter.Entry(staged: staged, done: done)) { batch in
            Self.commitBatch(batch, home: home, actor: actor)
        }
    }

    /// `commit(_:then:)` for async callers.
    public func commit(_ staged: Staged) async -> Outcome {
        await withCheckedContinuation { cont in commit(staged) { cont.resume(returning: $0) } }
    }

    /// One batch: the objects made durable together, then every record in one transaction, then
    /// each caller told.
    static func commitBatch(_ batch: [GroupCommitter.Entry], home: EvidenceHome, actor: String) {
        var stored = [Result<ObjectStore.IngestResult, StoreError>?](repeating: nil, count: batch.count)
        var local: [(index: Int, object: StagedObject)] = []
        for (i, entry) in batch.enumerated() {
            switch entry.staged.content {
            case .stored(let r): stored[i] = .success(r)
            case .local(let object): local.append((i, object))
            }
        }
        if !local.isEmpty, let store = home.localStore {
            for (l, result) in zip(local, store.commit(local.map(\.object))) { stored[l.index] = result }
        }
        var outcomes = [Outcome?](repeating: nil, count: batch.count)
        var records: [IngestRecord] = []
        var recorded: [Int] = []
        for (i, result) in stored.enumerated() {
            let s = batch[i].staged
            switch result ?? .failure(.ioError(path: s.path, operation: "commit (the store has no group commit)", errno: EINVAL)) {
            case .success(let r):
                let l = s.lifecycle
                records.append(IngestRecord(sha256: r.digest, size: r.size, path: s.path, rule: s.rule,
                                            device: r.source.device, inode: r.source.inode,
                                            mtimeNanos: r.source.mtimeNanos, media: s.media,
                                            newObject: r.newObject, actor: actor,
                                            jobsForNewItem: l?.jobsForNewItem ?? [], jobsForNewSource: l?.jobsForNewSource ?? [],
                                            jobsForKnownItem: l?.jobsForKnownItem ?? [], supersedes: l?.supersedes ?? .none,
                                            digests: s.digests))
                recorded.append(i)
            case .failure(let error):
                outcomes[i] = .failed(reason: error.description)
            }
        }
        let notRecorded = { (i: Int, error: CatalogError) -> Outcome in
            .failed(reason: "\(batch[i].staged.path): stored as \(records[recorded.firstIndex(of: i)!].sha256.hex) but not recorded: \(error.description)")
        }
        do {
            for (i, result) in zip(recorded, try home.catalog.recordIngests(records)) {
                switch result {
                case .success(let o): outcomes[i] = .ingested(o)
                case .failure(let error): outcomes[i] = notRecorded(i, error)
                }
            }
        } catch {
            for i in recorded { outcomes[i] = notRecorded(i, error) }
        }
        for (entry, outcome) in zip(batch, outcomes) { entry.done(outcome!) }
    }

    /// Records a refusal in the catalog's quarantine list (the file itself is left in place).
    public func quarantine(path: String, rule: String?, reason: String) -> Outcome {
        do {
            _ = try home.catalog.recordQuarantine(path: path, rule: rule, reason: reason)
            return .rejected(reason: reason, quarantined: true)
        } catch {
            return .rejected(reason: "\(reason) (and could not be recorded: \(error.description))", quarantined: false)
        }
    }
}
