import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// The archive stage through `evidence run` as a real process: a local folder and the ownCloud
/// provider against a real WebDAV server (`rclone serve webdav`).
@Suite("Archive: evidence run to a local folder and a real WebDAV server", .ownThread)
struct ArchiveCLITests {
    /// A harness whose rule archives (no notary: the archive follows the stored copy's check).
    func harness(archive account: String, config: String, ruleExtra: String = "") throws -> RunHarness {
        let h = RunHarness(settle: "0s", extra: "archive = \"\(account)\"\nremote_path = \"ev/{rule}/{sha8}-{name}\"\n\(ruleExtra)")
        h.configPath = h.scratch.path + "/evidence.toml"
        try config.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
        return h
    }

    /// A harness archiving to account `name`, the ownCloud provider on `server`'s plain WebDAV
    /// root, with `extra` lines in the account's table.
    func webdavHarness(_ server: WebDAVServer, name: String = "office", extra: String = "", ruleExtra: String = "") throws -> RunHarness {
        let h = try harness(archive: name, config: """
            [archives.\(name)]
            kind = "owncloud"
            url = "\(server.url)"
            base_url = "\(server.url)"
            user = "\(WebDAVServer.user)"
            password_env = "EVIDENCE_TEST_DAV_PASSWORD"
            \(extra)
            """, ruleExtra: ruleExtra)
        h.environment = ["EVIDENCE_TEST_DAV_PASSWORD": WebDAVServer.password]
        return h
    }

    func show(_ h: RunHarness, _ item: String) -> [String: Any] {
        (h.cli.run(["show", item, "--json"]).json as? [String: Any]) ?? [:]
    }

    func state(_ h: RunHarness, _ item: String) -> String? {
        (show(h, item)["item"] as? [String: Any])?["state"] as? String
    }

    func sha8(_ data: Data, in s: Scratch) -> String {
        let f = s.path + "/hash-me"
        _ = FileManager.default.createFile(atPath: f, contents: data)
        return String(CLI.exec(["sha256sum", f]).stdout.prefix(8))
    }

    @Test("local archive: original and manifest land verified, then after = delete removes the source")
    func localArchiveThenDelete() throws {
        let vault = Scratch()
        let h = try harness(archive: "vault", config: "[archives.vault]\nkind = \"local\"\npath = \"\(vault.path)\"\n",
                            ruleExtra: "after = \"delete\"")
        try h.start()
        let data = randomBytes(70_000)
        let src = h.write("clip.mp4", data)
        #expect(waitUntil(timeout: 30) { state(h, "1") == "done" }, "\(h.log)")
        let remote = vault.path + "/ev/cam/\(sha8(data, in: h.scratch))-clip.mp4"
        #expect(FileManager.default.contents(atPath: remote) == data)
        #expect(FileManager.default.fileExists(atPath: remote + ".manifest.json"))
        let archived = show(h, "1")["archived"] as? [[String: Any]] ?? []
        #expect(archived.map { $0["role"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") } == ["manifest", "original"])
        #expect(archived.allSatisfy { ($0["verifiedBy"] as? String)?.contains("read-back") == true })
        #expect(waitUntil(timeout: 20) { !FileManager.default.fileExists(atPath: src) }, "source deleted once archived")
        #expect(h.cli.run(["fsck"]).status == 0)
        #expect(h.stop() == 0)
    }

    @Test("the same content already at the remote path is adopted, not uploaded twice; a different file there is never replaced")
    func conflictsResolvedByContent() throws {
        let vault = Scratch()
        let h = try harness(archive: "vault", config: "[archives.vault]\nkind = \"local\"\npath = \"\(vault.path)\"\n")
        let same = randomBytes(5_000), other = randomBytes(6_000)
        let stranger = randomBytes(100)
        let dir = vault.path + "/ev/cam"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let samePath = dir + "/\(sha8(same, in: h.scratch))-a.bin"
        let otherPath = dir + "/\(sha8(other, in: h.scratch))-b.bin"
        _ = FileManager.default.createFile(atPath: samePath, contents: same)        // a crash after the upload, before the record
        _ = FileManager.default.createFile(atPath: otherPath, contents: stranger)   // someone else's file at our name
        try h.start()
        h.write("a.bin", same)
        h.write("b.bin", other)
        #expect(waitUntil(timeout: 30) { state(h, "1") == "done" && state(h, "2") == "done" }, "\(h.log)")
        #expect(FileManager.default.contents(atPath: samePath) == same)
        #expect(FileManager.default.contents(atPath: otherPath) == stranger, "the stranger's file is untouched")
        let alternate = dir + "/\(sha8(other, in: h.scratch))-b-\(sha8(other, in: h.scratch)).bin"
        #expect(FileManager.default.contents(atPath: alternate) == other)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { !$0.hasSuffix(".manifest.json") }
        #expect(files.count == 3, "\(files)")
        let adopted = (show(h, h.drop + "/a.bin")["archived"] as? [[String: Any]])?.first { $0["role"] as? String == "original" }
        #expect((adopted?["verifiedBy"] as? String)?.contains("already there") == true)
        #expect(h.stop() == 0)
    }

