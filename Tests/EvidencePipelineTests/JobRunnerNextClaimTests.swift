import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import EvidenceTesting
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// A worker claims its next job with the completion of the one before. Stopping right then
/// must not leave that job leased to a runner that will not run it.
@Suite("JobRunner: the job claimed with a completion")
struct JobRunnerNextClaimTests {
    final class Counting: JobHandler {
        let kind = JobKind.verify
        let runs = Mutex<[Int64]>([])
        func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
            runs.withLock { $0.append(job.id) }
            return .done(nil)
        }
    }

    func itemID(_ catalog: SQLiteCatalog) throws -> Int64 {
        try catalog.recordIngest(IngestRecord(sha256: SHA256Digest(hex: String(repeating: "e", count: 64))!, size: 1, path: "/drop/y",
                                              rule: nil, device: 1, inode: 1, mtimeNanos: 1, media: nil, newObject: true,
                                              actor: "test")).item.id
    }

    @Test("every job runs once, each claimed by the completion before it but the first")
    func runsEachOnce() async throws {
        let catalog = try SQLiteCatalog.inMemory()
        let item = try itemID(catalog)
        for i in 0..<20 { _ = try catalog.enqueue(JobSpec(.verify(rule: "cam")), itemID: item, dedupeKey: "v\(i)") }
        let transactions = Mutex(0)
        catalog.observeCommits { _ in transactions.withLock { $0 += 1 } }
        let handler = Counting()
        // Idle, the worker looks at the queue once a minute: no claims of an idle worker are counted.
        let runner = JobRunner(catalog: catalog, handlers: [handler], owner: "test", workers: 1, idlePoll: 60, logger: Logger(label: "test"))
        let task = Task { try await runner.run() }
        defer { task.cancel() }
        #expect(await waitUntil(timeout: 30) { (try? catalog.jobCounts()) == ["done": 20] })
        #expect(handler.runs.withLock { $0.count } == 20)
        #expect(Set(handler.runs.withLock { $0 }).count == 20)
        // The leases of earlier runs returned, one claim of its own (the first), one transaction
        // per job (its completion with the next claim), and the claim that found the queue empty:
        // 23 at most, where a claim of its own for every job made about twice as many.
        #expect(transactions.withLock { $0 } <= 23, "\(transactions.withLock { $0 }) transactions for 20 jobs")
    }

    @Test("a runner that stops as a completion claims the next job puts that job back unrun, no attempt counted")
    func stoppingReturnsTheClaimedJob() async throws {
        let catalog = try SQLiteCatalog.inMemory()
        let item = try itemID(catalog)
        let first = try catalog.enqueue(JobSpec(.verify(rule: "cam")), itemID: item, dedupeKey: "v1")
        let second = try catalog.enqueue(JobSpec(.verify(rule: "cam")), itemID: item, dedupeKey: "v2")
        let handler = Counting()
        let runner = JobRunner(catalog: catalog, handlers: [handler], owner: "test", workers: 1, idlePoll: 0.01, logger: Logger(label: "test"))
        // The first commit after the first job ran is its completion (claiming the second): it
        // is held there until the runner is told to stop, so the worker finds it stopping as soon
        // as the completion returns the claimed job.
        // (The test's own side only polls: a cooperative thread blocked on a semaphore starves
        // every other test's tasks on a small machine.)
        let stopped = DispatchSemaphore(value: 0)
        let held = Mutex(false)
        let after = Mutex(0)  // transactions after the held one: the release of the claimed job
        catalog.observeCommits { _ in
            guard !handler.runs.withLock({ $0.isEmpty }) else { return }
            guard !held.withLock({ let was = $0; $0 = true; return was }) else { after.withLock { $0 += 1 }; return }
            stopped.wait()  // on the catalog's I/O thread, never a cooperative one
        }
        let group = ServiceGroup(configuration: .init(services: [.init(service: runner)], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        #expect(await waitUntil(timeout: 30) { held.withLock { $0 } }, "the first job's completion was not committed")
        await group.triggerGracefulShutdown()
        #expect(await waitUntil(timeout: 30) { !runner.isRunning })
        stopped.signal()
        try await running.value

        #expect(handler.runs.withLock { $0 } == [first.id], "the second job ran after the stop")
        let jobs = Dictionary(uniqueKeysWithValues: try catalog.jobs(itemID: item).map { ($0.id, $0) })
        #expect(jobs[first.id]?.state == .done)
        let back = try #require(jobs[second.id])
        #expect(back.state == .queued && back.leaseOwner == nil && back.attempts == 0, "\(back)")
        #expect(abs(back.nextRunAt.timeIntervalSince(second.nextRunAt)) < 0.01, "due when it was due")
        #expect(after.withLock { $0 } == 1, "the second job was claimed with the completion, then released: one transaction")
    }
}
