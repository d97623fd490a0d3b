import EvidenceProcess
import EvidenceSandbox
import Foundation
import Glibc
import Testing
import EvidenceTesting

/// `evidence run` as a real process on a temp home, rules folder and watched folder.
final class RunHarness {
    let scratch = Scratch()
    var home: String { scratch.home }
    var drop: String { scratch.path + "/drop" }
    var rules: String { scratch.path + "/rules" }
    var logPath: String { scratch.path + "/run.log" }
    var cli: CLI { CLI(home: home) }
    private(set) var process: ChildProcess?
    /// An evidence.toml to pass with --config (notaries, archives), if any.
    var configPath: String?
    /// Extra environment for the service (e.g. the notary's API key variable).
    var environment: [String: String] = [:]
    /// Runs the service through this (`ip netns exec NAME`: inside a shaped link's namespace).
    var launcher: [String] = []

    init(settle: String = "0s", extra: String = "") {
        try! FileManager.default.createDirectory(atPath: drop, withIntermediateDirectories: true)
        try! FileManager.default.createDirectory(atPath: rules, withIntermediateDirectories: true)
        try! "path = \"\(drop)\"\nsettle = \"\(settle)\"\n\(extra)\n".write(toFile: rules + "/cam.toml", atomically: true, encoding: .utf8)
    }

    deinit { if let p = process, p.isRunning { p.signal(SIGKILL); p.wait() } }

    /// Starts the service and waits until its first scan is done (or, with `scanned` false, until
    /// it has started: a restart that only has to finish what is already in the folder).
    func start(timeout: Double = 90, scanned: Bool = true) throws {
        let arguments = (configPath.map { ["--config", $0] } ?? []) + ["--home", home, "run", "--rules", rules, "--log-format", "json"]
        let env = ChildProcess.environment(environment, removing: ["EVIDENCE_HOME", "EVIDENCE_CONFIG"])
        let argv = launcher + [CLI.binary] + arguments
        let p = try ChildProcess(argv[0], Array(argv.dropFirst()), environment: env, directory: scratch.path,
                                 stdout: .file(logPath, append: false), stderr: .stdout)
        process = p
        let mark = scanned ? "initial scan" : "evidence run started"
        let ready = waitUntil(timeout: timeout) { self.log.contains(mark) || !p.isRunning }
        guard ready, p.isRunning else { throw HarnessError.notReady(self.log) }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Files this start of the service logged as stored (`--log-format json`), read from its log
    /// file without starting a process.
    func storedInLog() -> Int {
        log.split(separator: "\n").count { $0.contains("\"msg\":\"stored\"") }
    }

    /// Sends a signal and waits for the exit status (nil if it did not exit in time).
    func stop(_ sig: Int32 = SIGTERM, timeout: Double = 20) -> Int32? {
        guard let p = process else { return nil }
        p.signal(sig)
        guard let done = p.wait(seconds: timeout) else { return nil }
        process = nil
        return sig == SIGKILL ? -9 : done.status
    }

    /// `evidence status --json`, at most 4 a second: run in-process it takes milliseconds, and
    /// `waitUntil` polling it every few of them competed with the service for the CPU and the
    /// catalog (a 1,000-file burst was 686 in after 90 s).
    func status() -> [String: Any] {
        let next = lastStatus + .milliseconds(250)
        let wait = (next - ContinuousClock.now).components
        if wait.seconds > 0 || wait.attoseconds > 0 { Thread.sleep(forTimeInterval: Double(wait.seconds) + Double(wait.attoseconds) / 1e18) }
        lastStatus = ContinuousClock.now
        return (cli.run(["status", "--json"]).json as? [String: Any]) ?? [:]
    }
    private var lastStatus = ContinuousClock.now - .seconds(1)

    func items() -> Int { status()["items"] as? Int ?? -1 }
    func sources() -> Int { status()["sources"] as? Int ?? -1 }

    @discardableResult
    func write(_ name: String, _ data: Data) -> String {
        let p = drop + "/" + name
        try! FileManager.default.createDirectory(atPath: (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: p, contents: data)
        return p
    }

    enum HarnessError: Error { case notReady(String) }
}


func randomBytes(_ n: Int) -> Data {
    var g = SystemRandomNumberGenerator()
    var d = Data(count: n)
    d.withUnsafeMutableBytes { raw in
        var i = 0
        while i + 8 <= n { raw.storeBytes(of: g.next() as UInt64, toByteOffset: i, as: UInt64.self); i += 8 }
        while i < n { raw[i] = UInt8.random(in: 0...255); i += 1 }
    }
    return d
}
