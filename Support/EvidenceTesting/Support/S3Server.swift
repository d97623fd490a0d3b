import EvidenceProcess
import Foundation
import Glibc
import Synchronization

/// A real S3 server for tests: `moto_server` (PyPI `moto[server]`, which enforces Object Lock) on
/// a free loopback port, one per test process (`shared`), stopped when the process exits.
/// Buckets are made, and objects examined or attacked, by boto3 in a `python3` child: an
/// independent client, not our own code.
public final class S3Server: @unchecked Sendable {
    public let port: Int
    /// The keys to sign with: any for a server without authentication; with it, an IAM user's.
    public private(set) var accessKey = "evidence-test-access"
    public private(set) var secretKey = "evidence-test-secret-" + UUID().uuidString.prefix(8)
    /// Requests are authenticated and their SigV4 signatures verified (moto's IAM mode).
    public let verifiesSignatures: Bool
    public let region = "us-east-1"
    public let directory: String
    private let server: ChildProcess
    private let counter = Mutex(0)

    /// The CA that signed the server's certificate, when it serves HTTPS (`tls`).
    public let caFile: String?

    public var endpoint: String { "\(caFile == nil ? "http" : "https")://127.0.0.1:\(port)" }

    /// nil when moto_server is not installed (the reason is in `unavailable`).
    public static let shared: S3Server? = {
        do { return try S3Server() } catch {
            unavailableReason.withLock { $0 = "\(error)" }
            return nil
        }
    }()
    /// A second server that verifies every request's signature (`INITIAL_NO_AUTH_ACTION_COUNT`):
    /// its first three requests make an IAM user with an access key and an allow-all policy, every
    /// later one must be signed with that key.
    public static let verifying: S3Server? = {
        do { return try S3Server(verifySignatures: true) } catch {
            unavailableReason.withLock { $0 = "\(error)" }
            return nil
        }
    }()
    /// A third server on HTTPS, its certificate (for 127.0.0.1) signed by a CA of its own (`caFile`).
    public static let tls: S3Server? = {
        do { return try S3Server(tls: true) } catch {
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

    /// `moto_server` on PATH, else in `$XDG_CACHE_HOME/evidence/moto` (default `~/.cache`; the venv scripts/deps.sh makes).
    public static func binary() -> String? {
        var candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/moto_server" }
        let cache = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory() + "/.cache"
        candidates.append(cache + "/evidence/moto/bin/moto_server")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The python3 that has boto3: the one beside `moto_server` when it is in a venv.
    public static func python() -> String {
        if let moto = binary() {
            let beside = (moto as NSString).deletingLastPathComponent + "/python3"
            if FileManager.default.isExecutableFile(atPath: beside), !moto.contains("/shims/") { return beside }
        }
        return "python3"
    }

    init(verifySignatures: Bool = false, tls: Bool = false) throws {
        verifiesSignatures = verifySignatures
        guard let moto = Self.binary() else {
            throw Failure(description: "moto_server is not installed (scripts/deps.sh installs moto[server] with pip)")
        }
        directory = NSTemporaryDirectory() + "evidence-s3-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var tlsArguments: [String] = []
        if tls {
            let d = directory
            for step in [["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/ca.key", "-out", d + "/ca.pem", "-days", "2",
                          "-subj", "/CN=evidence S3 test CA"],
                         ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/server.key", "-out", d + "/server.csr", "-subj", "/CN=127.0.0.1"],
                         ["x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key", "-CAcreateserial",
                          "-out", d + "/server.pem", "-days", "2", "-extfile", d + "/ext"]] {
                try "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n".write(toFile: d + "/ext", atomically: true, encoding: .utf8)
                let r = try ChildProcess.run("openssl", step, timeout: 60)
                guard r.status == 0 else { throw Failure(description: "openssl \(step[0]) failed: \(r.output.suffix(400))") }
            }
            tlsArguments = ["-s", "-c", d + "/server.pem", "-k", d + "/server.key"]
            caFile = d + "/ca.pem"
        } else {
            caFile = nil
        }
        var lastError = ""
        for _ in 0..<10 {
            let candidate = Int.random(in: 20_000...60_000)
            let env = verifySignatures ? ChildProcess.environment(["INITIAL_NO_AUTH_ACTION_COUNT": "3"]) : nil
            let child = try ChildProcess(moto, ["-H", "127.0.0.1", "-p", String(candidate)] + tlsArguments, environment: env, directory: directory,
                                         stdout: .file(directory + "/server.log"), stderr: .stdout)
            let deadline = Date(timeIntervalSinceNow: 60)
            var ready = false
            while child.isRunning, Date() < deadline {
                // A connection alone could be another program's listener on that random port
                // (then moto fails to bind and exits): ready only once moto itself answers.
                if Self.accepts(port: candidate), Self.answersAsMoto(port: candidate, caFile: caFile), child.isRunning { ready = true; break }
                usleep(100_000)
            }
            if ready {
                server = child
                port = candidate
                let base = directory
                let stop: @Sendable () -> Void = { [child] in
                    child.signal(SIGTERM)
                    if child.wait(seconds: 5) == nil { child.signal(SIGKILL); _ = child.wait() }
                    try? FileManager.default.removeItem(atPath: base)
                }
                Self.atExit.withLock { $0.append(stop) }
                if !Self.registered.exchange(true, ordering: .relaxed) {
                    atexit { S3Server.atExit.withLock { $0 }.forEach { $0() } }
                }
                if verifySignatures {
                    let keys = try boto3("""
                        import json
                        iam = boto3.client("iam", endpoint_url=os.environ["S3_ENDPOINT"])
                        iam.create_user(UserName="evidence")
                        k = iam.create_access_key(UserName="evidence")["AccessKey"]
                        iam.put_user_policy(UserName="evidence", PolicyName="all", PolicyDocument=json.dumps(
                            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
                        print(k["AccessKeyId"], k["SecretAccessKey"])
                        """).split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                    guard keys.count == 2 else { throw Failure(description: "no IAM key from moto: \(keys)") }
                    accessKey = keys[0]
                    secretKey = keys[1]
                }
                return
            }
            child.signal(SIGKILL)
            _ = child.wait()
            lastError = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)).map { String($0.suffix(600)) } ?? ""
        }
        throw Failure(description: "moto_server did not start: \(lastError)")
    }

    private static let atExit = Mutex<[@Sendable () -> Void]>([])
    private static let registered = Atomic(false)

    /// Whether the server on `port` answers as moto does (over TLS with `caFile`): its own API's
    /// state, `GET /moto-api/data.json`, a JSON object; no AWS action, so a server that counts
    /// unauthenticated actions (`INITIAL_NO_AUTH_ACTION_COUNT`) counts none.
    private static func answersAsMoto(port: Int, caFile: String?) -> Bool {
        let url = "\(caFile == nil ? "http" : "https")://127.0.0.1:\(port)/moto-api/data.json"
        let r = try? ChildProcess.run("curl", ["-s", "-f", "--max-time", "5"] + (caFile.map { ["--cacert", $0] } ?? []) + [url], timeout: 10)
        return r?.status == 0 && (r?.output.hasPrefix("{") ?? false)
    }

    private static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// The environment for a child that talks to this server (boto3, `evidence` with `*_env` keys).
    public func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var base = ["S3_ENDPOINT": endpoint, "AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey,
                    "AWS_DEFAULT_REGION": region, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"]
        if let caFile { base["AWS_CA_BUNDLE"] = caFile }
        return ChildProcess.environment(base.merging(extra) { $1 })
    }

    /// Runs a boto3 script: `s3` is a client of this server, `args` is `sys.argv[1:]`; returns what it printed.
    @discardableResult
    public func boto3(_ script: String, _ args: [String] = []) throws -> String {
        let prelude = """
        import sys, os, json, boto3, datetime
        from botocore.config import Config
        s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], config=Config(s3={"addressing_style": "path"}))
        args = sys.argv[1:]

        """
        let r = try ChildProcess.run(Self.python(), ["-c", prelude + script] + args, environment: environment(), timeout: 120)
        guard r.status == 0 else { throw Failure(description: "boto3 script failed: \(r.output.suffix(800))") }
        return r.output
    }

    /// A new bucket (with Object Lock, hence versioning, unless `objectLock` is false); its name.
    public func makeBucket(objectLock: Bool = true) throws -> String {
        let n = counter.withLock { $0 += 1; return $0 }
        let name = "evidence-\(getpid())-\(n)"
        try boto3("s3.create_bucket(Bucket=args[0], ObjectLockEnabledForBucket=(args[1] == 'yes'))", [name, objectLock ? "yes" : "no"])
        return name
    }
}