    @Test("a shorter copy of ours at the path (an upload cut by the link) is replaced; a shorter file of other bytes is not")
    func cutCopyReplaced() throws {
        let root = Scratch()
        let server = try WebDAVServer(root: root.path)
        defer { server.stop() }
        let h = try webdavHarness(server)
        let ours = randomBytes(400_000), other = randomBytes(300_000)
        let stranger = randomBytes(1_000)
        let dir = root.path + "/ev/cam"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let oursPath = dir + "/\(sha8(ours, in: h.scratch))-ours.bin"
        let otherPath = dir + "/\(sha8(other, in: h.scratch))-other.bin"
        _ = FileManager.default.createFile(atPath: oursPath, contents: ours.prefix(123_457))   // what a cut PUT left
        _ = FileManager.default.createFile(atPath: otherPath, contents: stranger)             // shorter, other bytes
        try h.start()
        h.write("ours.bin", ours)
        h.write("other.bin", other)
        #expect(waitUntil(timeout: 30) {
            ["archived", "done"].contains(state(h, h.drop + "/ours.bin") ?? "") && ["archived", "done"].contains(state(h, h.drop + "/other.bin") ?? "")
        }, "\(h.log)")
        #expect(FileManager.default.contents(atPath: oursPath) == ours, "our cut copy was completed in place")
        #expect(FileManager.default.contents(atPath: otherPath) == stranger, "the stranger's file is untouched")
        let alternate = dir + "/\(sha8(other, in: h.scratch))-other-\(sha8(other, in: h.scratch)).bin"
        #expect(FileManager.default.contents(atPath: alternate) == other)
        #expect(!FileManager.default.fileExists(atPath: dir + "/\(sha8(ours, in: h.scratch))-ours-\(sha8(ours, in: h.scratch)).bin"))
        #expect(h.stop() == 0)
    }

    @Test("ownCloud provider to a real WebDAV server: archived and verified by reading back; a share link needs OCS and says so")
    func webdav() throws {
        let root = Scratch()
        let server = try WebDAVServer(root: root.path)
        defer { server.stop() }
        let h = try webdavHarness(server, ruleExtra: "[share]\naccess = \"open\"\n")
        try h.start()
        let data = randomBytes(300_000)
        h.write("Ünïcødé clip?.mov", data)
        #expect(waitUntil(timeout: 30) { state(h, "1") == "archived" }, "\(h.log)")
        let remote = root.path + "/ev/cam/\(sha8(data, in: h.scratch))-Ünïcødé clip_.mov"
        #expect(FileManager.default.contents(atPath: remote) == data)
        #expect(waitUntil(timeout: 20) {
            ((show(h, "1")["jobs"] as? [[String: Any]])?.first { $0["kind"] as? String == "share" }?["lastError"] as? String)?
                .contains("no OCS share API") == true
        })
        #expect(!h.log.contains(WebDAVServer.password), "the password is never logged")
        #expect(h.stop() == 0)
    }

    @Test("etag = \"sha1\" on rclone serve webdav --etag-hash SHA1: every copy proven by the server's SHA-1 from the PUT's answer, none read back; an item already there after a crash is adopted by its ETag")
    func etagProvesCopies() throws {
        let root = Scratch()
        let server = try WebDAVServer(root: root.path, etagHash: "SHA1")
        defer { server.stop() }
        let h = try webdavHarness(server, extra: "etag = \"sha1\"")
        let data = randomBytes(200_000), again = randomBytes(3_000)
        let dir = root.path + "/ev/cam"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir + "/\(sha8(again, in: h.scratch))-again.bin", contents: again)   // a crash after the PUT
        try h.start()
        h.write("clip.bin", data)
        h.write("again.bin", again)
        #expect(waitUntil(timeout: 30) {
            ["archived", "done"].contains(state(h, h.drop + "/clip.bin") ?? "") && ["archived", "done"].contains(state(h, h.drop + "/again.bin") ?? "")
        }, "\(h.log)")
        let clip = show(h, h.drop + "/clip.bin")["archived"] as? [[String: Any]] ?? []
        #expect(clip.count >= 2 && clip.allSatisfy { ($0["verifiedBy"] as? String)?.hasPrefix("sha1:") == true }, "\(clip)")
        let adopted = (show(h, h.drop + "/again.bin")["archived"] as? [[String: Any]])?.first { $0["role"] as? String == "original" }
        let f = h.scratch.path + "/sha1-me"
        _ = FileManager.default.createFile(atPath: f, contents: again)
        let sha1 = String(CLI.exec(["sha1sum", f]).stdout.prefix(40))
        #expect(adopted?["verifiedBy"] as? String == "sha1:\(sha1) (already there)", "\(String(describing: adopted))")
        #expect(h.stop() == 0)
    }
}
