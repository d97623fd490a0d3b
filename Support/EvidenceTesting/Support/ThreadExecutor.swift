import Foundation

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
