import EvidenceCLI
import EvidenceTesting
import Foundation
import Synchronization

/// Runs an `evidence` command line in this test process (`EvidenceCLI.run`), on a thread of its
/// own: the command's tasks prefer that thread (`withTaskExecutorPreference`), so a synchronous
/// test waiting here never holds the cooperative pool the command needs, and commands of tests
/// running side by side never wait for each other's threads. Output, log and environment are the
/// command's own (bound to its task), as a child process would have them.
enum InProcess {
    static func run(_ args: [String], environment: [String: String], timeout: Double) -> CLI.Result {
        let executor = ThreadExecutor()
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<CLI.Result?>(nil)
        Task(executorPreference: executor) {
            let r = await EvidenceCLI.run(args, environment: environment, executable: CLI.binary)
            result.withLock { $0 = CLI.Result(status: r.status, stdout: r.stdout, stderr: r.stderr) }
            done.signal()
        }
        let finished = done.wait(timeout: .now() + timeout) == .success
        executor.stop()
        guard finished else {
            // A command still running is not stopped (it shares this process): report what a
            // killed child reports, SIGKILL's number, so the test fails naming the timeout.
            return CLI.Result(status: SIGKILL, stdout: "", stderr: "in-process run of \(args) did not end within \(timeout) s")
        }
        return result.withLock { $0! }
    }
}
