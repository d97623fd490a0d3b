import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Attacks on the home with write access to it (or to a folder the service writes into): the
/// catalog rewritten with `sqlite3` and `sha256sum` alone, rows changed without their events,
/// and store or archive folders swapped for symbolic links.
extension AttackCLITests {
    func sqlite(_ db: String, _ sql: String) -> CLI.Result { CLI.exec(["sqlite3", "-bail", db, sql]) }

    /// SHA-256 of `text` with the standard tool, as an attacker re-hashing the chain would.
    func sha256(text: String) -> String {
        String(CLI.exec(["sh", "-c", "printf %s \"$0\" | sha256sum", text]).stdout.prefix(64))
    }

    @Test("the catalog rewritten with anchors removed: triggers dropped, an ingest backdated, every later event re-hashed, custody.head rewritten, anchors/ deleted; log verify and fsck exit 1 and say what they found")
    func catalogRewriteWithAnchorsRemoved() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox)
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
            try (config + "\n\n[custody]\nanchor_tsa = \"tsa\"\nanchor_every = \"1h\"\n").write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            var cli = h.cli
            cli.environment["EVIDENCE_CONFIG"] = h.configPath!
            try h.start()
            h.write("statement.txt", Data("The witness saw the blue car at 21:04.\n".utf8))
            #expect(waitUntil(timeout: 60) { notarization.state(h, "1") == "done" }, "log: \(h.log)")
            #expect(h.stop() == 0)
            // Anchored at start and at shutdown, each recorded in the log.
            #expect(cli.run(["log", "anchor"]).status == 0)
            let clean = cli.run(["log", "verify"])
            #expect(clean.status == 0, "\(clean.stdout)")

            // The rewrite, with sqlite3 and sha256sum: the ingest backdated by years, the chain re-hashed from there.
            let db = h.home + "/catalog.sqlite"
            let events = try #require(try JSONSerialization.jsonObject(with: Data(CLI.exec(["sqlite3", "-json", db,
                "SELECT seq, item_id, at, kind, actor, details FROM custody_event ORDER BY seq"]).stdout.utf8)) as? [[String: Any]])
            #expect(events.count > 3)
            var prev = String(repeating: "0", count: 64)
            var sql = SecurityCLITests.dropTriggers
            var last = (seq: 0, hash: "")
            for var e in events {
                let seq = try #require(e["seq"] as? Int)
                if seq == 1 { e["at"] = "2019-03-01T09:00:00.000Z" }
                let item = (e["item_id"] as? Int).map(String.init) ?? "-"
                let body = "evidence-custody-v1\n\(seq)\n\(e["at"]!)\n\(item)\n\(e["kind"]!)\n\(e["actor"]!)\n\(e["details"]!)"
                let hash = sha256(text: prev + "\n" + body)
                sql += "UPDATE custody_event SET at = '\(e["at"]!)', prev_hash = '\(prev)', hash = '\(hash)' WHERE seq = \(seq);\n"
                prev = hash
                last = (seq, hash)
            }
            let rewrite = sqlite(db, sql)
            #expect(rewrite.status == 0, "\(rewrite.stderr)")
            try "\(last.seq) \(last.hash)\n".write(toFile: h.home + "/custody.head", atomically: true, encoding: .utf8)

            // The anchors still there catch it: their tokens name the old hashes.
            let anchored = cli.run(["log", "verify"])
            #expect(anchored.status == 1 && anchored.stdout.contains("the event or one before it was rewritten"), "\(anchored.stdout)")

            // The attacker deletes anchors/: the log now agrees with itself and with custody.head, but not with [custody].
            #expect(CLI.exec(["rm", "-rf", h.home + "/anchors"]).status == 0)
            let verify = cli.run(["log", "verify"])
            #expect(verify.status == 1, "\(verify.stdout)")
            #expect(verify.stdout.contains("no anchor verifies although [custody] is configured"), "\(verify.stdout)")
            #expect(verify.stdout.contains("is missing from anchors/: a gap in the anchor sequence"), "\(verify.stdout)")
            #expect(!verify.stdout.contains("content does not match its hash"), "the re-hashed chain is consistent by itself")
            let fsck = cli.run(["fsck", "--quick"])
            #expect(fsck.status == 1 && fsck.stdout.contains("no anchor verifies although [custody] is configured"), "\(fsck.stdout)")
        }
    }

    @Test("an anchor deleted from between two others is a gap: log verify, fsck and doctor exit 1 and name it")
    func gappedAnchors() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox)
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
            try (config + "\n\n[custody]\nanchor_tsa = \"tsa\"\n").write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            var cli = h.cli
            cli.environment["EVIDENCE_CONFIG"] = h.configPath!
            for name in ["a.txt", "b.txt", "c.txt"] {
                let file = h.scratch.path + "/" + name
                _ = FileManager.default.createFile(atPath: file, contents: Data(name.utf8))
                #expect(cli.run(["ingest", file]).status == 0)
                #expect(cli.run(["log", "anchor"]).status == 0)
            }
            #expect(cli.run(["log", "verify"]).status == 0)
            let anchors = try FileManager.default.contentsOfDirectory(atPath: h.home + "/anchors").filter { $0.hasSuffix(".tsr") }.sorted()
            #expect(anchors.count == 3, "\(anchors)")
            try FileManager.default.removeItem(atPath: h.home + "/anchors/" + anchors[1])
            let verify = cli.run(["log", "verify"])
            #expect(verify.status == 1 && verify.stdout.contains("records anchor \(anchors[1]), which is missing from anchors/"), "\(verify.stdout)")
            let fsck = cli.run(["fsck", "--quick"])
            #expect(fsck.status == 1 && fsck.stdout.contains("a gap in the anchor sequence"), "\(fsck.stdout)")
            let doctor = cli.run(["doctor", "--offline"], timeout: 60)
            #expect(doctor.status == 1 && doctor.stdout.contains("✗ custody"), "\(doctor.stdout)")
            // A planted far-future file neither counts as the newest anchor nor stops anchoring.
            let fake = h.home + "/anchors/999999999999-" + String(repeating: "cd", count: 32) + ".tsr"
            try Data("planted".utf8).write(to: URL(fileURLWithPath: fake))
            let status = try #require((cli.run(["status", "--json"]).json as? [String: Any])?["custodyAnchors"] as? [String: Any])
            #expect((status["newestSeq"] as? Int ?? 0) < 999_999_999_999, "\(status)")
        }
    }

    @Test("an item row set to done, or a proof row inserted, by SQL without its custody event: log verify and fsck exit 1 and name the row")
    func rowsWithoutEvents() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        for name in ["a", "b"] { #expect(cli.run(["ingest", s.file(name + ".txt", "rows \(name)\n")]).status == 0) }
        #expect(cli.run(["log", "verify"]).status == 0)
        let db = s.home + "/catalog.sqlite"
        #expect(sqlite(db, "UPDATE item SET state = 'done' WHERE id = 1;").status == 0)
        let done = cli.run(["log", "verify"])
        #expect(done.status == 1 && done.stdout.contains("item #1 is done in the catalog, but its custody events leave it ingested"), "\(done.stdout)")
        let fsck = cli.run(["fsck", "--quick"])
        #expect(fsck.status == 1 && fsck.stdout.contains("item #1 is done in the catalog"), "\(fsck.stdout)")

        #expect(sqlite(db, "UPDATE item SET state = 'ingested' WHERE id = 1;").status == 0)
        #expect(cli.run(["log", "verify"]).status == 0)
        let insert = sqlite(db, "INSERT INTO proof (item_id, notary, kind, state, receipt, updated_at) VALUES (2, 'tsa', 'rfc3161', 'confirmed', '"
                            + String(repeating: "ab", count: 32) + "', '2026-01-01 00:00:00.000');")
        #expect(insert.status == 0, "\(insert.stderr)")
        let proof = cli.run(["log", "verify"])
        #expect(proof.status == 1 && proof.stdout.contains("proof of item #2 by tsa is confirmed with receipt abababab in the catalog, but no custody event records it"),
                "\(proof.stdout)")
        #expect(cli.run(["fsck", "--quick"]).status == 1)
    }

    @Test("a store fan-out folder replaced by a link to another folder: ingest stores nothing there, fsck names the link")
    func storeFolderLinked() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        #expect(cli.run(["ingest", s.file("first.txt", "makes the store\n")]).status == 0)
        let content = "the file whose object would land outside\n"
        let file = s.file("clip.txt", content)
        let hex = String(CLI.exec(["sha256sum", file]).stdout.prefix(64))
        let outside = s.path + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let fanOut = s.home + "/objects/sha256/" + hex.prefix(2)
        try FileManager.default.removeItem(atPath: fanOut)
        #expect(symlink(outside, fanOut) == 0)
        let ingest = cli.run(["ingest", file])
        #expect(ingest.status != 0, "\(ingest.stdout)\(ingest.stderr)")
        #expect(FileManager.default.enumerator(atPath: outside)?.allObjects.filter { ($0 as? String)?.count ?? 0 > 10 }.isEmpty ?? true,
                "an object was written outside the store")
        let fsck = cli.run(["fsck"])
        #expect(fsck.status == 1 && fsck.stdout.contains("a symbolic link where a fan-out folder belongs"), "\(fsck.stdout)")
    }

    @Test("a local archive's folder replaced by a link to another officer's folder: nothing is written there and the item is not done")
    func archiveFolderLinked() throws {
        let vault = Scratch(), outside = Scratch()
        let h = try ArchiveCLITests().harness(archive: "vault", config: "[archives.vault]\nkind = \"local\"\npath = \"\(vault.path)\"\n",
                                              ruleExtra: "after = \"delete\"")
        #expect(symlink(outside.path, vault.path + "/ev") == 0)
        try h.start()
        let src = h.write("clip.mp4", randomBytes(10_000))
        #expect(waitUntil(timeout: 30) { h.log.contains("symbolic link") }, "\(h.log.suffix(2000))")
        #expect(h.stop() == 0)
        let written = FileManager.default.enumerator(atPath: outside.path)?.allObjects as? [String] ?? []
        #expect(written.isEmpty, "written into the linked folder: \(written)")
        #expect(ArchiveCLITests().state(h, "1") != "done")
        #expect(FileManager.default.fileExists(atPath: src), "the source is kept: it was never archived")
    }
}
