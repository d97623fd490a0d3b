import EvidenceHTTP
import EvidenceProcess
import EvidenceStore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Logging
import Testing

/// The ownCloud/Nextcloud emulation serving clients we did not write: the desktop sync clients'
/// command-line tools (`owncloudcmd`, `nextcloudcmd`: capabilities, NG chunking, checksums) and
/// rclone's WebDAV backend with `vendor = owncloud` / `nextcloud`. Each test starts its own
/// `evidence-sandbox`, runs the client against it, and checks what the emulation stored, byte
/// for byte, and that the emulation refused none of the client's requests.
@Suite("Independent clients against the ownCloud/Nextcloud emulation", .ownThread)
struct PeerClientTests {
    func owncloudcmd() async throws {
        try await desktopSync(tool: "owncloudcmd", flavour: "owncloud")
    }

    func nextcloudcmd() async throws {
        try await desktopSync(tool: "nextcloudcmd", flavour: "nextcloud")
    }

    @Test("rclone webdav, vendor owncloud: mkdir, copy small and 40 MB files, lsjson --hash (the server's SHA-1 and MD5), deletefile")
    func rcloneOwncloud() async throws {
        try await rclone(vendor: "owncloud")
    }

    @Test("rclone webdav, vendor nextcloud: mkdir, copy small and 40 MB files, lsjson --hash (the SHA-1 rclone sent), deletefile")
    func rcloneNextcloud() async throws {
        try await rclone(vendor: "nextcloud")
    }

    // MARK: Desktop clients

    func desktopSync(tool: String, flavour: String) async throws {
        try await withPeerSandbox(flavour: flavour) { peer in
            let local = peer.dir + "/local"
            try FileManager.default.createDirectory(atPath: local + "/sub", withIntermediateDirectories: true)
            let files = [("big.bin", 110_000_000), ("small.bin", 3000), ("sub/c.txt", 17), ("Ünïcødé file.txt", 1)]
            for (name, size) in files { try randomFile(local + "/" + name, bytes: size) }
            // The client loads its system exclude list from its installed data package unless it is
            // given one: this one ignores nothing we sync.
            try "*~\n".write(toFile: peer.dir + "/exclude.lst", atomically: true, encoding: .utf8)
            let args = ["--non-interactive", "--exclude", peer.dir + "/exclude.lst", "-u", OwnCloudEmulator.user,
                        "-p", OwnCloudEmulator.password, local, peer.serverURL]
            let run = try peer.run(tool, args, timeout: 120)
            #expect(run.status == 0, "\(tool) failed: \(run.output.suffix(3000))")
            for (name, _) in files {
                #expect(try await peer.storedSHA256(name) == (try sha256(local + "/" + name)), "\(name) as the emulation holds it")
            }
            // Change two files and sync again: now the client replaces, guarded by the etags it saw
            // (If-Match on the PUT; on the assembling MOVE an If: header naming the destination).
            try randomFile(local + "/big.bin", bytes: 105_000_000)
            try randomFile(local + "/small.bin", bytes: 4000)
            let again = try peer.run(tool, args, timeout: 120)
            #expect(again.status == 0, "\(tool) failed the second time: \(again.output.suffix(3000))")
            for name in ["big.bin", "small.bin"] {
                #expect(try await peer.storedSHA256(name) == (try sha256(local + "/" + name)), "\(name), changed, as the emulation holds it")
            }
            let log = try peer.requests()
            let moves = log.filter { $0.method == "MOVE" && $0.path.hasSuffix("/.file") }
            #expect(moves.map(\.status) == [201, 204], "the big file went up in chunks, assembled new then replaced: \(moves)")
            #expect(log.contains { $0.path.hasSuffix("/ocs/v1.php/cloud/capabilities") && $0.status == 200 })
            #expect(peer.refused(log).isEmpty, "requests the emulation refused: \(peer.refused(log))")
            // Checksums: ownCloud's own SHA-1 of the bytes; on Nextcloud the one the client sent.
            let sums = try await peer.checksums("big.bin")
            #expect(sums.uppercased().contains("SHA1:" + (try sha1(local + "/big.bin")).uppercased()), "oc:checksums \(sums)")
        }
    }

    // MARK: rclone

