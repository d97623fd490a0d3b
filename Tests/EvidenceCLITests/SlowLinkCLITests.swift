import EvidenceTesting
import Foundation
import Glibc
import Testing

/// File bodies over a slow link: no whole-transfer cap, only the stall limit. The link is a
/// network namespace of the test's own whose loopback `tc` shapes to 8 Mbit/s; the server
/// (`rclone serve webdav`, or the sandbox's ownCloud emulation) and `evidence run` both run
/// inside it (`ip netns exec`).
@Suite("Slow links: file bodies end on a stall, never on a total", .enabled(if: ShapedLink.available), .ownThread)
struct SlowLinkCLITests {
    let archive = ArchiveCLITests()

    @Test("a 6 MiB original through an 8 Mbit/s link with request_timeout = 2s: uploaded and read back in one attempt each, each far longer than the total small calls get")
    func bodyOutlivesRequestTimeout() throws {
        let link = try ShapedLink(rate: "8mbit")
        let root = Scratch()
        let server = try WebDAVServer(root: root.path, link: link)
        defer { server.stop() }
        let h = try archive.webdavHarness(server, name: "slow", extra: "request_timeout = \"2s\"\nstall_timeout = \"30s\"")
        h.launcher = link.prefix
        try h.start()
        let data = randomBytes(6 << 20)
        let dropped = Date()
        h.write("bodycam.mp4", data)
        #expect(waitUntil(timeout: 180) { archive.state(h, "1") == "archived" || archive.state(h, "1") == "done" }, "\(h.log)")
        let took = Date().timeIntervalSince(dropped)
        let remote = root.path + "/ev/cam/\(archive.sha8(data, in: h.scratch))-bodycam.mp4"
        #expect(FileManager.default.contents(atPath: remote) == data)
        let original = (archive.show(h, "1")["archived"] as? [[String: Any]])?.first { $0["role"] as? String == "original" }
        #expect((original?["verifiedBy"] as? String)?.contains("read-back") == true, "\(original ?? [:])")
        // 6 MiB up and 6 MiB back at 1 MB/s: about 12 s, six times the 2 s total. Had the total
        // applied to bodies, every attempt would have been cut at 2 s and none would finish.
        #expect(took > 8, "the link was not slow enough to prove anything: \(took) s")
        let archiveJob = (archive.show(h, "1")["jobs"] as? [[String: Any]])?.first { $0["kind"] as? String == "archive" }
        #expect(archiveJob?["attempts"] as? Int == 1, "one attempt, not a retry after a cut: \(archiveJob ?? [:])")
        #expect(!h.log.contains("timed out"), "\(h.log)")
        #expect(h.stop() == 0)
    }

    @Test("ownCloud chunked upload through an 8 Mbit/s link with request_timeout = 2s: 4 MiB chunks of about 4 s each, every chunk sent once, assembled and verified by the server's SHA-1")
    func chunksOutliveRequestTimeout() async throws {
        let link = try ShapedLink(rate: "8mbit")
        let scratch = Scratch()
        let sandbox = try await SandboxProcess.start(executable: NotarizationCLITests.sandboxBinary, stateDirectory: scratch.path + "/sandbox",
                                                     launcher: link.prefix)
        defer { Task { _ = await sandbox.stop() } }
        let h = try archive.harness(archive: "vault", config: "")
        try ProviderCLITests.Provider.owncloud.add(to: h, as: "vault", url: sandbox.baseURL.absoluteString)
        let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
        try config.replacingOccurrences(of: "chunk_size = \"1MiB\"", with: "chunk_size = \"4MiB\"\nrequest_timeout = \"2s\"\nstall_timeout = \"30s\"")
            .write(toFile: h.configPath!, atomically: true, encoding: .utf8)
        h.launcher = link.prefix
        try h.start()
        let data = randomBytes(10 << 20)
        let dropped = Date()
        let sha1 = CLI.exec(["sha1sum", h.write("bodycam.mp4", data)]).stdout.split(separator: " ").first.map(String.init) ?? "?"
        #expect(await waitUntil(timeout: 180) { archive.state(h, "1") == "archived" || archive.state(h, "1") == "done" }, "\(h.log)")
        let took = Date().timeIntervalSince(dropped)
        let original = (archive.show(h, "1")["archived"] as? [[String: Any]])?.first { $0["role"] as? String == "original" }
        #expect(original?["verifiedBy"] as? String == "sha1:\(sha1)", "\(original ?? [:])")
        // 10 MiB at 1 MB/s: about 10 s, each 4 MiB chunk about 4 s, twice the 2 s total.
        #expect(took > 8, "the link was not slow enough to prove anything: \(took) s")
        let log = (try? String(contentsOfFile: sandbox.stateDirectory + "/requests.log", encoding: .utf8)) ?? ""
        let chunkPuts = log.split(separator: "\n").filter { $0.contains("\"method\":\"PUT\"") && $0.contains("/remote.php/dav/uploads/") }
        #expect(chunkPuts.count == 3, "three chunks, each sent once: \(chunkPuts)")
        let archiveJob = (archive.show(h, "1")["jobs"] as? [[String: Any]])?.first { $0["kind"] as? String == "archive" }
        #expect(archiveJob?["attempts"] as? Int == 1, "one attempt, not a retry after a cut: \(archiveJob ?? [:])")
        #expect(!h.log.contains("timed out"), "\(h.log)")
        #expect(h.stop() == 0)
    }
}
