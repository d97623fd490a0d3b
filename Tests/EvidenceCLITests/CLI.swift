import EvidenceProcess
import EvidenceSandbox
import Foundation
import Glibc
import EvidenceTesting

/// Runs the built `evidence` binary (next to the test bundle) as a real process.
struct CLI {
    static let binary: String = {
        if let env = ProcessInfo.processInfo.environment["EVIDENCE_BIN"] { return env }
        let bundleDir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return bundleDir.appendingPathComponent("evidence").path
    }()

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let samples = packageRoot + "/samples"

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    }

    let home: String
    var environment: [String: String] = [:]

    /// `evidence --home <home> args…`, ended after `timeout` seconds. It runs in this process
    /// (`InProcess`) unless `process` is set or a `prefix` or `cwd` is given: a test of what only
    /// a process has (its descriptors, signals, exit on a crash, a daemon to kill) asks for one.
    @discardableResult
    func run(_ args: [String], timeout: Double = 60, prefix: [String] = [], cwd: String? = nil, process: Bool = false) -> Result {
        if !process && prefix.isEmpty && cwd == nil && Self.processCommands.isDisjoint(with: args) {
            let env = ChildProcess.environment(environment, removing: ["EVIDENCE_HOME", "EVIDENCE_CONFIG"])
            return InProcess.run(["--home", home] + args, environment: env, timeout: timeout)
        }
        return Self.exec(prefix + [Self.binary, "--home", home] + args, timeout: timeout, environment: environment, cwd: cwd)
    }

    /// Commands that talk to archive providers always run as a process: the providers'
    /// single-flight work (a token refresh, a folder made once) runs in unstructured tasks on the
    /// cooperative pool, and in this process both of its threads can be held by tests waiting
    /// synchronously (`accounts check -v` and `doctor` waited there 120 s). `run` and `serve` are
    /// daemons.
    static let processCommands: Set<String> = ["accounts", "doctor", "archive", "run", "serve"]

    static func exec(_ argv: [String], timeout: Double = 60, environment: [String: String] = [:], cwd: String? = nil) -> Result {
        let env = ChildProcess.environment(environment, removing: ["EVIDENCE_HOME", "EVIDENCE_CONFIG"])
        do {
            let r = try ChildProcess.run(argv[0], Array(argv.dropFirst()), environment: env, directory: cwd,
                                         separateStandardError: true, timeout: timeout)
            // A signal shows as its number, as Foundation's terminationStatus did.
            let status: Int32
            switch r.termination {
            case .exited(let code): status = code
            case .signaled(let signal): status = signal
            }
            return Result(status: status, stdout: r.output, stderr: r.standardError)
        } catch {
            return Result(status: 127, stdout: "", stderr: "\(error)")
        }
    }
}

/// A test's folder (see `TempDirectory`), with the CLI tests' conventions: `home` inside it.
final class Scratch {
    private let directory = TempDirectory("cli")
    var path: String { directory.path }

    var home: String { path + "/home" }

    @discardableResult
    func file(_ name: String, _ text: String) -> String { directory.write(name, text) }
}
