import Foundation
import Synchronization

/// A bounded set of dedicated threads, each owning one curl easy handle, that run blocking
/// `curl_easy_perform` calls. Async callers wait on a continuation, so no Swift cooperative
/// thread is ever blocked by a transfer. Threads start on demand (up to `limit`), keep their
/// handle (and its connection cache) between jobs, and exit after `idleTimeout` without work or
/// when the pool is shut down.
final class TransferPool: Sendable {
    typealias Job = @Sendable (CurlEasy) -> Void

    /// Idle threads sleep on it (a real, timed wait). `state` only changes with it held, so a
    /// thread that found no job cannot miss the signal of the next one.
    private let condition = NSCondition()
    private struct State {
        var jobs: [Job] = []
        var threadCount = 0
        var idleCount = 0
        var isShutDown = false
    }
    private let state = Mutex(State())

    /// Jobs waiting for a thread (tests wait for a request to be queued before they cancel it).
    var queuedCount: Int { state.withLock { $0.jobs.count } }

    let limit: Int
    let idleTimeout: TimeInterval
    private let name: String

    init(limit: Int, idleTimeout: TimeInterval = 30, name: String = "evidence-http") {
        self.limit = max(1, limit)
        self.idleTimeout = idleTimeout
        self.name = name
    }

    /// Queues a job; it runs on one of the pool's threads, in submission order.
    func submit(_ job: @escaping Job) {
        condition.lock()
        defer { condition.unlock() }
        // Each idle worker will take one queued job; start a thread for the rest, within the limit.
        let number = state.withLock { s -> Int? in
            s.jobs.append(job)
            guard s.jobs.count > s.idleCount && s.threadCount < limit else { return nil }
            s.threadCount += 1
            return s.threadCount
        }
        if let number { startThread(number: number) } else { condition.signal() }
    }

    /// Lets the threads finish the queued jobs and exit.
    func shutdown() {
        condition.lock()
        state.withLock { $0.isShutDown = true }
        condition.broadcast()
        condition.unlock()
    }

    private func startThread(number: Int) {
        let thread = Thread { [self] in self.work() }
        thread.name = "\(name)-\(number)"
        thread.start()
    }

    private func work() {
        let easy = CurlEasy()
        condition.lock()
        while true {
            enum Next { case run(Job), exit, wait }
            let next = state.withLock { s -> Next in
                if !s.jobs.isEmpty { return .run(s.jobs.removeFirst()) }
                if s.isShutDown { return .exit }
                s.idleCount += 1
                return .wait
            }
            switch next {
            case .run(let job):
                condition.unlock()
                job(easy)
                condition.lock()
                continue
            case .exit:
                break
            case .wait:
                let signalled = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout))
                let idleOut = state.withLock { s in
                    s.idleCount -= 1
                    return !signalled && s.jobs.isEmpty
                }
                if idleOut { break }
                continue
            }
            break
        }
        state.withLock { $0.threadCount -= 1 }
        condition.unlock()
        withExtendedLifetime(easy) {}
    }
}
