// Re-exported: the pipeline's files and its clients (portal, metrics) had `onIOThread` from
// here before it moved to its own module, and still find it without an import of their own.
@_exported import EvidenceBlocking
import Foundation
import Synchronization

/// Catalog or store work for a job, off the cooperative pool; a failure is a retryable
/// `JobError` carrying the error's own message (it names the file or the database).
func blockingJobWork<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws(JobError) -> T {
    do { return try await onIOThread(work) } catch { throw JobError("\(error)", retryable: true) }
}

/// At most `limit` holders at once, for async code: waiting suspends the task, never a thread.
public final class AsyncGate: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    public init(_ limit: Int) { state = Mutex(State(free: max(1, limit))) }

    public func acquire() async {
        await withCheckedContinuation { (cont: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.free > 0 { s.free -= 1; return true }
                s.waiters.append(cont)
                return false
            }
            if now { cont.resume() }
        }
    }

    /// Hands the place to the longest waiter, if any.
    public func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty { s.free += 1; return nil }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}
