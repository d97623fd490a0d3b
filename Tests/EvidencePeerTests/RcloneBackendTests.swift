import EvidenceProcess
import EvidenceSandbox
import EvidenceStore
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// rclone's own `dropbox`, `box` and `sharefile` backends (Debian's `rclone`, which works
/// against the live services) against the emulations, by the providers' real host names.
///
/// rclone has no setting for Dropbox's or Box's hosts, so each test makes a network namespace
/// of its own: loopback only, an `/etc/netns/NAME/hosts` that maps `api.dropboxapi.com`,
/// `upload.box.com`, … to 127.0.0.1, and inside it the sandbox, a TLS front on :443 (socat,
/// with a certificate from a CA the test makes) and rclone with `--ca-cert`. Nothing leaves
/// the machine. ShareFile has an `endpoint` setting, but its token URL is derived from it, so
/// it goes the same way with `endpoint = https://sandbox.sf-api.com`.
///
/// rclone is given a token as JSON whose access token has expired and whose refresh token is
/// the emulation's: its first call refreshes at the provider's token URL (no browser) and
/// saves the new token in the config file the test wrote, as it would for a real account.
@Suite("rclone's dropbox, box and sharefile backends against the emulations, by the providers' host names",
       .enabled(if: ProviderNamespace.available, "`ip netns add` is refused here (needs root and network namespaces)"), .ownThread)
struct RcloneBackendTests {
    @Test("rclone dropbox: mkdir, copy (batched 1 MiB chunks and unbatched), lsjson --hash is our content_hash, link, cat, overwrite, copyto, deletefile")
    func dropbox() async throws {
        try await exercise(Backend(
            name: "dropbox", hashKind: "dropbox", bigSize: 3_500_000,
            config: ["client_id": DropboxEmulator.appKey, "client_secret": DropboxEmulator.appSecret, "chunk_size": "1Mi"],
            refreshToken: DropboxEmulator.refreshToken,
            // Without batching, both again: files/upload, and start, append_v2 …, finish instead of finish_batch_v2.
            extraCopy: ["--dropbox-batch-mode", "off"], link: true,
            expectedRequests: ["/dropbox/api/oauth2/token", "/dropbox/content/2/files/upload_session/append_v2", "/dropbox/content/2/files/upload",
                               "/dropbox/api/2/files/upload_session/finish_batch_v2", "/dropbox/content/2/files/upload_session/finish",
                               "/dropbox/api/2/files/list_folder", "/dropbox/api/2/sharing/create_shared_link_with_settings"],
            hash: { try FileHasher.dropboxContentHash(path: $0) }))
    }

    @Test("rclone box: mkdir, copy (a small file and a 52 MB one in upload-session parts), lsjson --hash is the SHA-1, link, cat, overwrite (a new version), copyto, deletefile")
    func box() async throws {
        try await exercise(Backend(
            name: "box", hashKind: "sha1", bigSize: 52_500_000,
            // list_chunk 1: listings page by marker, one entry a page.
            config: ["client_id": "sandbox-box-client", "client_secret": "sandbox-box-secret", "upload_cutoff": "50Mi",
                     "list_chunk": "1"],
            refreshToken: "sandbox-box-refresh", extraCopy: nil, link: true,
            expectedRequests: ["/box/api/oauth2/token", "/box/upload/api/2.0/files/upload_sessions",
                               "/box/upload/api/2.0/files/content"],
            hash: { try sha1($0) }))
    }

    /// No `link`: rclone 1.60's sharefile backend has no public links ("doesn't support public links").
    @Test("rclone sharefile: mkdir, copy (a small file and one in 1 MiB chunks sent in parallel), lsjson --hash is the MD5, cat, overwrite, copyto, deletefile")
    func sharefile() async throws {
        try await exercise(Backend(
            name: "sharefile", hashKind: "md5", bigSize: 3_500_000,
            config: ["client_id": "sandbox-sharefile-client", "client_secret": "sandbox-sharefile-secret",
                     "endpoint": "https://sandbox.sf-api.com", "upload_cutoff": "1Mi", "chunk_size": "1Mi"],
            refreshToken: nil, extraCopy: nil, link: false,
            expectedRequests: ["/sharefile/oauth/token", "/sharefile/sf/v3/", "/sharefile/upload/"],
            hash: { try md5($0) }))
    }

