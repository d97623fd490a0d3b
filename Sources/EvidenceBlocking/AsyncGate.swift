import Synchronization

/// At most `limit` holders at once, for async code: waiting suspends the task, never a thread.
/// The ingest's readers (`WatchService`, `evidence ingest`) and the tests' slots for tests that
/// run on threads of their own (`.ownThread`, EvidenceTesting) wait on it.
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
