import EvidenceBlocking
import Foundation
import Synchronization
import Testing

/// One thread running the jobs of the tasks that prefer it (`withTaskExecutorPreference`), in
/// order. A test that blocks (a synchronous store call, a tool it waits for) runs its body here
/// (`offPool`), so it holds neither of the cooperative pool's threads (one per core, two here)
/// that every async test of the process shares; and since the body stays in the test's task,
/// `#expect` still records against that test.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {  // `jobs` and `stopped` are guarded by `condition`
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    public init(name: String = "evidence-test-thread") {
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.stackSize = 8 << 20
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }

    /// Ends the thread once the jobs queued so far have run; a job queued later still runs,
    /// on the thread's way out, so no task that prefers it is ever stranded.
    public func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty { condition.unlock(); return }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs `body` (which blocks) on a thread of its own, in the calling test's task.
public func offPool<T>(_ body: () throws -> T) async throws -> T {
    let executor = ThreadExecutor()
    defer { executor.stop() }
    return try await withTaskExecutorPreference(executor) { try body() }
}

/// `.ownThread` on a suite: each of its tests runs in its task on a thread of its own
/// (`ThreadExecutor`), blocking as it likes (a synchronous wait for a process, `waitUntil`, a
/// command run in-process), while the cooperative pool stays free for the async work the test
/// and its in-process commands need. With two pool threads, two tests blocked on them once
/// stalled every other test of the CLI pass for minutes. At most `OwnThreadTrait.parallel`
/// such tests run at once (`EVIDENCE_TEST_PARALLEL`, default 2; `scripts/test.sh` gives the cli
/// pass 4, whose tests mostly wait on their processes): all of them at once put the load at 36
/// on two cores, and a 1,000-file burst was a sixth done after its 90 s; with 4 it was 922 of
/// 1,000 after 180 s on a loaded machine, so the long pass keeps 2. Suites are not
/// `.serialized` unless their tests share something: every test has its own home, sandbox,
/// ports, PostgreSQL database and bucket, and the slots alone bound the load.
public struct OwnThreadTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public static let parallel = max(1, ProcessInfo.processInfo.environment["EVIDENCE_TEST_PARALLEL"].flatMap { Int($0) } ?? 2)
    private static let slots = AsyncGate(parallel)

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        guard !test.isSuite else { return try await function() }
        let asked = ContinuousClock.now
        await Self.slots.acquire()
        let began = ContinuousClock.now
        defer {
            Self.slots.release()
            Self.report(test, testCase, waited: began - asked, ran: ContinuousClock.now - began)
        }
        let executor = ThreadExecutor(name: "evidence-test")
        defer { executor.stop() }
        try await withTaskExecutorPreference(executor) { try await function() }
    }

    /// One line per test on standard error, `◷ slot 12.3 s (waited 40.1 s): NAME`: Swift
    /// Testing's own "passed after" counts the wait for a slot too, so only this line says what
    /// a test costs; `scripts/test.sh` lists the costliest of each pass.
    private static func report(_ test: Test, _ testCase: Test.Case?, waited: Duration, ran: Duration) {
        func seconds(_ d: Duration) -> String {
            let tenths = (d.components.seconds * 10) + d.components.attoseconds / 100_000_000_000_000_000
            return "\(tenths / 10).\(tenths % 10)"
        }
        let name = test.displayName ?? test.name
        let line = "◷ slot \(seconds(ran)) s (waited \(seconds(waited)) s): \(name)\(testCase == nil ? "" : " (one case)")\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test of the suite on a thread of its own (`OwnThreadTrait`).
    public static var ownThread: Self { OwnThreadTrait() }
}