    struct Backend {
        var name: String
        /// The hash rclone reports for this backend in `lsjson --hash`.
        var hashKind: String
        /// Large enough to go up in several chunks with the chunk settings in `config` (sent twice:
        /// new, then over itself).
        var bigSize: Int
        var config: [String: String]
        /// The emulation's refresh token; nil: rclone gets one made with ShareFile's password grant.
        var refreshToken: String?
        /// Flags for a second upload of both files (as `*-again.bin`) by another path through the backend, if any.
        var extraCopy: [String]?
        /// rclone's backend makes public links.
        var link: Bool
        /// Request paths the run must have sent with success (a prefix when it ends in `/`):
        /// proof it took the paths meant.
        var expectedRequests: [String]
        /// The hash of a local file, computed by us, to compare with what rclone reports.
        var hash: (String) throws -> String
    }

    func exercise(_ backend: Backend) async throws {
        try await withProviderNamespace { ns in
            let local = ns.dir + "/local"
            try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
            try randomFile(local + "/small.bin", bytes: 3000)
            try randomFile(local + "/big.bin", bytes: backend.bigSize)
            // An access token long expired and the emulation's refresh token: rclone refreshes on
            // its first call, at the provider's token URL, and writes the new token back here.
            let refresh = try backend.refreshToken ?? ns.shareFileRefreshToken()
            let token = #"{"access_token":"expired","token_type":"Bearer","refresh_token":"\#(refresh)","expiry":"2001-01-01T00:00:00Z"}"#
            var conf = "[remote]\ntype = \(backend.name)\ntoken = \(token)\n"
            for (key, value) in backend.config.sorted(by: { $0.key < $1.key }) { conf += "\(key) = \(value)\n" }
            try conf.write(toFile: ns.dir + "/rclone.conf", atomically: true, encoding: .utf8)

            func rclone(_ args: [String]) throws -> NamespaceRun {
                let r = try ns.run(["rclone"] + args + ["--config", ns.dir + "/rclone.conf", "--ca-cert", ns.dir + "/ca.pem",
                                                         "--retries", "1", "--low-level-retries", "2", "-v"], timeout: 60)
                #expect(r.status == 0, "rclone \(args.joined(separator: " ")): \(r.stderr.suffix(3000))")
                return r
            }
            _ = try rclone(["mkdir", "remote:dir/sub"])
            _ = try rclone(["copy", local, "remote:dir/sub"])
            if let extra = backend.extraCopy {
                for name in ["small", "big"] { _ = try rclone(["copyto", local + "/\(name).bin", "remote:dir/sub/\(name)-again.bin"] + extra) }
            }
            let listing = try rclone(["lsjson", "--hash", "remote:dir/sub"])
            let entries = (try? JSONSerialization.jsonObject(with: Data(listing.output.utf8))) as? [[String: Any]] ?? []
            let names: Set<String> = backend.extraCopy == nil ? ["small.bin", "big.bin"] : ["small.bin", "big.bin", "small-again.bin", "big-again.bin"]
            #expect(Set(entries.compactMap { $0["Name"] as? String }) == names, "\(listing.output)")
            for entry in entries {
                let name = entry["Name"] as? String ?? ""
                let source = local + "/" + name.replacingOccurrences(of: "-again", with: "")
                let hashes = entry["Hashes"] as? [String: String] ?? [:]
                #expect(hashes[backend.hashKind] == (try backend.hash(source)), "\(name): \(hashes)")
                #expect((entry["Size"] as? NSNumber)?.intValue == (name.hasPrefix("small") ? 3000 : backend.bigSize), "\(name)")
            }
            if backend.link {
                let link = try rclone(["link", "remote:dir/sub/big.bin"])
                #expect(link.output.contains("https://"), "a share link: \(link.output)")
            }
            // Read back: the small file to stdout, the big one to a file.
            let cat = try rclone(["cat", "remote:dir/sub/small.bin"])
            #expect(try Data(contentsOf: URL(fileURLWithPath: cat.stdoutPath)) == (try Data(contentsOf: URL(fileURLWithPath: local + "/small.bin"))),
                    "small.bin read back by rclone cat")
            // Overwrite: changed files replace those there, the big one in chunks again (Box: a new
            // version of the file, by multipart upload and by upload session).
            try randomFile(ns.dir + "/changed.bin", bytes: 4000)
            _ = try rclone(["copyto", ns.dir + "/changed.bin", "remote:dir/sub/small.bin"])
            let again = try rclone(["cat", "remote:dir/sub/small.bin"])
            #expect(try Data(contentsOf: URL(fileURLWithPath: again.stdoutPath)) == (try Data(contentsOf: URL(fileURLWithPath: ns.dir + "/changed.bin"))),
                    "small.bin, overwritten, read back by rclone cat")
            try randomFile(ns.dir + "/changed-big.bin", bytes: backend.bigSize)
            _ = try rclone(["copyto", ns.dir + "/changed-big.bin", "remote:dir/sub/big.bin"])
            _ = try rclone(["copyto", "remote:dir/sub/big.bin", ns.dir + "/back.bin"])
            #expect(try sha256(ns.dir + "/back.bin") == (try sha256(ns.dir + "/changed-big.bin")), "big.bin, overwritten, read back by rclone")
            _ = try rclone(["deletefile", "remote:dir/sub/small.bin"])
            let after = try rclone(["lsjson", "remote:dir/sub"])
            #expect(after.output.contains("big.bin") && !after.output.contains("small.bin"), "\(after.output)")

