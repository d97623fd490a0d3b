import EvidenceProcess
import Foundation
import Glibc
import Synchronization

/// A real PostgreSQL server for tests: a new cluster (`initdb`) in a temp folder, started on a
/// free loopback port with password (SCRAM) authentication for the user `evidence`.
///
/// `initdb` refuses to run as root, so when the tests run as root the cluster belongs to the
/// `postgres` account (made by Debian's postgresql package; `nobody` otherwise) and the server
/// runs as that account (`setpriv`). One server serves a whole test process (`shared`); each
/// test takes a database of its own (`makeDatabase()`). The server is stopped when the process
/// exits. `fsync=off`: this server's own crash safety is not what the tests examine.
public final class PostgresServer: @unchecked Sendable {
    public let port: Int
    public let user = "evidence"
    public let password: String
    public let directory: String
    private let server: ChildProcess
    private let counter = Mutex(0)

    /// nil when no PostgreSQL server binaries are installed (the reason is in `unavailable`).
    public static let shared: PostgresServer? = {
        do { return try PostgresServer() } catch {
            unavailableReason.withLock { $0 = "\(error)" }
            return nil
        }
    }()
    private static let unavailableReason = Mutex("")
    public static var unavailable: String { unavailableReason.withLock { $0 } }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    public static func binaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        return versions.last.map { "\(root)/\($0)/bin" }.flatMap { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") ? $0 : nil }
    }

    init() throws {
        guard let bin = Self.binaries() else { throw Failure(description: "no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql)") }
        password = "pw-" + UUID().uuidString.prefix(12)
        let base = NSTemporaryDirectory() + "evidence-pg-" + UUID().uuidString.prefix(8)
        directory = base
        let data = base + "/data", sockets = base + "/sockets"
        try FileManager.default.createDirectory(atPath: sockets, withIntermediateDirectories: true)
        try Data((password + "\n").utf8).write(to: URL(fileURLWithPath: base + "/pwfile"))
        let account = getuid() == 0 ? (getpwnam("postgres") != nil ? "postgres" : "nobody") : nil
        var prefix: [String] = []
        if let account, let pw = getpwnam(account) {
            for path in [base, sockets, base + "/pwfile"] { chown(path, pw.pointee.pw_uid, pw.pointee.pw_gid) }
            prefix = ["setpriv", "--reuid=\(account)", "--regid=\(pw.pointee.pw_gid)", "--clear-groups", "--"]
        }
        func command(_ tool: String, _ args: [String]) -> (String, [String]) {
            prefix.isEmpty ? (bin + "/" + tool, args) : (prefix[0], Array(prefix.dropFirst()) + [bin + "/" + tool] + args)
        }
        let (initExe, initArgs) = command("initdb", ["-D", data, "-U", "evidence", "--pwfile=" + base + "/pwfile",
                                                     "--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        let made = try ChildProcess.run(initExe, initArgs, directory: base, timeout: 120)
        guard made.status == 0 else { throw Failure(description: "initdb failed: \(made.output.suffix(600))") }
        var lastError = ""
        for _ in 0..<10 {
            let candidate = Int.random(in: 20_000...60_000)
            let (exe, args) = command("postgres", ["-D", data, "-p", String(candidate), "-k", sockets,
                                                   "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                                                   "-c", "max_connections=200", "-c", "log_min_messages=warning",
                                                   // Each line names its database: a test finds its own errors.
                                                   "-c", "log_line_prefix=%m [%p] %d "])
            let child = try ChildProcess(exe, args, directory: base, stdout: .file(base + "/server.log"), stderr: .stdout)
            let deadline = Date(timeIntervalSinceNow: 60)
            var ready = false
            while child.isRunning, Date() < deadline {
                let probe = try? ChildProcess.run(bin + "/pg_isready", ["-h", "127.0.0.1", "-p", String(candidate)], timeout: 10)
                if probe?.status == 0 { ready = true; break }
                usleep(100_000)
            }
            if ready {
                server = child
                port = candidate
                let stop: @Sendable () -> Void = { [child] in
                    child.signal(SIGINT)
                    _ = child.wait(seconds: 10)
                    try? FileManager.default.removeItem(atPath: base)
                }
                Self.atExit.withLock { $0.append(stop) }
                if !Self.registered.exchange(true, ordering: .relaxed) {
                    atexit { PostgresServer.atExit.withLock { $0 }.forEach { $0() } }
                }
                return
            }
            child.signal(SIGKILL)
            _ = child.wait()
            lastError = (try? String(contentsOfFile: base + "/server.log", encoding: .utf8)).map { String($0.suffix(600)) } ?? ""
        }
        throw Failure(description: "postgres did not start: \(lastError)")
    }

    private static let atExit = Mutex<[@Sendable () -> Void]>([])
    private static let registered = Atomic(false)

    /// The server's log (its stderr): every line starts with the time, the process id and the
    /// database (`log_line_prefix`), and errors are written before the client is answered.
    public var log: String { (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "" }

    /// A new, empty database owned by `evidence`; its name.
    public func makeDatabase() throws -> String {
        let n = counter.withLock { $0 += 1; return $0 }
        let name = "t\(getpid())_\(n)"
        try psql("CREATE DATABASE \(name)")
        return name
    }

    /// Runs SQL with `psql` as `evidence` (for tests that play an attacker with database access).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        guard let bin = Self.binaries() else { throw Failure(description: "no psql") }
        let psqlPath = FileManager.default.isExecutableFile(atPath: bin + "/psql") ? bin + "/psql" : "psql"
        let r = try ChildProcess.run(psqlPath, ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port),
                                                "-U", user, "-d", database, "-c", sql],
                                     environment: ChildProcess.environment(["PGPASSWORD": password]), timeout: 60)
        guard r.status == 0 else { throw Failure(description: "psql: \(r.output.suffix(400))") }
        return r.output
    }
}
