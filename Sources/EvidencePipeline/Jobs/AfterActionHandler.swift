import EvidenceBlocking
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceStore
import Foundation
import Glibc

/// The rule's `after` action on one source: `delete` it or `move:DIR` it, only once its
/// item reached the rule's final stage AND this source's own rule has its evidence (every one
/// of its notaries confirmed, and a verified copy of the original in its archive account), only
/// if the source is still the very file version that was ingested, and only after the stored
/// copy was re-read and matched.
///
/// The item's state is shared by every rule that saw its content: a file dropped under rule B
/// whose content was first taken under rule A is `done` as soon as A's work is. So the job
/// checks B's own stages in the catalog's proof and archive records, queues those B lacks
/// (B's notaries, B's archive), and waits for them. Action `keep` does only that.
public struct AfterActionHandler: JobHandler {
    public let kind = JobKind.afterAction
    let home: EvidenceHome
    let rules: LiveRules
    /// Called after every check and right before the source is deleted or moved: the moment a
    /// hostile writer of the drop folder would swap a folder for a link (tests use it for that).
    let beforeAct: @Sendable () -> Void

    public init(home: EvidenceHome, rules: LiveRules, beforeAct: @escaping @Sendable () -> Void = {}) {
        self.home = home
        self.rules = rules
        self.beforeAct = beforeAct
    }

    public func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard let itemID = job.itemID, case .afterAction(let ruleName, let action, let sourceRef?) = job.payload else {
            throw JobError("after-action job \(job.id) has no item or source", retryable: false)
        }
        let (path, sourceID) = (sourceRef.path, sourceRef.id)
        let home = self.home
        let found: (Item?, SourceSighting?)
        do {
            found = try await onIOThread { () throws(CatalogError) in
                (try home.catalog.item(id: itemID), try home.catalog.sources(itemID: itemID).first(where: { $0.id == sourceID }))
            }
        } catch {
            throw JobError(error.description, retryable: true)
        }
        guard case (let item?, let source?) = found else {
            throw JobError("item \(itemID) or source \(sourceID) is gone", retryable: false)
        }

        let plan = rules[ruleName].map(ItemLifecycle.init)
        guard let plan else {
            // The rule is gone from the config: wait for it (a config being edited), in the open.
            return .notYet(until: Date().addingTimeInterval(600), reason: "rule \(ruleName) is not configured; \(path) left in place")
        }
        guard item.state == plan.finalState else {
            // Not final yet (a job queued before after-actions were parked): park it now; the
            // transition to done wakes it.
            return .notYet(until: .distantFuture, reason: "item #\(itemID) is \(item.state.rawValue), parked until it is done")
        }

        // This rule's own evidence, from the catalog: what it lacks is queued, and the source waits.
        let lacking: [JobSpec]
        do {
            lacking = try await onIOThread { () throws(CatalogError) -> [JobSpec] in
                let lacking = plan.missingStages(item: item, proofs: try home.catalog.proofs(itemID: itemID),
                                                 archived: try home.catalog.archivedFiles(itemID: itemID))
                for spec in lacking { _ = try home.catalog.enqueue(spec, itemID: itemID, dedupeKey: spec.itemKey(itemID)) }
                return lacking
            }
        } catch {
            throw JobError(error.description, retryable: true)
        }
        if !lacking.isEmpty {
            let age = -job.createdAt.timeIntervalSinceNow
            let what = lacking.map { spec -> String in
                if case .notarize(_, let notary) = spec.payload { return "notary \(notary)" }
                return "archive to \(plan.rule.archive ?? "-")"
            }
            return .notYet(until: Date().addingTimeInterval(min(600, max(1, age / 10))),
                           reason: "rule \(plan.rule.name) still needs \(what.joined(separator: ", ")) for item #\(itemID); \(path) left in place")
        }
        if action == .keep {
            return .done(JobTransition(state: nil, event: .ruleStagesComplete, details: ["rule": plan.rule.name, "path": path]))
        }