            let log = try ns.requests()
            for path in backend.expectedRequests {
                #expect(log.contains { (path.hasSuffix("/") ? $0.path.hasPrefix(path) : $0.path == path) && $0.status < 300 }, "no successful request to \(path): \(log.map { "\($0.method) \($0.path) \($0.status)" })")
            }
            let refused = log.filter { $0.status >= 400 && !ordinaryRefusal($0, backend: backend.name) }
            #expect(refused.isEmpty, "requests the emulation refused: \(refused.map { "\($0.method) \($0.path) → \($0.status)" })")
        }
    }

    /// Answers that are not refusals of what the client meant to do: the service saying "not
    /// there (yet)" to a client that looks before it creates, and the token endpoint refusing
    /// client credentials in a Basic header. Go's oauth2 package (rclone's) tries that first,
    /// then the form; Box and ShareFile document client_id/client_secret in the form only (Go's
    /// oauth2 used to list app.box.com among the servers that refuse the header).
    func ordinaryRefusal(_ r: LoggedRequest, backend: String) -> Bool {
        switch backend {
        // get_metadata / list_folder of what does not exist yet: 409 path/not_found.
        case "dropbox": return r.status == 409 && (r.path.hasSuffix("/files/get_metadata") || r.path.hasSuffix("/files/list_folder"))
        case "box": return r.status == 400 && r.path == "/box/api/oauth2/token"
        case "sharefile":
            return (r.status == 404 && r.method == "GET" && r.path.hasSuffix("/ByPath"))
                || (r.status == 400 && r.path == "/sharefile/oauth/token")
        default: return false
        }
    }
}

// MARK: Network namespace

/// How a command in the namespace ended: its standard output (also kept in a file, for bytes)
/// and standard error.
struct NamespaceRun {
    var status: Int32
    var stdoutPath: String
    var output: String
    var stderr: String
}

struct LoggedRequest {
    var method: String
    var path: String
    var status: Int
}

/// One network namespace made for one test, with the providers' host names on its loopback,
/// a test CA, the sandbox and a TLS front in it. Removed (with `/etc/netns/NAME`) when the
/// test ends, passed or failed.
final class ProviderNamespace {
    let name: String
    let dir: String
    private var sandbox: SandboxProcess?
    private var front: ChildProcess?

