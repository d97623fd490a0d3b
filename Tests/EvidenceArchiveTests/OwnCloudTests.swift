import EvidenceArchive
import EvidenceCore
import EvidenceHTTP
import EvidenceProcess
import EvidenceStore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Logging
import Testing

/// ownCloud/Nextcloud specifics the conformance suite does not reach: how a chunked upload is
/// guarded, 423 Locked, folders shared between workers, and which server's checksums prove anything.
@Suite("ownCloud provider against the emulation", .serialized)
struct OwnCloudProviderTests {
    /// The requests the sandbox logged: (method, path, status).
    static func requests(_ h: Harness) throws -> [(method: String, path: String, status: Int)] {
        let text = try String(contentsOfFile: h.dir.path + "/sandbox/requests.log", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard let j = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let m = j["method"] as? String, let p = j["path"] as? String else { return nil }
            return (m, p, (j["status"] as? NSNumber)?.intValue ?? -1)
        }
    }

    /// A client whose retries wait milliseconds, not seconds.
    static func quickClient() -> HTTPClient {
        HTTPClient(configuration: HTTPClientConfiguration(retry: RetryPolicy(maxAttempts: 5, base: 0.02, cap: 0.1)),
                   logger: Logger(label: "owncloud-tests"))
    }

    static func provider(_ h: Harness, http: HTTPClient = quickClient(), chunkSize: Int64 = 1 << 20) -> OwnCloudProvider {
        OwnCloudProvider(account: "oc", url: h.sandbox!.baseURL.absoluteString + "/owncloud", user: "sandbox",
                         password: "sandbox-app-password", baseURL: nil, http: http, chunkSize: chunkSize)
    }

    /// Arms one of the sandbox's quirks (`/_sandbox/quirk`) for the next `count` times.
    static func arm(_ h: Harness, _ quirk: String, count: String = "1") async throws {
        let r = try await quickClient().execute(HTTPRequest(
            method: "POST", url: h.sandbox!.baseURL.absoluteString + "/_sandbox/quirk?quirk=\(quirk)&count=\(count)"))
        #expect(r.status == 200, "arming \(quirk)")
    }

    /// A small file of `bytes` uploaded to `name` by `p`.
    static func put(_ p: OwnCloudProvider, _ h: Harness, _ name: String, bytes: Int) async throws {
        let local = h.dir.file(name, bytes: bytes)
        _ = try await p.upload(local: local, size: Int64(bytes), hash: try hex(local, .sha1), to: name, progress: nil)
    }

    /// A file of `size` random bytes whose chunked upload to `path` in 1 MiB chunks was stopped
    /// (its task cancelled) once `chunks` chunks arrived: what a killed process leaves on the
    /// server. Returns the local file and its SHA-1.
    static func stoppedUpload(_ h: Harness, _ path: String, size: Int, chunks: Int) async throws -> (local: String, sha1: String) {
        let local = h.dir.file(path, bytes: size)
        let sha1 = try hex(local, .sha1)
        let first = provider(h)
        let attempt = Task {
            try await first.upload(local: local, size: Int64(size), hash: sha1, to: path, progress: { at in
                if at == Int64(chunks) << 20 { while !Task.isCancelled { usleep(1_000) } }
            })
        }
        #expect(await waitUntil(timeout: 30) { (try? requests(h).filter { $0.method == "PUT" }.count) ?? 0 >= chunks })
        attempt.cancel()
        _ = await attempt.result
        return (local, sha1)
    }

