import Foundation

/// A bounded set of dedicated threads, each owning one curl easy handle, that run blocking
/// `curl_easy_perform` calls. Async callers wait on a continuation, so no Swift cooperative
/// thread is ever blocked by a transfer. Threads start on demand (up to `limit`), keep their
/// handle (and its connection cache) between jobs, and exit after `idleTimeout` without work or
/// when the pool is shut down.
final class TransferPool: @unchecked Sendable {
    typealias Job = @Sendable (CurlEasy) -> Void

    private let condition = NSCondition()
    // All below are guarded by `condition`.
    private var jobs: [Job] = []
    private var threadCount = 0
    private var idleCount = 0
    private var isShutDown = false

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
        jobs.append(job)
        // Each idle worker will take one queued job; start a thread for the rest, within the limit.
        if jobs.count > idleCount && threadCount < limit {
            threadCount += 1
            startThread(number: threadCount)
        } else {
            condition.signal()
        }
        condition.unlock()
    }

    /// Lets the threads finish the queued jobs and exit.
    func shutdown() {
        condition.lock()
        isShutDown = true
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
            if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                job(easy)
                condition.lock()
                continue
            }
            if isShutDown { break }
            idleCount += 1
            let signalled = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout))
            idleCount -= 1
            if !signalled && jobs.isEmpty { break }
        }
        threadCount -= 1
        condition.unlock()
        withExtendedLifetime(easy) {}
    }
}