    /// The sandbox's own address, reachable from inside the namespace only.
    var sandboxURL: String? { sandbox?.baseURL.absoluteString }

    /// True when this machine lets us make a network namespace (root, and a kernel that allows it).
    static let available: Bool = {
        let probe = "evp-probe-\(getpid())"
        guard let made = try? ChildProcess.run("ip", ["netns", "add", probe], timeout: 20), made.termination == .exited(0) else {
            return false
        }
        _ = try? ChildProcess.run("ip", ["netns", "del", probe], timeout: 20)
        try? FileManager.default.removeItem(atPath: "/etc/netns/" + probe)
        return true
    }()

    init(dir: String) {
        self.dir = dir
        name = "evp-" + UUID().uuidString.prefix(8).lowercased()
    }

    /// Makes the namespace, its hosts file and the certificates.
    func create() throws {
        try Self.must("ip", ["netns", "add", name])
        try FileManager.default.createDirectory(atPath: "/etc/netns/" + name, withIntermediateDirectories: true)
        let hosts = "127.0.0.1 localhost\n" + PublicHosts.hostNames.map { "127.0.0.1 \($0)\n" }.joined()
        try hosts.write(toFile: "/etc/netns/\(name)/hosts", atomically: true, encoding: .utf8)
        try Self.must("ip", ["-n", name, "link", "set", "lo", "up"])
        try makeCertificates()
    }

    /// A CA, and a server certificate it signs for every provider host name (openssl).
    private func makeCertificates() throws {
        let ca = dir + "/ca", server = dir + "/server"
        try Self.must("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca + ".key", "-out", ca + ".pem",
                                  "-days", "2", "-subj", "/CN=evidence peer test CA",
                                  "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
        try Self.must("openssl", ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", server + ".key", "-out", server + ".csr",
                                  "-subj", "/CN=" + PublicHosts.hostNames[0]])
        let names = PublicHosts.hostNames.map { "DNS:" + $0 }.joined(separator: ",")
        try "subjectAltName=\(names)\nextendedKeyUsage=serverAuth\n".write(toFile: dir + "/server.ext", atomically: true, encoding: .utf8)
        try Self.must("openssl", ["x509", "-req", "-in", server + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
                                  "-CAcreateserial", "-out", server + ".pem", "-days", "2", "-extfile", dir + "/server.ext"])
    }