    func rclone(vendor: String) async throws {
        try await withPeerSandbox(flavour: vendor) { peer in
            let local = peer.dir + "/local"
            try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
            try randomFile(local + "/small.bin", bytes: 3000)
            try randomFile(local + "/mid.bin", bytes: 40_000_000)
            let obscured = try peer.run("rclone", ["obscure", OwnCloudEmulator.password], timeout: 30)
            #expect(obscured.status == 0)
            let env = [
                "RCLONE_CONFIG_PEER_TYPE": "webdav",
                "RCLONE_CONFIG_PEER_URL": peer.serverURL + "/remote.php/dav/files/\(OwnCloudEmulator.user)",
                "RCLONE_CONFIG_PEER_VENDOR": vendor,
                "RCLONE_CONFIG_PEER_USER": OwnCloudEmulator.user,
                "RCLONE_CONFIG_PEER_PASS": obscured.output.trimmingCharacters(in: .whitespacesAndNewlines),
            ]
            let common = ["--config", "/dev/null", "--retries", "1", "--low-level-retries", "1"]
            func rclone(_ args: [String]) throws -> ToolRun {
                let r = try peer.run("rclone", args + common, environment: env, timeout: 60)
                #expect(r.status == 0, "rclone \(args.joined(separator: " ")): \(r.output.suffix(2000))")
                return r
            }
            _ = try rclone(["mkdir", "peer:dir/sub"])
            _ = try rclone(["copy", local, "peer:dir/sub"])
            let listing = try rclone(["lsjson", "--hash", "peer:dir/sub"])
            let entries = (try? JSONSerialization.jsonObject(with: Data(listing.output.utf8))) as? [[String: Any]] ?? []
            #expect(Set(entries.compactMap { $0["Name"] as? String }) == ["small.bin", "mid.bin"], "\(listing.output)")
            for entry in entries {
                let name = entry["Name"] as? String ?? ""
                let hashes = entry["Hashes"] as? [String: String] ?? [:]
                #expect(hashes["sha1"] == (try sha1(local + "/" + name)), "\(name): \(hashes)")
                if vendor == "owncloud" { #expect(hashes["md5"] == (try md5(local + "/" + name)), "\(name): \(hashes)") }
                #expect((entry["Size"] as? NSNumber)?.intValue == (name == "mid.bin" ? 40_000_000 : 3000))
                #expect(try await peer.storedSHA256("dir/sub/" + name) == (try sha256(local + "/" + name)), "\(name) as the emulation holds it")
            }
            _ = try rclone(["deletefile", "peer:dir/sub/small.bin"])
            let after = try rclone(["lsjson", "peer:dir/sub"])
            #expect(after.output.contains("mid.bin") && !after.output.contains("small.bin"), "\(after.output)")
            #expect(try await peer.storedSHA256("dir/sub/small.bin") == nil)
            _ = try rclone(["copyto", "peer:dir/sub/mid.bin", peer.dir + "/back.bin"])
            #expect(try sha256(peer.dir + "/back.bin") == (try sha256(local + "/mid.bin")), "mid.bin read back by rclone")
            let refused = peer.refused(try peer.requests())
            #expect(refused.isEmpty, "requests the emulation refused: \(refused)")
        }
    }
}

// MARK: Support

/// How a client run ended and what it printed (standard output and error together).
struct ToolRun {
    var status: Int32
    var output: String
}

/// One sandbox for one test, with the helpers to drive a client against it.
struct PeerSandbox {
    let dir: String
    let sandbox: SandboxProcess
    /// `http://127.0.0.1:PORT/owncloud`: what a client is configured with.
    var serverURL: String { sandbox.baseURL.absoluteString + "/owncloud" }

