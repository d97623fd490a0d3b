import Foundation
import Synchronization

/// Runs blocking file I/O (read, write, fsync) on dedicated threads, off the cooperative
/// pool and off libdispatch's global queues (both are only as wide as the CPU count, so a
/// few fsyncs would stall every other task).
public func onIOThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { cont in
        BlockingPool.shared.submit { cont.resume(returning: work()) }
    }
}

/// A fixed set of threads taking closures from one queue. Threads blocked in the kernel cost
/// no CPU, so the pool is sized for concurrency of I/O, not for cores.
final class BlockingPool: @unchecked Sendable {   // state guarded by `condition`
    static let shared = BlockingPool(threads: 16)

    private let condition = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var head = 0

    init(threads: Int) {
        for i in 0..<threads {
            let t = Thread { [unowned self] in self.loop() }
            t.name = "evidence-io-\(i)"
            t.stackSize = 1 << 20
            t.start()
        }
    }

    func submit(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        queue.append(work)
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while head == queue.count { condition.wait() }
            let work = queue[head]
            head += 1
            if head > 1024 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            condition.unlock()
            work()
        }
    }
}

/// Catalog or store work for a job, off the cooperative pool; a failure is a retryable
/// `JobError` carrying the error's own message (it names the file or the database).
func blockingJobWork<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws(JobError) -> T {
    let result = await onIOThread { Result { try work() } }
    switch result {
    case .success(let value): return value
    case .failure(let error): throw JobError("\(error)", retryable: true)
    }
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
