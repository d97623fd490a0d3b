import Foundation
import Synchronization

/// One connection of its own, on a thread of its own, LISTENing on the job channel: every
/// transaction that makes a job runnable (`job_wake` trigger: a row inserted or updated as
/// `queued`) NOTIFYs it on commit, and the listener wakes this process's idle workers.
///
/// A lost connection is made again (the waiters are woken then too: what was notified while it
/// was down is not lost, they look at the queue).
final class JobListener: Sendable {
    static let channel = "evidence_job"
    let signal = JobSignal()
    private let stopped = Flag()

    final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    init(target: PostgresTarget) {
        let (signal, stopped) = (self.signal, self.stopped)
        let thread = Thread { Self.listen(target: target, signal: signal, stopped: stopped) }
        thread.name = "evidence-job-listener"
        thread.start()
    }

    /// The thread ends within half a second.
    func stop() { stopped.set() }

    private static func listen(target: PostgresTarget, signal: JobSignal, stopped: Flag) {
        var pause = 0.1
        while !stopped.isSet {
            do {
                let c = try PGConnection(target)
                try c.query("LISTEN \(channel)")
                pause = 0.1
                signal.notify()  // whatever happened before LISTEN: look at the queue once
                while !stopped.isSet {
                    if try c.awaitNotifications(milliseconds: 500) > 0 { signal.notify() }
                }
            } catch {
                // The server is away: the workers fall back to polling until it is back.
                Thread.sleep(forTimeInterval: pause)
                pause = min(5, pause * 2)
            }
        }
    }
}
