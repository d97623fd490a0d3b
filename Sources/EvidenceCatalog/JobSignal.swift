import Foundation
import Synchronization

/// Wakes idle job workers as soon as a job becomes runnable somewhere else (another node, another
/// process), so they need not poll the queue to notice it.
///
/// A waiter reads `generation` before it looks at the queue and, when it found nothing, waits
/// with that generation: a wake-up that came in between makes the wait return at once, so none
/// is lost between "the queue was empty" and "I am waiting".
public final class JobSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    /// Waiters parked now (tests wait for one to park before they notify).
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    public init() {}

    /// Moves on at every wake-up.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Wakes every waiter (and any that waits with an older generation).
    public func notify() {
        let woken = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.generation &+= 1
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for c in woken { c.resume() }
    }

    /// Returns when a wake-up comes after `generation` was read (at once if one already came),
    /// after `seconds`, or when the task is cancelled, whichever is first.
    public func wait(after generation: UInt64, upTo seconds: Double) async {
        let id = state.withLock { s -> UInt64 in s.nextWaiter &+= 1; return s.nextWaiter }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let parked = state.withLock { s -> Bool in
                    guard s.generation == generation, !Task.isCancelled else { return false }
                    s.waiters[id] = c
                    return true
                }
                guard parked else { c.resume(); return }
                Task { [weak self] in
                    try? await Task.sleep(for: .seconds(max(0, seconds)))
                    self?.resume(id)
                }
            }
        } onCancel: {
            resume(id)
        }
    }

    /// Resumes one waiter if it still waits (whoever takes it out of the table resumes it).
    private func resume(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
}
