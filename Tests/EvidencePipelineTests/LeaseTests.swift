import EvidenceProcess
import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import Foundation
import Glibc
import Logging
import Synchronization
import Testing

@Suite("Job leases: renewed while a job runs, returned at start only when their process is gone", .serialized)
struct LeaseTests {
    /// Takes longer than the runner's lease and counts how often it was started.
    final class Slow: JobHandler {
        let kind = JobKind.verify
        let runs = Mutex(0)
        let seconds: Double
        init(seconds: Double) { self.seconds = seconds }
        func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
            runs.withLock { $0 += 1 }
            // The scenario: a job that runs for `seconds`, longer than its lease.
            try? await Task.sleep(for: .seconds(seconds))
            return .done(nil)
        }
    }

    @Test("a job running two and a half times its lease is run once, by one worker of two")
    func renewedWhileRunning() async throws {
        let catalog = try SQLiteCatalog.inMemory()
        // Real time, real renewals (LeaseClockTests shows the logic on a moved clock): a lease of
        // 4 s renewed every 1.3 s leaves 2.7 s of slack for a cooperative pool held by other
        // tests on a loaded machine (a 2 s lease once lost its job so in a full run).
        let slow = Slow(seconds: 10)
        _ = try catalog.enqueue(JobSpec(.verify(rule: "slow")), itemID: nil, dedupeKey: "slow:1")
        let runner = JobRunner(catalog: catalog, handlers: [slow], owner: Lease.owner(role: "test"), workers: 2,
                               lease: 4, idlePoll: 0.02, logger: Logger(label: "test"))
        let task = Task { try await runner.run() }
        let deadline = Date().addingTimeInterval(60)   // ends as soon as the job is done (10 s)
        while Date() < deadline, try catalog.jobCounts()["done"] != 1 {
            try await Task.sleep(for: .milliseconds(20))
        }
        task.cancel()
        _ = try? await task.value
        #expect(try catalog.jobCounts() == ["done": 1])
        #expect(slow.runs.withLock { $0 } == 1, "a second worker took the job when its lease ran out")
    }

    @Test("renewLease moves the end only for the holder of a running job")
    func renew() throws {
        let catalog = try SQLiteCatalog.inMemory()
        _ = try catalog.enqueue(JobSpec(.verify(rule: "k")), itemID: nil, dedupeKey: "k:1")
        let now = Date()
        let job = try #require(try catalog.claimJob(kinds: [.verify], owner: "A", lease: 1, now: now))
        #expect(try catalog.renewLease(job.id, owner: "A", lease: 60, now: now.addingTimeInterval(0.9)))
        #expect(try !catalog.renewLease(job.id, owner: "B", lease: 60, now: now))
        // Still held two seconds later, when the first lease would have expired.
        #expect(try catalog.claimJob(kinds: [.verify], owner: "B", lease: 1, now: now.addingTimeInterval(2)) == nil)
        try catalog.completeJob(job.id, owner: "A", transition: nil)
        #expect(try !catalog.renewLease(job.id, owner: "A", lease: 60, now: now))
    }

    @Test("at start, leases of dead processes go back to the queue; a live one's stay")
    func startReleasesOnlyTheDead() async throws {
        let catalog = try SQLiteCatalog.inMemory()
        // A process that has exited: its pid is gone.
        let dead = try ChildProcess("/bin/true")
        dead.wait()
        let host = ProcessInfo.processInfo.hostName
        let goneOwner = "run@\(host):\(dead.pid)/1"
        // A live process: a sleeping child, as `evidence archive` in a terminal.
        let live = try ChildProcess("/bin/sleep", ["30"])
        defer { live.signal(SIGKILL); live.wait() }
        let liveOwner = "archive@\(host):\(live.pid)/2"
        let me = Lease.owner(role: "run")
        #expect(Lease.isGone(goneOwner, current: me))
        #expect(!Lease.isGone(liveOwner, current: me))
        #expect(!Lease.isGone(me, current: me))
        #expect(Lease.isGone("run@\(host):\(getpid())/earlier", current: me), "this pid under another nonce is a previous process")
        #expect(!Lease.isGone("run@other-host:1/x", current: me), "another host's lease waits for its expiry")
        // Named nodes (`node = "station-3"`): the pid check applies to this node's owners only.
        let station3 = Lease.owner(role: "run", node: "station-3")
        #expect(Lease.node(of: station3) == "station-3")
        #expect(Lease.isGone("archive@station-3:\(dead.pid)/9", current: station3))
        #expect(!Lease.isGone("archive@station-4:\(dead.pid)/9", current: station3),
                "a pid that is gone here says nothing of another node's process")

        for (key, owner) in [("a", goneOwner), ("b", liveOwner)] {
            _ = try catalog.enqueue(JobSpec(.verify(rule: "slow")), itemID: nil, dedupeKey: key)
            _ = try #require(try catalog.claimJob(kinds: [.verify], owner: owner, lease: 3600, now: Date()))
        }
        #expect(try catalog.leaseOwners() == [liveOwner, goneOwner].sorted())
        let slow = Slow(seconds: 0)
        let runner = JobRunner(catalog: catalog, handlers: [slow], owner: me, workers: 1, idlePoll: 0.02, logger: Logger(label: "test"))
        let task = Task { try await runner.run() }
        let deadline = Date().addingTimeInterval(60)   // ends as soon as the dead process's job is done
        while Date() < deadline, try catalog.jobCounts()["done"] != 1 {
            try await Task.sleep(for: .milliseconds(20))
        }
        // The runner returns leases before its workers claim anything: a job done means the
        // leases went back already, and a live lease returned by mistake would show now as a
        // queued job, one running under this runner, or a second one done.
        task.cancel()
        _ = try? await task.value
        #expect(try catalog.jobCounts() == ["done": 1, "running": 1])
        #expect(try catalog.leaseOwners() == [liveOwner])
    }
}