    /// Starts the sandbox in the namespace, then the TLS front on :443 forwarding to it.
    func start() async throws {
        let sandbox = try await SandboxProcess.start(executable: sandboxExecutable, stateDirectory: dir + "/sandbox",
                                                     launcher: ["ip", "netns", "exec", name])
        self.sandbox = sandbox
        // Started again (at most three times) when it does not accept a connection within 20 s:
        // in full `cli` passes on a loaded machine the first front once never answered while
        // the same test alone always did. Looked at once more after each deadline.
        var seen = ""
        for attempt in 1...3 {
            let started = try ChildProcess("ip", ["netns", "exec", name, "socat",
                                                  "OPENSSL-LISTEN:443,fork,reuseaddr,cert=\(dir)/server.pem,key=\(dir)/server.key,verify=0",
                                                  "TCP:127.0.0.1:\(sandbox.port)"],
                                           stdout: .file(dir + "/socat.log"), stderr: .stdout, newProcessGroup: true)
            front = started
            let deadline = Date().addingTimeInterval(20)
            while true {
                // A TCP connection to :443 inside the namespace: the front is there.
                let probe = try ChildProcess.run("ip", ["netns", "exec", name, "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/443"], timeout: 15)
                if probe.termination == .exited(0) { return }
                seen = "attempt \(attempt): \(probe.output.suffix(200))"
                guard started.isRunning, Date() < deadline else { break }
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            started.signalGroup(SIGKILL)
            _ = started.wait()
        }
        let log = (try? String(contentsOfFile: dir + "/socat.log", encoding: .utf8)) ?? ""
        throw NamespaceError("the TLS front did not accept a connection on :443 after 3 starts (\(seen)): \(log.suffix(1000))")
    }

    /// A ShareFile refresh token, from the password grant at the token URL rclone will use
    /// (ShareFile has no long-lived token to start from; rclone cannot do this grant itself).
    func shareFileRefreshToken() throws -> String {
        let r = try run(["curl", "-sS", "--cacert", dir + "/ca.pem", "-d", "grant_type=password",
                         "-d", "client_id=sandbox-sharefile-client", "-d", "client_secret=sandbox-sharefile-secret",
                         "--data-urlencode", "username=sandbox@example.org", "-d", "password=sandbox-password",
                         "https://sandbox.sf-api.com/oauth/token"], timeout: 30)
        guard let j = try? JSONSerialization.jsonObject(with: Data(r.output.utf8)) as? [String: Any],
              let token = j["refresh_token"] as? String else {
            throw NamespaceError("ShareFile password grant: \(r.output.suffix(300)) \(r.stderr.suffix(300))")
        }
        return token
    }

    /// Runs a command in the namespace to its end, with a clean home, standard output and
    /// standard error to files of their own. Past `timeout` it is stopped.
    func run(_ command: [String], timeout: Double) throws -> NamespaceRun {
        let home = dir + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let env = ["HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_CACHE_HOME": home + "/.cache",
                   "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin",
                   "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": dir]
        // Named after the program, not its path (an absolute one would name a folder that is not there).
        let log = dir + "/\((command[0] as NSString).lastPathComponent)-\(UUID().uuidString.prefix(6))"
        let child = try ChildProcess("ip", ["netns", "exec", name] + command, environment: env, directory: dir,
                                     stdout: .file(log + ".out"), stderr: .file(log + ".err"))
        var termination = child.wait(seconds: timeout)
        if termination == nil {
            Issue.record("\(command.prefix(3).joined(separator: " ")) still running after \(Int(timeout)) s: stopped")
            termination = child.terminate(grace: 5)
        }
        return NamespaceRun(status: termination!.status, stdoutPath: log + ".out",
                            output: (try? String(contentsOfFile: log + ".out", encoding: .utf8)) ?? "",
                            stderr: (try? String(contentsOfFile: log + ".err", encoding: .utf8)) ?? "")
    }

    /// The sandbox's request log (paths as routed: `/dropbox/api/2/…`).
    func requests() throws -> [LoggedRequest] {
        let text = try String(contentsOfFile: dir + "/sandbox/requests.log", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard let j = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let m = j["method"] as? String, let p = j["path"] as? String else { return nil }
            return LoggedRequest(method: m, path: p, status: (j["status"] as? NSNumber)?.intValue ?? -1)
        }
    }

    /// Stops what runs in the namespace and removes it.
    func remove() async {
        if let front {
            front.signalGroup(SIGTERM)
            if front.wait(seconds: 5) == nil { front.signalGroup(SIGKILL); _ = front.wait() }
        }
        if let sandbox { _ = await sandbox.stop() }
        _ = try? ChildProcess.run("ip", ["netns", "del", name], timeout: 20)
        try? FileManager.default.removeItem(atPath: "/etc/netns/" + name)
    }

    private static func must(_ tool: String, _ args: [String]) throws {
        let r = try ChildProcess.run(tool, args, timeout: 60)
        guard r.termination == .exited(0) else { throw NamespaceError("\(tool) \(args.prefix(4).joined(separator: " ")): \(r.output.suffix(500))") }
    }
}

struct NamespaceError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func withProviderNamespace(_ body: (ProviderNamespace) async throws -> Void) async throws {
    let dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("evidence-rclone-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let ns = ProviderNamespace(dir: dir)
    do {
        try ns.create()
        try await ns.start()
        try await body(ns)
        await ns.remove()
    } catch {
        await ns.remove()
        throw error
    }
}
