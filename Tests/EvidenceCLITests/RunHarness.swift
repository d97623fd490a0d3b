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
    /// Starts the service with `-v`: its debug lines (the watcher's "settled", the ingest's
    /// "already ingested") are in `log`, for `done(with:)`.
    var verbose = false

    init(settle: String = "0s", extra: String = "") {
        try! FileManager.default.createDirectory(atPath: drop, withIntermediateDirectories: true)
        try! FileManager.default.createDirectory(atPath: rules, withIntermediateDirectories: true)
        try! "path = \"\(drop)\"\nsettle = \"\(settle)\"\n\(extra)\n".write(toFile: rules + "/cam.toml", atomically: true, encoding: .utf8)
    }

    deinit { if let p = process, p.isRunning { p.signal(SIGKILL); p.wait() } }

    /// Starts the service and waits until its first scan is done (or, with `scanned` false, until
    /// it has started: a restart that only has to finish what is already in the folder).
    func start(timeout: Double = 90, scanned: Bool = true) throws {
        let arguments = (configPath.map { ["--config", $0] } ?? []) + ["--home", home] + (verbose ? ["-v"] : [])
            + ["run", "--rules", rules, "--log-format", "json"]
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

    /// Whether this start of the service is done with the files at `paths` as they are now (it
    /// needs `verbose`): the watcher reported each of them settled (at `size` bytes, when given:
    /// a report of the file while it still grew does not count), and the ingest logged an
    /// outcome (stored, duplicate, already ingested, quarantined, giving up) for every report of
    /// them. The watcher reports a file again only once it changes, so whatever these files can
    /// make the service record has been recorded.
    func done(with paths: [String], size: Int? = nil) -> Bool {
        let wanted = Set(paths.map(Self.normalized))
        var final = Set<String>()
        var reports: [String: Int] = [:], outcomes: [String: Int] = [:]
        let kept = ["settled\"", "stored\"", "duplicate\"", "already ingested\"", "quarantined: ", "giving up"].map { "\"msg\":\"" + $0 }
        for line in log.split(separator: "\n") where kept.contains(where: { line.contains($0) }) {
            guard let entry = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: String],
                  let msg = entry["msg"] else { continue }
            let path = entry["path"].map(Self.normalized)
            if msg == "settled", let path, wanted.contains(path) {
                reports[path, default: 0] += 1
                if size == nil || entry["size"] == size.map(String.init) { final.insert(path) }
            } else if ["stored", "duplicate", "already ingested"].contains(msg), let path, wanted.contains(path) {
                outcomes[path, default: 0] += 1
            } else if msg.hasPrefix("quarantined: ") || msg.hasPrefix("giving up") {
                // The ingest's refusals name the file in their reason, not in a field.
                for p in wanted where Self.normalized(msg).contains(p + ":") { outcomes[p, default: 0] += 1 }
            }
        }
        return wanted.allSatisfy { final.contains($0) && outcomes[$0, default: 0] >= reports[$0, default: 0] }
    }

    /// How often this start of the service's watcher reported the file at `path` settled (it
    /// needs `verbose`).
    func reports(of path: String) -> Int {
        let wanted = Self.normalized(path)
        return log.split(separator: "\n").count { line in
            guard line.contains("\"msg\":\"settled\""),
                  let entry = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: String] else { return false }
            return entry["path"].map(Self.normalized) == wanted
        }
    }

    /// A path with `//` made `/`, as the service may print the rules' folder either way.
    private static func normalized(_ path: String) -> String {
        var p = path
        while p.contains("//") { p = p.replacingOccurrences(of: "//", with: "/") }
        return p
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
    /// Jobs queued or running (`status --json`): 0 when the service has no job left to do.
    func jobsLeft() -> Int {
        guard let jobs = status()["jobs"] as? [String: Int] else { return -1 }
        return (jobs["queued"] ?? 0) + (jobs["running"] ?? 0)
    }

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
