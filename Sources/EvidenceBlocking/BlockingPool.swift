import Dispatch
import Foundation
import Synchronization

/// Runs blocking work (file reads and writes, fsync, SQLite and PostgreSQL calls) on
/// `BlockingPool.shared`, off the cooperative pool and off libdispatch's global queues (both
/// are only as wide as the CPU count, so a few fsyncs would stall every other task).
///
/// The error type passes through: `try await onIOThread { () throws(StoreError) in … }`
/// throws `StoreError`, and a closure that cannot fail needs no `try`.
public func onIOThread<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    try await BlockingPool.shared.run(work)
}

/// A fixed set of threads taking closures from one queue. Threads blocked in the kernel cost
/// no CPU, so the pool is sized for concurrency of I/O, not for cores. Work submitted here must
/// not wait for other work submitted here: all threads could be waiting at once.
public final class BlockingPool: Sendable {
    public static let shared = BlockingPool(threads: 16)

    private let queue: WorkQueue

    public init(threads: Int) {
        let queue = WorkQueue()
        self.queue = queue
        for i in 0..<max(1, threads) {
            // The threads hold the queue, not the pool: a pool that goes away leaves them parked.
            let t = Thread { queue.loop() }
            t.name = "evidence-io-\(i)"
            t.stackSize = 1 << 20
            t.start()
        }
    }

    /// Runs `work` on one of the pool's threads and returns its value or throws its error.
    public func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { cont in
            queue.submit { cont.resume(returning: Result { () throws(E) -> T in try work() }) }
        }
        return try result.get()
    }

    /// Queues `work` without waiting for it.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        queue.submit(work)
    }
}

/// The pool's queue: the closures under a `Mutex`, and a semaphore counting them, on which
/// idle threads sleep until work arrives.
private final class WorkQueue: Sendable {
    private struct Items {
        var list: [@Sendable () -> Void] = []
        var head = 0
    }
    private let items = Mutex(Items())
    private let available = DispatchSemaphore(value: 0)

    func submit(_ work: @escaping @Sendable () -> Void) {
        items.withLock { $0.list.append(work) }
        available.signal()
    }

    func loop() {
        while true {
            available.wait()
            let work = items.withLock { q -> @Sendable () -> Void in
                let work = q.list[q.head]
                q.head += 1
                if q.head > 1024 && q.head * 2 > q.list.count {
                    q.list.removeFirst(q.head)
                    q.head = 0
                }
                return work
            }
            work()
        }
    }
}