    /// Runs a client to its end with a clean home (no config of this machine's user), output to a
    /// log file. Past `timeout` it gets SIGTERM, then SIGKILL, and is waited for.
    func run(_ tool: String, _ args: [String], environment extra: [String: String] = [:], timeout: Double) throws -> ToolRun {
        let home = dir + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        var env = ["HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_DATA_HOME": home + "/.local/share",
                   "XDG_CACHE_HOME": home + "/.cache", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                   "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": dir]
        for (k, v) in extra { env[k] = v }
        let log = dir + "/\(tool)-\(UUID().uuidString.prefix(6)).log"
        let child = try ChildProcess(tool, args, environment: env, directory: dir, stdout: .file(log), stderr: .stdout)
        var termination = child.wait(seconds: timeout)
        if termination == nil {
            Issue.record("\(tool) still running after \(Int(timeout)) s: stopped")
            termination = child.terminate(grace: 5)
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return ToolRun(status: termination!.status, output: output)
    }

    /// The SHA-256 of a file as the emulation serves it (GET), or nil when it has none there.
    func storedSHA256(_ path: String) async throws -> String? {
        let target = dir + "/fetched-\(UUID().uuidString.prefix(8))"
        defer { unlink(target) }
        let url = serverURL + "/remote.php/dav/files/\(OwnCloudEmulator.user)/"
            + path.split(separator: "/").map { String($0).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? String($0) }
                .joined(separator: "/")
        let r = try await Self.http.send(HTTPRequest(method: "GET", url: url, headers: [("Authorization", Self.basic)], downloadTo: target))
        guard r.status == 200 else { return nil }
        return try sha256(target)
    }

    /// `oc:checksums` of a file, as a PROPFIND reports it.
    func checksums(_ path: String) async throws -> String {
        let body = #"<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:checksums/></d:prop></d:propfind>"#
        let r = try await Self.http.send(HTTPRequest(method: "PROPFIND", url: serverURL + "/remote.php/dav/files/\(OwnCloudEmulator.user)/" + path,
                                                     headers: [("Authorization", Self.basic), ("Depth", "0")], body: .data(Data(body.utf8))))
        return String(decoding: r.body, as: UTF8.self)
    }

    /// The sandbox's request log: (method, path, status).
    func requests() throws -> [(method: String, path: String, status: Int)] {
        let text = try String(contentsOfFile: dir + "/sandbox/requests.log", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard let j = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let m = j["method"] as? String, let p = j["path"] as? String else { return nil }
            return (m, p, (j["status"] as? NSNumber)?.intValue ?? -1)
        }
    }

    /// Answers that are refusals, not the ordinary WebDAV replies clients probe with: a PROPFIND
    /// of what is not there yet (404), MKCOL of an existing folder (405) or below a missing one
    /// (409, rclone then makes the parents). Our own checks (a GET of a deleted file) are left out.
    func refused(_ log: [(method: String, path: String, status: Int)]) -> [String] {
        log.filter { r in
            guard r.status >= 400 else { return false }
            switch (r.method, r.status) {
            case ("PROPFIND", 404), ("MKCOL", 405), ("MKCOL", 409), ("GET", 404): return false
            default: return true
            }
        }.map { "\($0.method) \($0.path) → \($0.status)" }
    }

    static let basic = "Basic " + Data("\(OwnCloudEmulator.user):\(OwnCloudEmulator.password)".utf8).base64EncodedString()
    static let http = HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "peer-tests"))
}

/// Where SwiftPM put the `evidence-sandbox` binary: next to the test bundle.
let sandboxExecutable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("evidence-sandbox")

func withPeerSandbox(flavour: String, _ body: (PeerSandbox) async throws -> Void) async throws {
    let dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("evidence-peer-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let sandbox = try await SandboxProcess.start(executable: sandboxExecutable, stateDirectory: dir + "/sandbox",
                                                 arguments: ["--owncloud-flavour", flavour])
    do {
        try await body(PeerSandbox(dir: dir, sandbox: sandbox))
        _ = await sandbox.stop()
    } catch {
        _ = await sandbox.stop()
        throw error
    }
}

/// `bytes` bytes from /dev/urandom, a MiB at a time.
func randomFile(_ path: String, bytes: Int) throws {
    let src = open("/dev/urandom", O_RDONLY), dst = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    defer { close(src); close(dst) }
    guard src >= 0, dst >= 0 else { throw CocoaError(.fileWriteUnknown) }
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var left = bytes
    while left > 0 {
        let n = buffer.withUnsafeMutableBytes { read(src, $0.baseAddress, min(left, 1 << 20)) }
        guard n > 0 else { throw CocoaError(.fileReadUnknown) }
        guard buffer.withUnsafeBytes({ write(dst, $0.baseAddress, n) }) == n else { throw CocoaError(.fileWriteUnknown) }
        left -= n
    }
}

func sha256(_ path: String) throws -> String { try FileHasher.hash(path: path).digest.hex }

/// SHA-1 and MD5 by openssl: computed independently of the emulation's own hashing.
func sha1(_ path: String) throws -> String { try opensslDigest("-sha1", path) }
func md5(_ path: String) throws -> String { try opensslDigest("-md5", path) }

private func opensslDigest(_ algorithm: String, _ path: String) throws -> String {
    let r = try ChildProcess.run("openssl", ["dgst", algorithm, "-r", path], timeout: 60)
    return String(r.output.split(separator: " ").first ?? "")
}

/// The long end-to-end runs of `PeerClientTests`, apart so that `make test` stays short: `make test-long`
/// runs them (and CI runs both). The bodies are `PeerClientTests`'s own, unchanged.
@Suite("Independent clients against the ownCloud/Nextcloud emulation, long runs: the desktop sync clients with 110 MB", .serialized, .ownThread)
struct PeerClientLongTests {
    @Test("owncloudcmd syncs a 110 MB file (NG chunking), small files, a subfolder and a unicode name into the ownCloud flavour")
    func owncloudcmd() async throws {
        try await PeerClientTests().owncloudcmd()
    }

    @Test("nextcloudcmd syncs a 110 MB file (NG chunking), small files, a subfolder and a unicode name into the Nextcloud flavour")
    func nextcloudcmd() async throws {
        try await PeerClientTests().nextcloudcmd()
    }
}
