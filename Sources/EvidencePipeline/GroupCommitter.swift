import Foundation
import Synchronization

/// Group commit: files staged while a batch is being made durable wait and go together in the
/// next one, so a burst pays one folder fsync and one catalog commit per batch instead of per
/// file, and a lone file is committed at once (no timer, no added latency).
///
/// Batches are committed one at a time on a thread of their own, started when work arrives and
/// ended when the queue is empty. `submit` never blocks: callers bound what they leave waiting.
final class GroupCommitter: Sendable {
    /// Files per batch at most: enough to amortize the fsyncs, few enough that every staged
    /// file's descriptor stays open without nearing the descriptor limit.
    static let maxBatch = 128

    struct Entry: Sendable {
        let staged: Ingestor.Staged
        let done: @Sendable (Ingestor.Outcome) -> Void
    }

    private struct State {
        var queue: [Entry] = []
        var running = false
        var batchCount = 0
    }
    private let state = Mutex(State())

    /// Batches committed so far (a burst of n files takes far fewer than n).
    var batches: Int { state.withLock { $0.batchCount } }

    /// Queues `entry`; `commit` is run on the committing thread for each batch (the same
    /// function for every entry of one Ingestor).
    func submit(_ entry: Entry, commit: @escaping @Sendable ([Entry]) -> Void) {
        let start = state.withLock { s in
            s.queue.append(entry)
            defer { s.running = true }
            return !s.running
        }
        guard start else { return }
        let thread = Thread { [self] in drain(commit) }
        thread.name = "evidence-commit"
        thread.start()
    }

    private func drain(_ commit: ([Entry]) -> Void) {
        while true {
            // The queue found empty and `running` cleared in one step: a `submit` after it starts a new thread.
            let batch = state.withLock { s -> [Entry] in
                let batch = Array(s.queue.prefix(Self.maxBatch))
                s.queue.removeFirst(batch.count)
                if batch.isEmpty { s.running = false } else { s.batchCount += 1 }
                return batch
            }
            if batch.isEmpty { return }
            commit(batch)
        }
    }
}
