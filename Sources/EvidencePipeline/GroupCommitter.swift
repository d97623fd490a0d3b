import Foundation

/// Group commit: files staged while a batch is being made durable wait and go together in the
/// next one, so a burst pays one folder fsync and one catalog commit per batch instead of per
/// file, and a lone file is committed at once (no timer, no added latency).
///
/// Batches are committed one at a time on a thread of their own, started when work arrives and
/// ended when the queue is empty. `submit` never blocks: callers bound what they leave waiting.
final class GroupCommitter: @unchecked Sendable {   // state guarded by `lock`
    /// Files per batch at most: enough to amortize the fsyncs, few enough that every staged
    /// file's descriptor stays open without nearing the descriptor limit.
    static let maxBatch = 128

    struct Entry: Sendable {
        let staged: Ingestor.Staged
        let done: @Sendable (Ingestor.Outcome) -> Void
    }

    private let lock = NSLock()
    private var queue: [Entry] = []
    private var running = false
    private var batchCount = 0

    /// Batches committed so far (a burst of n files takes far fewer than n).
    var batches: Int { lock.lock(); defer { lock.unlock() }; return batchCount }

    /// Queues `entry`; `commit` is run on the committing thread for each batch (the same
    /// function for every entry of one Ingestor).
    func submit(_ entry: Entry, commit: @escaping @Sendable ([Entry]) -> Void) {
        lock.lock()
        queue.append(entry)
        let start = !running
        running = true
        lock.unlock()
        guard start else { return }
        let thread = Thread { [self] in drain(commit) }
        thread.name = "evidence-commit"
        thread.start()
    }

    private func drain(_ commit: ([Entry]) -> Void) {
        lock.lock()
        while !queue.isEmpty {
            let batch = Array(queue.prefix(Self.maxBatch))
            queue.removeFirst(batch.count)
            batchCount += 1
            lock.unlock()
            commit(batch)
            lock.lock()
        }
        running = false
        lock.unlock()
    }
}
