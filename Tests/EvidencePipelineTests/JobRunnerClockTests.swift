import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import EvidenceTesting
import Foundation
import Logging
import Synchronization
import Testing

/// The job runner's clock is injected: a retry an hour away runs as soon as the clock is moved
/// past it, and not before.
@Suite("JobRunner: time is the injected clock")
struct JobRunnerClockTests {
    final class Clock: Sendable {
        let time = Mutex(Date())
        func now() -> Date { time.withLock { $0 } }
        func advance(_ seconds: Double) { time.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    /// Fails its first attempt with "ask again in an hour", then succeeds.
    final class OnceBusy: JobHandler {
        let kind = JobKind.verify
        let attempts = Mutex(0)
        func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
            let n = attempts.withLock { $0 += 1; return $0 }
            if n == 1 { throw JobError("busy", retryable: true, retryAfter: 3600) }
            return .done(nil)
        }
    }

    @Test func aRetryAfterAnHourRunsWhenTheClockPassesIt() async throws {
        let catalog = try SQLiteCatalog.inMemory()
        let handler = OnceBusy()
        _ = try catalog.enqueue(JobSpec(.verify(rule: "cam")), itemID: nil, dedupeKey: "v")
        let clock = Clock()
        clock.advance(1)   // the job is due: it was queued before the clock started
        let runner = JobRunner(catalog: catalog, handlers: [handler], owner: "test", workers: 1, idlePoll: 0.01,
                               now: clock.now, logger: Logger(label: "test"))
        let task = Task { try await runner.run() }
        defer { task.cancel() }
        #expect(await waitUntil(timeout: 20) { handler.attempts.withLock { $0 } == 1 })
        // Nothing more happens while the clock stands still (a few polls' worth of real time).
        #expect(await !waitUntil(timeout: 0.3) { handler.attempts.withLock { $0 } > 1 }, "ran before its retry time")
        clock.advance(3601)
        #expect(await waitUntil(timeout: 20) { (try? catalog.jobCounts()["done"]) == 1 }, "not run once the clock passed its retry time")
        #expect(handler.attempts.withLock { $0 } == 2)
    }
}