    @Test("a chunked upload is assembled with Overwrite: F, not If-None-Match: * (which Sabre judges against .file)")
    func chunkedAssemblyGuard() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            let local = h.dir.file("big.bin", bytes: (3 << 20) + 5)
            let sha1 = try hex(local, .sha1)
            _ = try await p.upload(local: local, size: (3 << 20) + 5, hash: sha1, to: "big.bin", progress: nil)
            #expect(try await p.stat("big.bin")?.hash == sha1)
            let moves = try Self.requests(h).filter { $0.method == "MOVE" }
            #expect(moves.count == 1 && moves.first?.path.hasSuffix("/.file") == true && moves.first?.status == 201, "\(moves)")
        }
    }

    @Test("two chunked uploads racing to one path: one file lands, the other upload is a conflict")
    func chunkedRace() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            let size = (2 << 20) + 1
            let a = h.dir.file("a.bin", bytes: size), b = h.dir.file("b.bin", bytes: size)
            let ha = try hex(a, .sha1), hb = try hex(b, .sha1)
            async let first: Result<RemoteFile, ArchiveError> = Self.result { try await p.upload(local: a, size: Int64(size), hash: ha, to: "race.bin", progress: nil) }
            async let second: Result<RemoteFile, ArchiveError> = Self.result { try await p.upload(local: b, size: Int64(size), hash: hb, to: "race.bin", progress: nil) }
            let results = await [first, second]
            let won = results.filter { if case .success = $0 { return true } else { return false } }.count
            let conflicts = results.filter { if case .failure(let e) = $0 { return e.kind == .conflict } else { return false } }.count
            #expect(won == 1 && conflicts == 1, "\(results)")
            let stored = try #require(try await p.stat("race.bin"))
            if case .success = results[0] { #expect(stored.hash == ha) } else { #expect(stored.hash == hb) }
        }
    }

    static func result(_ body: () async throws -> RemoteFile) async -> Result<RemoteFile, ArchiveError> {
        do { return .success(try await body()) } catch let e as ArchiveError { return .failure(e) } catch {
            return .failure(ArchiveError(.local, "\(error)"))
        }
    }

    @Test("423 Locked to MKCOL is temporary: retried with back-off until the folder is made")
    func lockedIsRetried() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            try await h.control("misbehave?path=/owncloud/remote.php/dav/files/sandbox/evidence&mode=locked&count=3")
            try await p.makeFolders("evidence/cam")
            let mkcols = try Self.requests(h).filter { $0.method == "MKCOL" }.map(\.status)
            #expect(mkcols == [423, 423, 423, 201, 201], "\(mkcols)")
        }
    }

    @Test("423 Locked is a temporary failure for every provider call, not a permanent one")
    func lockedIsTransient() async throws {
        try await withProvider(.owncloud) { h in
            // One attempt only: the error that reaches the caller must say "try again later".
            let p = Self.provider(h, http: HTTPClient(configuration: HTTPClientConfiguration(retry: .never), logger: Logger(label: "t")))
            try await h.control("misbehave?path=/owncloud/remote.php/dav/files/sandbox/held&mode=locked&count=1")
            let error = await #expect(throws: ArchiveError.self) { try await p.makeFolders("held") }
            #expect(error?.kind == .transient, "\(error?.message ?? "")")
        }
    }

    @Test("many workers making the same folders at once: one MKCOL per level reaches the server")
    func foldersOncePerProcess() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<16 { group.addTask { try await p.makeFolders("evidence/cam/2026") } }
                try await group.waitForAll()
            }
            // A copy of the provider (as each worker holds) shares what the first learned.
            let copy = p
            try await copy.makeFolders("evidence/cam/2026")
            let mkcols = try Self.requests(h).filter { $0.method == "MKCOL" }
            #expect(mkcols.map(\.path) == ["evidence/", "evidence/cam/", "evidence/cam/2026/"].map { "/owncloud/remote.php/dav/files/sandbox/" + $0 },
                    "\(mkcols)")
        }
    }

    @Test("a remembered folder deleted behind our back: the upload fails for now, and the next makeFolders makes it again")
    func folderGone() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            try await p.makeFolders("keep/day")
            let gone = try await Self.quickClient().send(HTTPRequest(
                method: "DELETE", url: h.sandbox!.baseURL.absoluteString + "/owncloud/remote.php/dav/files/sandbox/keep",
                headers: [("Authorization", "Basic " + Data("sandbox:sandbox-app-password".utf8).base64EncodedString())]))
            #expect(gone.status == 204)
            let local = h.dir.file("a.bin", bytes: 10)
            let sha1 = try hex(local, .sha1)
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.upload(local: local, size: 10, hash: sha1, to: "keep/day/a.bin", progress: nil)
            }
            #expect(error?.retryable == true, "\(error?.message ?? "")")
            try await p.makeFolders("keep/day")
            _ = try await p.upload(local: local, size: 10, hash: sha1, to: "keep/day/a.bin", progress: nil)
            #expect(try await p.stat("keep/day/a.bin")?.size == 10)
        }
    }

    @Test("chunks left by an attempt with another chunk_size are deleted before resuming, so the assembly sums up")
    func staleChunks() async throws {
        try await withProvider(.owncloud) { h in
            let size = (5 << 20) + 3
            // A first attempt in 1 MiB chunks, stopped after two chunks arrived.
            let (local, sha1) = try await Self.stoppedUpload(h, "v.bin", size: size, chunks: 2)
            // The next attempt cuts the file in 2 MiB chunks: the one left at 1 MiB is not its own.
            let second = Self.provider(h, chunkSize: 2 << 20)
            let stored = try await second.upload(local: local, size: Int64(size), hash: sha1, to: "v.bin", progress: nil)
            #expect(stored.size == Int64(size))
            #expect(try await second.stat("v.bin")?.hash == sha1)
            let deletes = try Self.requests(h).filter { $0.method == "DELETE" && $0.path.hasSuffix("/00000000000001048576") }
            #expect(deletes.count == 1, "\(deletes)")
        }
    }

    @Test("Nextcloud: an assembly that finished but answered 412 is not a conflict (no second copy under the alternate name): retried, and the copy there is ours")
    func assembled412() async throws {
        try await withProvider(.owncloud, sandboxArguments: ["--owncloud-flavour", "nextcloud"]) { h in
            let p = Self.provider(h)
            let size = (2 << 20) + 9
            let local = h.dir.file("n.bin", bytes: size)
            let sha1 = try hex(local, .sha1)
            try await Self.arm(h, "owncloud-assembled-412")
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.upload(local: local, size: Int64(size), hash: sha1, to: "n.bin", progress: nil)
            }
            #expect(error?.kind == .transient && error?.message.contains("read back and compared") == true,
                    "\(String(describing: error?.kind)) \(error?.message ?? "")")
            // What the archive job does next: the file there is read back; it is ours.
            let back = h.dir.path + "/n.back"
            try await p.download("n.bin", to: back)
            #expect(try hex(back, .sha1) == sha1)
        }
    }

    @Test("an assembly the server keeps silent for longer than the stall limit is waited for (3 min per GB, at least the total), not cut")
    func slowAssembly() async throws {
        try await withProvider(.owncloud) { h in
            // A stall limit of 1 s and a total of 20 s: the assembly below says nothing for 3 s.
            let http = HTTPClient(configuration: HTTPClientConfiguration(totalTimeout: 20, lowSpeedTime: 1,
                                                                         retry: RetryPolicy(maxAttempts: 2, base: 0.02, cap: 0.1)),
                                  logger: Logger(label: "owncloud-tests"))
            let p = Self.provider(h, http: http)
            let size = (2 << 20) + 5
            let local = h.dir.file("slow.bin", bytes: size)
            let sha1 = try hex(local, .sha1)
            try await Self.arm(h, "owncloud-slow-assembly")
            let stored = try await p.upload(local: local, size: Int64(size), hash: sha1, to: "slow.bin", progress: nil)
            #expect(stored.size == Int64(size))
            #expect(try await p.stat("slow.bin")?.hash == sha1)
            let moves = try Self.requests(h).filter { $0.method == "MOVE" }
            #expect(moves.map(\.status) == [201], "one MOVE, answered: \(moves)")
            #expect(OwnCloudProvider.assemblyTimeout(size: 2 << 30, total: 300) > 380)
            #expect(OwnCloudProvider.assemblyTimeout(size: 100 << 30, total: 300) == 1800)
            #expect(OwnCloudProvider.assemblyTimeout(size: 1 << 20, total: 300) == 300)
        }
    }

    @Test("an assembly answering 423 Locked is waited out, and the 404 that follows (the assembly finished, the upload folder gone) is our file by ownCloud's SHA-1; no chunk is sent again",
          arguments: ["owncloud", "nextcloud"])
    func assemblyLocked(_ flavour: String) async throws {
        try await withProvider(.owncloud, sandboxArguments: ["--owncloud-flavour", flavour]) { h in
            let p = OwnCloudProvider(account: "oc", url: h.sandbox!.baseURL.absoluteString + "/owncloud", user: "sandbox",
                                     password: "sandbox-app-password", baseURL: nil, http: Self.quickClient(),
                                     chunkSize: 1 << 20, lockedPause: 0.05)
            let size = (3 << 20) + 1
            let local = h.dir.file("l.bin", bytes: size)
            let sha1 = try hex(local, .sha1)
            try await Self.arm(h, "owncloud-assembly-423")
            if flavour == "owncloud" {
                let stored = try await p.upload(local: local, size: Int64(size), hash: sha1, to: "l.bin", progress: nil)
                #expect(stored.size == Int64(size) && stored.hash == sha1)
            } else {
                // No digest of the server's own: not taken as ours here (the caller would delete it
                // if its read-back differed); the next attempt reads it back.
                let error = await #expect(throws: ArchiveError.self) {
                    _ = try await p.upload(local: local, size: Int64(size), hash: sha1, to: "l.bin", progress: nil)
                }
                #expect(error?.kind == .transient && error?.message.contains("read back and compared") == true,
                        "\(String(describing: error?.kind)) \(error?.message ?? "")")
            }
            let log = try Self.requests(h)
            #expect(log.filter { $0.method == "MOVE" }.map(\.status) == [423, 404], "\(log.filter { $0.method == "MOVE" })")
            #expect(log.filter { $0.method == "PUT" }.count == 4, "each chunk once")
            let back = h.dir.path + "/l.back"
            try await p.download("l.bin", to: back)
            #expect(try hex(back, .sha1) == sha1)
        }
    }

    @Test("an assembly answering 404 (the upload folder gone) while another file of our size is at the destination is a transient failure, never taken for ours")
    func uploadFolderGoneWithoutOurFile() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            let size = (2 << 20) + 1
            let local = h.dir.file("g.bin", bytes: size)
            let other = h.dir.file("other.bin", bytes: size)
            let sha1 = try hex(local, .sha1)
            let base = h.sandbox!.baseURL.absoluteString + "/owncloud/remote.php/dav"
            let transfer = "evidence-" + String(SHA256Hasher.hash(Data("g.bin\n\(sha1)\n\(size)".utf8)).hex.prefix(32))
            // Just before the MOVE (progress at the full size): the upload folder is removed and
            // someone else's file of the same size is put at the destination.
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.upload(local: local, size: Int64(size), hash: sha1, to: "g.bin", progress: { at in
                    guard at == Int64(size) else { return }
                    for argv in [["-X", "DELETE", "\(base)/uploads/sandbox/\(transfer)"], ["-T", other, "\(base)/files/sandbox/g.bin"]] {
                        _ = try? ChildProcess.run("curl", ["-sS", "-u", "sandbox:sandbox-app-password"] + argv, timeout: 20)
                    }
                })
            }
            #expect(error?.kind == .transient && error?.message.contains("the upload folder is gone") == true,
                    "\(String(describing: error?.kind)) \(error?.message ?? "")")
            #expect(try Self.requests(h).filter { $0.method == "MOVE" }.map(\.status) == [404])
            #expect(try await p.stat("g.bin")?.hash == (try hex(other, .sha1)), "the other file is left alone")
        }
    }

    @Test("Infinite Scale (no remote.php/dav/uploads: its MKCOL answers 404): large files go up whole, and the endpoint is not asked again")
    func noChunkingEndpoint() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            try await Self.arm(h, "owncloud-no-uploads", count: "always")
            for name in ["a.bin", "b.bin"] {
                let size = (3 << 20) + 7
                let local = h.dir.file(name, bytes: size)
                let sha1 = try hex(local, .sha1)
                let stored = try await p.upload(local: local, size: Int64(size), hash: sha1, to: name, progress: nil)
                #expect(stored.size == Int64(size))
                // Infinite Scale is not ownCloud 10: its checksums are not taken as proof; read back.
                let back = h.dir.path + "/\(name).back"
                try await p.download(name, to: back)
                #expect(try hex(back, .sha1) == sha1)
            }
            #expect(try await p.whoami().contains("Infinite Scale"))
            let log = try Self.requests(h)
            #expect(log.filter { $0.path.contains("/dav/uploads/") }.map { "\($0.method) \($0.status)" } == ["MKCOL 404"], "\(log)")
            #expect(log.filter { $0.method == "PUT" && $0.path.contains("/dav/files/") }.count == 2, "each file in one PUT")
        }
    }

    @Test("ownCloud 10 answering 404 to the uploads endpoint (a misrouting proxy) is an error, not a reason to stop chunking: the next upload asks again")
    func knownServerWithoutUploads() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            #expect(try await p.whoami().contains("ownCloud 10"))
            try await Self.arm(h, "owncloud-no-uploads", count: "always")
            let size = (3 << 20) + 7
            let local = h.dir.file("k.bin", bytes: size)
            let sha1 = try hex(local, .sha1)
            for _ in 0..<2 {
                let error = await #expect(throws: ArchiveError.self) {
                    _ = try await p.upload(local: local, size: Int64(size), hash: sha1, to: "k.bin", progress: nil)
                }
                #expect(error?.message.contains("starting the chunked upload") == true, "\(error?.message ?? "")")
            }
            let log = try Self.requests(h)
            #expect(log.filter { $0.path.contains("/dav/uploads/") }.map(\.method) == ["MKCOL", "MKCOL"], "\(log)")
            #expect(!log.contains { $0.method == "PUT" }, "no whole-file PUT")
        }
    }

    @Test("attacker: status.php's name and version reach messages with their control characters escaped")
    func productTextIsEscaped() {
        let next = OwnCloudProduct.parse(status: Data(#"{"productname":"Nextcloud","versionstring":"30\u001b[2J\nfake line"}"#.utf8))
        #expect(next.description == "Nextcloud 30\\x1B[2J\\x0Afake line", "\(next.description)")
        let other = OwnCloudProduct.parse(status: Data(#"{"productname":"Evil\u0007","versionstring":"1"}"#.utf8))
        #expect(!other.description.unicodeScalars.contains { $0.value < 0x20 }, "\(other.description)")
    }

    @Test("a server of unknown make (rclone's, which ignores If-None-Match): a file another client put after our look is still found by the upload's own look, never replaced")
    func unknownServerLooksAgain() async throws {
        let dir = TempDir()
        defer { dir.cleanup() }
        let server = try WebDAVServer(root: dir.path + "/dav")
        defer { server.stop() }
        func provider() -> OwnCloudProvider {
            OwnCloudProvider(account: "office", url: server.url, user: WebDAVServer.user, password: WebDAVServer.password,
                             baseURL: server.url, http: Self.quickClient())
        }
        let (p, other) = (provider(), provider())
        #expect(try await p.stat("late.bin") == nil)
        let theirs = dir.file("theirs.bin", bytes: 50)
        _ = try await other.upload(local: theirs, size: 50, hash: try hex(theirs, .sha1), to: "late.bin", progress: nil)
        let ours = dir.file("ours.bin", bytes: 60)
        let error = await #expect(throws: ArchiveError.self) {
            _ = try await p.upload(local: ours, size: 60, hash: try hex(ours, .sha1), to: "late.bin", progress: nil)
        }
        #expect(error?.kind == .conflict, "\(error?.message ?? "")")
        #expect(FileManager.default.contentsEqual(atPath: theirs, andPath: dir.path + "/dav/late.bin"))
    }

    @Test("an assembly answered 400 'Chunks on server do not sum up' (a chunk we did not send slipped in) starts over from an empty transfer folder: transient, and the next attempt completes")
    func chunksDoNotSumUp() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            let size = (2 << 20) + 3
            let local = h.dir.file("s.bin", bytes: size)
            let stray = h.dir.file("stray.bin", bytes: 1000)
            let sha1 = try hex(local, .sha1)
            let base = h.sandbox!.baseURL.absoluteString + "/owncloud/remote.php/dav"
            let transfer = "evidence-" + String(SHA256Hasher.hash(Data("s.bin\n\(sha1)\n\(size)".utf8)).hex.prefix(32))
            // Just before the MOVE, another chunk lands in our transfer folder.
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.upload(local: local, size: Int64(size), hash: sha1, to: "s.bin", progress: { at in
                    guard at == Int64(size) else { return }
                    _ = try? ChildProcess.run("curl", ["-sS", "-u", "sandbox:sandbox-app-password", "-T", stray,
                                                       "\(base)/uploads/sandbox/\(transfer)/99999999999999999999"], timeout: 20)
                })
            }
            #expect(error?.kind == .transient && error?.message.contains("do not sum up") == true, "\(String(describing: error?.kind)) \(error?.message ?? "")")
            let stored = try await p.upload(local: local, size: Int64(size), hash: sha1, to: "s.bin", progress: nil)
            #expect(stored.size == Int64(size))
            #expect(try await p.stat("s.bin")?.hash == sha1)
            #expect(try Self.requests(h).filter { $0.method == "MOVE" }.map(\.status) == [400, 201])
        }
    }

    @Test("a file where a folder must go (MKCOL answers 405) is a permanent error naming the path, not a loop of 409s")
    func fileInTheWay() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            try await Self.put(p, h, "cam", bytes: 10)
            let error = await #expect(throws: ArchiveError.self) { try await p.makeFolders("cam/2026") }
            #expect(error?.kind == .permanent && error?.message.contains("creating folder cam: a file of that name is in the way") == true,
                    "\(String(describing: error?.kind)) \(error?.message ?? "")")
            try await p.makeFolders("other/2026")
            // A fresh client (nothing remembered) meets 405 for the existing folders: still fine.
            try await Self.provider(h).makeFolders("other/2026")
        }
    }

    @Test("a link the server made more open than asked (no password) is deleted and refused, never recorded as protected")
    func linkMoreOpenThanAsked() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            try await Self.put(p, h, "p.bin", bytes: 100)
            try await Self.arm(h, "owncloud-link-drops-password")
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.share("p.bin", ShareRequest(access: .open, password: "Link-Pass-1"))
            }
            #expect(error?.kind == .permanent && error?.message.contains("more open than asked (no password)") == true, "\(error?.message ?? "")")
            // The open link was deleted: asking again makes a protected one, not the open one.
            let link = try await p.share("p.bin", ShareRequest(access: .open, password: "Link-Pass-1"))
            #expect(link.passwordProtected)
        }
    }

    @Test("a name in a resumed transfer folder that is not a chunk of ours is never put in a URL: the folder is discarded and made again")
    func foreignNameInTransfer() async throws {
        try await withProvider(.owncloud) { h in
            let size = (3 << 20) + 1
            let (local, sha1) = try await Self.stoppedUpload(h, "f.bin", size: size, chunks: 1)
            let folder = try #require(try Self.requests(h).first { $0.method == "MKCOL" && $0.path.contains("/uploads/") }?.path)
            let auth = "Basic " + Data("sandbox:sandbox-app-password".utf8).base64EncodedString()
            let put = try await Self.quickClient().execute(HTTPRequest(method: "PUT", url: h.sandbox!.baseURL.absoluteString + folder + "/notes.txt",
                                                                      headers: [("Authorization", auth)], body: .data(Data("x".utf8))))
            #expect(put.isSuccess, "\(put.status)")
            let stored = try await Self.provider(h).upload(local: local, size: Int64(size), hash: sha1, to: "f.bin", progress: nil)
            #expect(stored.size == Int64(size))
            let deletes = try Self.requests(h).filter { $0.method == "DELETE" }
            #expect(deletes.contains { $0.path == folder || $0.path == folder + "/" }, "\(deletes)")
            #expect(!deletes.contains { $0.path.hasSuffix("notes.txt") }, "\(deletes)")
        }
    }

    @Test("a server-enforced default expiry is recorded from the OCS answer, not as 'never'")
    func enforcedExpiry() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            try await Self.put(p, h, "s.bin", bytes: 100)
            try await Self.arm(h, "owncloud-enforced-expiry", count: "always")
            let link = try await p.share("s.bin", ShareRequest(access: .open))
            let expires = try #require(link.expires, "recorded as never expiring")
            #expect(expires > Date().addingTimeInterval(6 * 86_400) && expires < Date().addingTimeInterval(9 * 86_400), "\(expires)")
        }
    }

    @Test("ownCloud computes checksums from the bytes: stat reports its SHA-1, whoami names it")
    func owncloudChecksumsTrusted() async throws {
        try await withProvider(.owncloud) { h in
            let p = Self.provider(h)
            let local = h.dir.file("a.bin", bytes: 1000)
            let sha1 = try hex(local, .sha1)
            _ = try await p.upload(local: local, size: 1000, hash: sha1, to: "a.bin", progress: nil)
            #expect(try await p.stat("a.bin")?.hash == sha1)
            #expect(try await p.whoami().contains("ownCloud 10."))
        }
    }

    @Test("Nextcloud echoes the OC-Checksum it was sent: stat reports no hash, so a copy corrupted on the server is caught by reading back")
    func nextcloudChecksumsNotTrusted() async throws {
        try await withProvider(.owncloud, sandboxArguments: ["--owncloud-flavour", "nextcloud"]) { h in
            let p = Self.provider(h)
            #expect(try await p.whoami().contains("Nextcloud"))
            for (name, size) in [("small.bin", 5000), ("chunked.bin", (2 << 20) + 3)] {
                let local = h.dir.file(name, bytes: size)
                let sha1 = try hex(local, .sha1)
                try await h.control("corrupt-next-upload?provider=owncloud")
                _ = try await p.upload(local: local, size: Int64(size), hash: sha1, to: name, progress: nil)
                let st = try #require(try await p.stat(name))
                // The proof the archive job uses: the provider's hash, else the read-back SHA-256.
                let proven: Bool
                if let h1 = st.hash {
                    proven = h1 == sha1
                } else {
                    let back = h.dir.path + "/back-" + name
                    try await p.download(name, to: back)
                    proven = try hex(back, .sha256) == (try hex(local, .sha256))
                }
                #expect(!proven, "\(name): the corrupted copy must not verify")
                #expect(st.hash == nil, "\(name): Nextcloud's checksum is ours echoed, not a proof")
            }
        }
    }
}