        let dest: String? = if case .move(let dir) = action { destination(for: path, in: dir, rule: plan.rule) } else { nil }
        let objectPath = home.store.location(of: item.sha256)
        let (root, beforeAct) = (plan.rule.path, self.beforeAct)
        return try await onIOThread { () throws(JobError) -> JobOutcome in
            try Self.perform(action: action, path: path, root: root, dest: dest, source: source, item: item, objectPath: objectPath,
                             home: home, beforeAct: beforeAct).get()
        }
    }

    /// Keeps sub-folders below the watched root: `<root>/a/b.mp4` → `<dir>/a/b.mp4`.
    func destination(for path: String, in dir: String, rule: WatchRule) -> String {
        let root = rule.path.hasSuffix("/") ? rule.path : rule.path + "/"
        let rel = path.hasPrefix(root) ? String(path.dropFirst(root.count)) : (path as NSString).lastPathComponent
        return (dir as NSString).appendingPathComponent(rel)
    }

    /// Everything is done through the source's folder opened beneath the rule's root without
    /// following links (`BeneathRoot`): a folder swapped for a link after the checks cannot
    /// redirect the deletion or the move outside the watched folder.
    static func perform(action: SourceAction, path: String, root: String, dest: String?, source: SourceSighting, item: Item,
                        objectPath: String, home: EvidenceHome, beforeAct: () -> Void = {}) -> Result<JobOutcome, JobError> {
        let folder: BeneathRoot
        do { folder = try BeneathRoot(path: path, root: root) } catch {
            if case .missing = error {
                return gone(action: action, path: path, dest: dest, source: source, item: item, home: home)
            }
            return .success(.done(JobTransition(state: nil, event: .afterActionSkipped, reason: "\(error)", details: ["path": path])))
        }
        let found: SourceStat
        switch folder.stat() {
        case .success(let s): found = s
        case .failure(.missing): return gone(action: action, path: path, dest: dest, source: source, item: item, home: home)
        case .failure(let e): return .failure(JobError("\(e)", retryable: true))
        }
        let now = found
        guard now.device == source.device, now.inode == source.inode, now.size == source.size,
              now.mtimeNanos == source.mtimeNanos else {
            return .success(.done(JobTransition(state: nil, event: .afterActionSkipped,
                                                reason: "source changed since ingest; left in place",
                                                details: ["path": path, "size": "\(source.size) → \(now.size)",
                                                          "inode": "\(source.inode) → \(now.inode)"])))
        }
        // The stored copy must still be whole before the original goes.
        switch Result(catching: { () throws(StoreError) in try home.store.hashObject(item.sha256) }) {
        case .success(let r) where r.digest == item.sha256: break
        case .success(let r):
            return .failure(JobError("\(objectPath): store object hashes to \(r.digest.hex); source \(path) left in place",
                                     retryable: false))
        case .failure(let e):
            return .failure(JobError("\(e.description); source \(path) left in place", retryable: true))
        }
        switch action {
        case .delete:
            // The intent first, in its own transaction: a crash right after the unlink must not
            // leave the custody log saying the file merely went missing.
            do {
                try home.catalog.appendEvent(itemID: item.id, kind: .sourceDeleting,
                                             details: ["path": path, "sha256": item.sha256.hex, "source_id": String(source.id)])
            } catch {
                return .failure(JobError("\(error.description); source \(path) left in place", retryable: true))
            }
            beforeAct()
            if let failure = folder.unlink() {
                return .failure(JobError("delete failed: \(failure)", retryable: true))
            }
            return .success(.done(JobTransition(state: nil, event: .sourceDeleted, details: ["path": path, "sha256": item.sha256.hex])))
        case .move:
            guard let dest else { return .failure(JobError("move without a destination", retryable: false)) }
            beforeAct()
            switch move(folder, to: dest, sha256: item.sha256) {
            case .success(let final):
                return .success(.done(JobTransition(state: nil, event: .sourceMoved, details: ["from": path, "to": final])))
            case .failure(let e):
                return .failure(e)
            }
        case .keep:
            return .failure(JobError("a keep job has nothing to do with its source", retryable: false))
        }
    }

    /// The source is not there (any more): moved or deleted by an earlier run that stopped
    /// before recording it, or gone.
    static func gone(action: SourceAction, path: String, dest: String?, source: SourceSighting, item: Item,
                     home: EvidenceHome) -> Result<JobOutcome, JobError> {
        if let dest, let d = try? SourceStat.lstat(dest).get(), d.inode == source.inode, d.device == source.device {
            return .success(.done(JobTransition(state: nil, event: .sourceMoved, details: ["from": path, "to": dest])))
        }
        // We unlinked it and stopped before recording that (a crash): the intent says so.
        if action == .delete, let events = try? home.catalog.events(itemID: item.id),
           events.contains(where: { $0.is(.sourceDeleting) && $0.details.contains("\"source_id\":\"\(source.id)\"") }) {
            return .success(.done(JobTransition(state: nil, event: .sourceDeleted,
                                                details: ["path": path, "sha256": item.sha256.hex, "recorded": "after a restart"])))
        }
        return .success(.done(JobTransition(state: nil, event: .afterActionSkipped,
                                            reason: "source is already gone", details: ["path": path])))
    }

    /// rename(2) when on the same filesystem; otherwise copy to a temp file in the destination
    /// folder, fsync, rename, and only then unlink the source. An existing different file at the
    /// destination is never overwritten: the new one gets the hash prefix in its name. The
    /// source is reached only through its folder's descriptor (`BeneathRoot`).
    static func move(_ source: BeneathRoot, to dest: String, sha256: SHA256Digest) -> Result<String, JobError> {
        let path = source.path
        let dir = (dest as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            return .failure(JobError("\(dir): cannot create move destination: \(error.localizedDescription)", retryable: true))
        }
        var target = dest
        if access(target, F_OK) == 0 {
            if (try? FileHasher.hash(path: target).digest) == sha256 {
                // Same content already there (an earlier move that crashed before unlinking).
                if let failure = source.unlink() { return .failure(JobError("unlink failed: \(failure)", retryable: true)) }
                return .success(target)
            }
            let ext = (dest as NSString).pathExtension
            let stem = (dest as NSString).deletingPathExtension
            target = stem + "." + sha256.short + (ext.isEmpty ? "" : "." + ext)
        }
        switch source.rename(to: target) {
        case nil:
            fsyncParent(target)
            return .success(target)
        case .io(_, EXDEV)?:
            break
        case let failure?:
            return .failure(JobError("\(path) → \(target): move failed: \(failure)", retryable: true))
        }
        let tmp = dir + "/.evidence-move-\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let input: Int32
        switch source.openForReading() {
        case .success(let fd): input = fd
        case .failure(let e): return .failure(JobError("\(path): cannot read it to copy: \(e)", retryable: true))
        }
        defer { close(input) }
        let output = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else {
            return .failure(JobError("\(tmp): cannot create: \(String(cString: strerror(errno)))", retryable: true))
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var copied = true
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 || buffer.withUnsafeBytes({ write(output, $0.baseAddress, n) }) != n { copied = false; break }
        }
        if fsync(output) != 0 { copied = false }
        close(output)
        guard copied, (try? FileHasher.hash(path: tmp).digest) == sha256 else {
            unlink(tmp)
            return .failure(JobError("\(path): copy to \(dir) did not verify; source left in place", retryable: true))
        }
        if Glibc.rename(tmp, target) != 0 {
            unlink(tmp)
            return .failure(JobError("\(target): rename failed: \(String(cString: strerror(errno)))", retryable: true))
        }
        fsyncParent(target)
        _ = source.unlink()
        return .success(target)
    }

    static func fsyncParent(_ path: String) {
        let fd = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY)
        if fd >= 0 { fsync(fd); close(fd) }
    }
}

