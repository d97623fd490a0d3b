import EvidenceProcess
import Foundation
import Glibc

/// A running `evidence-sandbox` executable, for end-to-end tests: started on port 0, ready
/// once it printed `listening on http://127.0.0.1:PORT`, stopped with SIGTERM.
/// Its stderr goes to `<state-dir>/sandbox-stderr.log`.
public final class SandboxProcess: @unchecked Sendable {
    public let baseURL: URL
    public let port: Int
    public let stateDirectory: String
    public let stderrPath: String
    private let process: ChildProcess

    public enum StartError: Error, CustomStringConvertible {
        case launch(String)
        case notReady(stdout: String, stderr: String)

        public var description: String {
            switch self {
            case .launch(let reason): return "cannot launch evidence-sandbox: \(reason)"
            case .notReady(let out, let err):
                return "evidence-sandbox did not report listening; stdout: \(out.prefix(500)) stderr: \(err.suffix(2000))"
            }
        }
    }

    private init(process: ChildProcess, port: Int, stateDirectory: String, stderrPath: String) {
        self.process = process
        self.port = port
        self.baseURL = URL(string: "http://127.0.0.1:\(port)")!
        self.stateDirectory = stateDirectory
        self.stderrPath = stderrPath
    }

    /// Launches `executable --port 0 --state-dir stateDirectory arguments…` and waits up to
    /// `timeout` seconds for its listening line. Throws `StartError` (and kills the process)
    /// if it does not come.
    ///
    /// `launcher` goes in front of the command line, for a launcher that ends by exec'ing it
    /// (`["ip", "netns", "exec", NAME]`: the sandbox then listens in that network namespace,
    /// and the pid, signals and exit status are still the sandbox's own).
    public static func start(executable: URL, stateDirectory: String, arguments: [String] = [],
                             launcher: [String] = [], timeout: Double = 120) async throws -> SandboxProcess {
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        let stderrPath = (stateDirectory as NSString).appendingPathComponent("sandbox-stderr.log")
        // stdout goes to a file, not a pipe read by `readabilityHandler`: that handler is a
        // dispatch source on the pipe's descriptor, and on Linux a descriptor closed (the Pipe
        // released) while its source is armed is later reused and crashes libdispatch in
        // _dispatch_event_loop_drain — seen once in the services test pass. A file needs no
        // source; the listening line is read from where this start began writing.
        let stdoutPath = (stateDirectory as NSString).appendingPathComponent("sandbox-stdout.log")
        // Where this start begins writing: a restart on the same folder appends.
        let from = (try? FileManager.default.attributesOfItem(atPath: stdoutPath)[.size] as? UInt64) ?? 0
        let process: ChildProcess
        do {
            let command = launcher + [executable.path, "--port", "0", "--state-dir", stateDirectory] + arguments
            process = try ChildProcess(command[0], Array(command.dropFirst()),
                                       stdout: .file(stdoutPath), stderr: .file(stderrPath))
        } catch {
            throw StartError.launch("\(error)")
        }
        func written() -> String {
            guard let h = FileHandle(forReadingAtPath: stdoutPath) else { return "" }
            defer { try? h.close() }
            try? h.seek(toOffset: from)
            return String(decoding: (try? h.readToEnd()) ?? Data(), as: UTF8.self)
        }
        func listeningPort() -> Int? {
            let text = written()
            guard let end = text.firstIndex(of: "\n") else { return nil }
            let line = String(text[..<end])
            guard line.hasPrefix("listening on http://127.0.0.1:") else { return nil }
            return Int(line.split(separator: ":").last ?? "")
        }
        let deadline = Date().addingTimeInterval(timeout)
        // Looked at once more after the deadline: a poll that resumes late (a cooperative pool
        // held by other tests on a loaded machine) must not miss a line that is there. A
        // fresh-clone run failed so, with the line in the file.
        while true {
            if let port = listeningPort() {
                return SandboxProcess(process: process, port: port, stateDirectory: stateDirectory, stderrPath: stderrPath)
            }
            if !process.isRunning || Date() >= deadline { break }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        if let port = listeningPort() {
            return SandboxProcess(process: process, port: port, stateDirectory: stateDirectory, stderrPath: stderrPath)
        }
        process.signal(SIGKILL)
        process.wait()
        let err = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        throw StartError.notReady(stdout: written(), stderr: err)
    }

    public var processIdentifier: Int32 { process.pid }
    public var isRunning: Bool { process.isRunning }

    /// Sends SIGTERM and waits up to `timeout` seconds; kills with SIGKILL after that.
    /// Returns the exit status (nil if it had to be killed).
    @discardableResult
    public func stop(timeout: Double = 10) async -> Int32? {
        if let done = process.termination { return done.status }
        process.signal(SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline {
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        if let done = process.termination { return done.status }
        process.signal(SIGKILL)
        await process.exit()
        return nil
    }

    deinit {
        if process.isRunning {
            process.signal(SIGKILL)
            process.wait()
        }
    }
}
