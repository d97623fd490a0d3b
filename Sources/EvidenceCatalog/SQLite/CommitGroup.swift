import GRDB
import Synchronization

/// Group commit of the catalog's writes. Writers queue here, then take the database's single
/// write connection in turn; whoever holds it commits every write queued so far, its own among
/// them, in one transaction, and each writer finds its outcome settled when its turn comes. A
/// lone writer commits at once (no timer, no added latency); under load, four job workers and
/// the ingest share one WAL sync and one write of the pages they all touch (the job table, the
/// custody log's tail) instead of paying each.
final class CommitGroup: Sendable {
    /// Writes per transaction at most: a long batch holds the write lock, and the readers' view,
    /// back for longer.
    static let maxBatch = 32

    /// What a committed (or failed) write returned, and whether its transaction appended custody
    /// events. Handed from the thread that committed it to its writer, which reads it only after
    /// that thread has left the write connection (whose queue orders the two).
    struct Outcome: @unchecked Sendable {
        let result: Result<Any, any Error>
        let appended: Bool
    }

    /// One write waiting to be committed, and then its outcome.
    final class Pending: Sendable {
        let durable: Bool
        let body: @Sendable (Database) throws -> Any
        private let outcome = Mutex<Outcome?>(nil)

        init(durable: Bool, body: @escaping @Sendable (Database) throws -> Any) {
            self.durable = durable
            self.body = body
        }

        /// Its outcome, once the transaction that held it ended.
        var settled: Outcome? { outcome.withLock { $0 } }
        var isSettled: Bool { settled != nil }
        func settle(_ result: Result<Any, any Error>, appended: Bool) {
            outcome.withLock { $0 = Outcome(result: result, appended: appended) }
        }
    }

    private let queue = Mutex<[Pending]>([])

    func add(_ pending: Pending) { queue.withLock { $0.append(pending) } }

    /// Writes queued and not yet taken (tests wait on it).
    var waiting: Int { queue.withLock { $0.count } }

    /// The oldest queued writes, at most `maxBatch`, taken off the queue.
    func take() -> [Pending] {
        queue.withLock { q in
            let batch = Array(q.prefix(Self.maxBatch))
            q.removeFirst(batch.count)
            return batch
        }
    }
}
