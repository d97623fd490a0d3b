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
        /// How often the runner read the clock: each idle turn reads it to claim a due job.
        let reads = Mutex(0)
        func now() -> Date { reads.withLock { $0 += 1 }; return time.withLock { $0 } }
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
        // Nothing more happens while the clock stands still: once the failure is recorded, the
        // runner looks for a due job again and again (each look reads the clock) and runs none.
        #expect(await waitUntil(timeout: 20) { (try? catalog.jobCounts()["queued"]) == 1 })
        let looked = clock.reads.withLock { $0 }
        #expect(await waitUntil(timeout: 20) { clock.reads.withLock { $0 } >= looked + 10 }, "the runner stopped looking")
        #expect(handler.attempts.withLock { $0 } == 1, "ran before its retry time")
        clock.advance(3601)
        #expect(await waitUntil(timeout: 20) { (try? catalog.jobCounts()["done"]) == 1 }, "not run once the clock passed its retry time")
        #expect(handler.attempts.withLock { $0 } == 2)
    }

    /// Waits an hour for work another job does; that work is done while this job runs, after
    /// it looked (the lost wake-up: the other job finds it running, not queued, and cannot wake
    /// it). Its `unless` says whether the work is done.
    final class WaitsForOther: JobHandler {
        let kind = JobKind.notarize
        let runs = Mutex(0)
        let otherDone = Mutex(false)
        let doneWhileRunning: Bool
        init(doneWhileRunning: Bool) { self.doneWhileRunning = doneWhileRunning }
        func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
            runs.withLock { $0 += 1 }
            if otherDone.withLock({ $0 }) { return .done(nil) }
            if doneWhileRunning { otherDone.withLock { $0 = true } }
            return .notYet(until: Date().addingTimeInterval(3600), reason: "waiting for the other job",
                           unless: { self.otherDone.withLock { $0 } })
        }
    }

    @Test("a job put back to wait an hour for work done meanwhile runs again at once; one whose work is not done waits", arguments: [true, false])
    func putBackThenAsked(doneWhileRunning: Bool) async throws {
        let catalog = try SQLiteCatalog.inMemory()
        let handler = WaitsForOther(doneWhileRunning: doneWhileRunning)
        let item = try catalog.recordIngest(IngestRecord(sha256: SHA256Digest(hex: String(repeating: "e", count: 64))!, size: 1, path: "/drop/y",
                                                         rule: nil, device: 1, inode: 1, mtimeNanos: 1, media: nil, newObject: true,
                                                         actor: "test")).item
        _ = try catalog.enqueue(JobSpec(.notarize(rule: "cam", notary: "tsa")), itemID: item.id, dedupeKey: "n")
        let clock = Clock()
        clock.advance(1)
        let runner = JobRunner(catalog: catalog, handlers: [handler], owner: "test", workers: 1, idlePoll: 0.01,
                               now: clock.now, logger: Logger(label: "test"))
        let task = Task { try await runner.run() }
        defer { task.cancel() }
        if doneWhileRunning {
            #expect(await waitUntil(timeout: 20) { (try? catalog.jobCounts()["done"]) == 1 }, "still waiting its hour: \(String(describing: try? catalog.jobs(itemID: item.id)))")
            #expect(handler.runs.withLock { $0 } == 2)
        } else {
            #expect(await waitUntil(timeout: 20) { handler.runs.withLock { $0 } == 1 && (try? catalog.jobCounts()["queued"]) == 1 })
            let looked = clock.reads.withLock { $0 }
            #expect(await waitUntil(timeout: 20) { clock.reads.withLock { $0 } >= looked + 10 }, "the runner stopped looking")
            #expect(handler.runs.withLock { $0 } == 1, "ran again though nothing it waits for happened")
        }
    }

    /// Unreachable (no answer) until the clock has moved `outage` past its first call.
    final class Down: JobHandler {
        let kind = JobKind.verify
        let clock: Clock
        let outage: Double
        let first = Mutex<Date?>(nil)
        let calls = Mutex(0)
        init(clock: Clock, outage: Double) { self.clock = clock; self.outage = outage }
        func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
            calls.withLock { $0 += 1 }
            let start = first.withLock { f in f = f ?? clock.now(); return f! }
            guard clock.now().timeIntervalSince(start) >= outage else {
                var e = JobError("qed: POST http://127.0.0.1:9/v1/reports/: transport error: Couldn't connect to server", retryable: true)
                e.unreachable = true
                throw e
            }
            return .done(nil)
        }
    }

    @Test("24 hours of a server that cannot be reached: tried again and again with a growing, capped back-off, never failed, done once it is back")
    func aDayOfOutageEndsDone() async throws {
        let catalog = try SQLiteCatalog.inMemory()
        let clock = Clock()
        let handler = Down(clock: clock, outage: 86_400)
        let item = try catalog.recordIngest(IngestRecord(sha256: SHA256Digest(hex: String(repeating: "d", count: 64))!, size: 1, path: "/drop/x",
                                                         rule: nil, device: 1, inode: 1, mtimeNanos: 1, media: nil, newObject: true,
                                                         actor: "test")).item
        _ = try catalog.enqueue(JobSpec(.verify(rule: "cam")), itemID: item.id, dedupeKey: "v")
        clock.advance(1)
        let runner = JobRunner(catalog: catalog, handlers: [handler], owner: "test", workers: 1, idlePoll: 0.01,
                               now: clock.now, logger: Logger(label: "test"))
        let task = Task { try await runner.run() }
        defer { task.cancel() }
        // Move the clock to each retry as it falls due, for a day: the job never fails, and the
        // wait between tries grows to the cap (600 s ± jitter), not past it.
        var gaps: [Double] = []
        var calls = 0
        for _ in 0..<1_000 {
            // The try ran and was recorded (queued again), or the job is done.
            let settled = await waitUntil(timeout: 20) {
                (try? catalog.jobCounts()["done"]) == 1
                    || (handler.calls.withLock { $0 } > calls && (try? catalog.jobs(itemID: item.id).first?.state) == .queued)
            }
            guard settled else { Issue.record("the job neither ran again nor finished: \(String(describing: try? catalog.jobs(itemID: item.id)))"); break }
            if (try? catalog.jobCounts()["done"]) == 1 { break }
            calls = handler.calls.withLock { $0 }
            let job = try #require(try catalog.jobs(itemID: item.id).first)
            #expect(job.attempts == 0, "an outage counts no attempt: \(job)")
            #expect(job.lastError?.hasPrefix("qed: ") == true && job.lastError?.contains(" [unreachable since ") == true, "\(job.lastError ?? "")")
            let gap = job.nextRunAt.timeIntervalSince(clock.now())
            gaps.append(gap)
            clock.advance(gap + 0.001)
        }
        #expect(await waitUntil(timeout: 20) { (try? catalog.jobCounts()["done"]) == 1 }, "done once the server is back")
        #expect((try? catalog.jobCounts()["failed"]) ?? 0 == 0)
        #expect(gaps.count > 100 && gaps.count < 400, "about one try per 10 minutes once the cap is reached: \(gaps.count)")
        #expect(gaps.max() ?? 0 <= 600 * 1.25 + 1 && (gaps.first ?? 99) < 10, "\(gaps.prefix(5)) … \(gaps.max() ?? 0)")
    }
}
