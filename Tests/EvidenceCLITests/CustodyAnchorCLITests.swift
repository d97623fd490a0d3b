import EvidenceSandbox
import Foundation
import Glibc
import EvidenceTesting
import Testing

/// `[custody]` anchors: the custody head time-stamped by the sandbox's RFC 3161 TSA (real
/// `openssl ts` underneath), then the catalog attacked with the sqlite3 CLI.
@Suite("Custody anchors: the chain head time-stamped by a TSA", .ownThread)
struct CustodyAnchorCLITests {
    func sqlite(_ db: String, _ sql: String) -> CLI.Result { CLI.exec(["sqlite3", db, sql]) }

    @Test("run anchors the head and copies the anchors to an account; a log cut with custody.head rewritten to match is caught by log verify, fsck and doctor, and by the copies once anchors/ is deleted")
    func anchoredTruncation() async throws {
        try await NotarizationCLITests().withSandbox { sandbox in
            let h = try NotarizationCLITests().harness(sandbox)
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
            let vault = h.scratch.path + "/vault"   // a local account's root exists (a mount point, say)
            try FileManager.default.createDirectory(atPath: vault, withIntermediateDirectories: true)
            try (config + "\n\n[archives.vault]\nkind = \"local\"\npath = \"\(vault)\"\n"
                 + "\n[custody]\nanchor_tsa = \"tsa\"\nanchor_every = \"1s\"\nanchor_archive = \"vault\"\n")
                .write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            var cli = h.cli
            cli.environment["EVIDENCE_CONFIG"] = h.configPath!
            try h.start()
            h.write("a.bin", randomBytes(2_000))
            h.write("b.bin", randomBytes(3_000))
            #expect(ProviderCLITests().waitDone(h, 2, timeout: 60), "\(h.log.suffix(2000))")
            #expect(h.stop() == 0)
            #expect(h.log.contains("custody head time-stamped"))

            // Stopped: the last anchor covers the whole log, its token checked against the TSA's CA.
            let verify = cli.run(["log", "verify", "--json"])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            let report = try #require(verify.json as? [String: Any])
            let events = try #require(report["events"] as? Int)
            #expect((report["anchors"] as? Int ?? 0) >= 1)
            // The shutdown anchor covers every event but its own record (the `anchored` event after it).
            #expect((report["newestAnchor"] as? [String: Any])?["seq"] as? Int == events - 1, "the shutdown anchor covers every event")
            #expect(sqlite(h.home + "/catalog.sqlite", "SELECT kind FROM custody_event ORDER BY seq DESC LIMIT 1").stdout.hasPrefix("anchored"))
            #expect(report["anchorSignaturesChecked"] as? Bool == true)
            // Copies: the run's job runner copied what it anchored; `log anchor` copies the shutdown anchor.
            let copies = vault + "/evidence-anchors"
            let copiedDuringRun = (try? FileManager.default.contentsOfDirectory(atPath: copies)) ?? []
            #expect(!copiedDuringRun.isEmpty, "no anchor copied during the run: \(h.log.suffix(1500))")
            let again = cli.run(["log", "anchor"])
            #expect(again.status == 0 && again.stdout.contains("nothing new"), "\(again.stdout)\(again.stderr)")
            #expect(again.stdout.contains("copied to vault:evidence-anchors/") || again.stdout.contains("already at vault:evidence-anchors/"))
            #expect(cli.run(["log", "anchor"]).stdout.contains("✓ already at vault:evidence-anchors/"))
            let anchorsDir = h.home + "/anchors"
            let local = try FileManager.default.contentsOfDirectory(atPath: anchorsDir).sorted()
            let newest = try #require(local.last)
            #expect(FileManager.default.contents(atPath: copies + "/" + newest) == FileManager.default.contents(atPath: anchorsDir + "/" + newest))
            let doctor0 = cli.run(["doctor", "--json"], timeout: 60)
            let copyCheck = (doctor0.json as? [[String: Any]])?.first { $0["check"] as? String == "anchor copies" }
            #expect(copyCheck?["status"] as? String == "ok", "\(doctor0.stdout)")
            #expect((copyCheck?["detail"] as? String)?.contains("is at vault:evidence-anchors/\(newest)") == true, "\(doctor0.stdout)")
            // Without the config the imprints are checked but the signatures are not, and it says so.
            #expect(h.cli.run(["log", "verify"]).stdout.contains("signatures NOT checked"))

            // The attack the head file alone cannot catch: cut the log, rewrite custody.head to match.
            let db = h.home + "/catalog.sqlite"
            // A cut at an event no anchor names: re-anchoring that head after anchors/ is deleted must
            // make a new copy, not meet an earlier token of the same name at the account.
            let anchored = Set(local.compactMap { Int($0.prefix(12)) })
            var keep = events / 2
            while anchored.contains(keep) && keep > 2 { keep -= 1 }
            let kept = sqlite(db, "SELECT seq || ' ' || hash FROM custody_event WHERE seq = \(keep)").stdout
            #expect(sqlite(db, SecurityCLITests.dropTriggers + "DELETE FROM custody_event WHERE seq > \(keep);").status == 0)
            try kept.write(toFile: h.home + "/custody.head", atomically: true, encoding: .utf8)
            let cut = cli.run(["log", "verify"])
            #expect(cut.status == 1)
            #expect(cut.stdout.contains("custody event #\(events - 1): missing, but anchor"), "\(cut.stdout)")
            #expect(cut.stdout.contains("proves the log had it"))
            let fsck = cli.run(["fsck", "--quick"])
            #expect(fsck.status == 1 && fsck.stdout.contains("missing, but anchor"), "\(fsck.stdout)")
            let doctor = cli.run(["doctor", "--offline"])
            #expect(doctor.status == 1 && doctor.stdout.contains("✗ custody"), "\(doctor.stdout)")

            // Whoever cut the log deletes anchors/ too: the log alone looks intact again, the copies still catch it.
            #expect(CLI.exec(["rm", "-rf", anchorsDir]).status == 0)
            // With [custody] configured, no anchor at all is itself a failure: they were deleted.
            let noAnchors = cli.run(["log", "verify"])
            #expect(noAnchors.status == 1 && noAnchors.stdout.contains("no anchor verifies although [custody] is configured"),
                    "\(noAnchors.stdout)")
            let withCopies = cli.run(["log", "verify", "--anchors", copies])
            #expect(withCopies.status == 1 && withCopies.stdout.contains("custody event #\(events - 1): missing, but anchor"), "\(withCopies.stdout)")
            let noFolder = cli.run(["log", "verify", "--anchors", h.scratch.path + "/nowhere"])
            #expect(noFolder.status == 2 && noFolder.stderr.contains("--anchors \(h.scratch.path)/nowhere: no such folder"), "\(noFolder.stderr)")

            // A planted file with a far-future sequence number does not stop anchoring.
            try FileManager.default.createDirectory(atPath: anchorsDir, withIntermediateDirectories: true)
            let fake = anchorsDir + "/999999999999-" + String(repeating: "ab", count: 32) + ".tsr"
            try Data("not a token".utf8).write(to: URL(fileURLWithPath: fake))
            let reanchored = cli.run(["log", "anchor"])
            #expect(reanchored.status == 0 && !reanchored.stdout.contains("nothing new"), "\(reanchored.stdout)\(reanchored.stderr)")
            let made = try FileManager.default.contentsOfDirectory(atPath: anchorsDir).filter { !$0.hasPrefix("999999999999-") }
            #expect(made.filter { $0.hasSuffix(".tsr") }.count == 1 && made.filter { $0.hasSuffix(".checkpoint") }.count == 1,
                    "the head was anchored (a token and its checkpoint) beside the planted file: \(made)")
        }
    }

    @Test("log anchor time-stamps what ingest appended; a token renamed to another event's hash does not verify")
    func manualAnchor() async throws {
        try await NotarizationCLITests().withSandbox { sandbox in
            let h = try NotarizationCLITests().harness(sandbox)
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
            try (config + "\n\n[custody]\nanchor_tsa = \"tsa\"\n").write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            var cli = h.cli
            cli.environment["EVIDENCE_CONFIG"] = h.configPath!
            for name in ["note.txt", "memo.txt"] {
                let file = h.scratch.path + "/" + name
                _ = FileManager.default.createFile(atPath: file, contents: Data(name.utf8))
                #expect(cli.run(["ingest", file]).status == 0)
            }
            let events = try #require(Int(sqlite(h.home + "/catalog.sqlite", "SELECT max(seq) FROM custody_event").stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)))
            // status shows what the anchors cover: nothing yet.
            #expect(cli.run(["status"]).stdout.contains("anchors  none: [custody] anchor_tsa"))
            let before = try #require((cli.run(["status", "--json"]).json as? [String: Any])?["custodyAnchors"] as? [String: Any])
            #expect(before["count"] as? Int == 0 && before["eventsSinceNewest"] as? Int == events, "\(before)")

            let first = cli.run(["log", "anchor", "--json"])
            #expect(first.status == 0, "\(first.stderr)")
            let anchor = try #require((first.json as? [String: Any])?["anchor"] as? [String: Any])
            #expect((first.json as? [String: Any])?["anchored"] as? Bool == true)
            let path = try #require(anchor["file"] as? String)
            var st = stat()
            #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o444, "anchors are read-only")
            // The token is a plain RFC 3161 reply: openssl ts reads it.
            #expect(CLI.exec(["openssl", "ts", "-reply", "-in", path, "-text"]).stdout.contains("Message data:"))
            // The anchor covers every event; one more ingest is one event not yet covered.
            #expect(cli.run(["status"]).stdout.contains("anchors  1, the newest covers event #\(events), written "))
            let extra = h.scratch.path + "/extra.txt"
            _ = FileManager.default.createFile(atPath: extra, contents: Data("extra".utf8))
            #expect(cli.run(["ingest", extra]).status == 0)
            let after = try #require((cli.run(["status", "--json"]).json as? [String: Any])?["custodyAnchors"] as? [String: Any])
            #expect(after["count"] as? Int == 1 && after["newestSeq"] as? Int == events, "\(after)")
            #expect((after["eventsSinceNewest"] as? Int ?? 0) >= 1 && (after["newestAgeSeconds"] as? Double ?? -1) >= 0, "\(after)")

            // Moved onto event #1's hash, the token's imprint no longer matches its name.
            let db = h.home + "/catalog.sqlite"
            let firstHash = sqlite(db, "SELECT hash FROM custody_event WHERE seq = 1").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let forged = (path as NSString).deletingLastPathComponent + "/000000000001-\(firstHash).tsr"
            #expect(CLI.exec(["cp", path, forged]).status == 0)
            let v = cli.run(["log", "verify"])
            #expect(v.status == 1)
            #expect(v.stdout.contains("custody event #1: anchor 000000000001-\(firstHash).tsr does not verify"), "\(v.stdout)")

            // No [custody]: `log anchor` says what to add, exit 2.
            let bare = h.cli.run(["log", "anchor"])
            #expect(bare.status == 2 && bare.stderr.contains("[custody]"), "\(bare.stderr)")
        }
    }
}
