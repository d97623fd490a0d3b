import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Files that change after they were taken, and empty files, under `evidence run` as a real
/// process with the sandbox's QED and a local archive.
@Suite("Growing, replaced and empty files under evidence run", .ownThread)
struct GrowingFileCLITests {
    let notarization = NotarizationCLITests()

    func show(_ h: RunHarness, _ ref: String) -> [String: Any] {
        (h.cli.run(["show", ref, "--json"]).json as? [String: Any]) ?? [:]
    }

    func item(_ h: RunHarness, _ ref: String) -> [String: Any] { show(h, ref)["item"] as? [String: Any] ?? [:] }

    func events(_ h: RunHarness, _ ref: String) -> [String] {
        (show(h, ref)["custody"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
    }

    @Test("a writer pausing longer than settle: a few items, not one per pause; earlier ones superseded, notarized, never archived; show PATH names the newest")
    func slowWriter() async throws {
        // QED holds each report pending 8 s: no earlier version can reach its archive stage
        // before the writer is done, so "skipped if not yet started" is what this run shows.
        try await notarization.withSandbox(pending: 8) { sandbox in
            let vault = Scratch()
            let h = try notarization.harness(sandbox, notaries: ["qed"],
                                             ruleExtra: "archive = \"vault\"\nremote_path = \"ev/{sha8}-{name}\"\nsettle_max = \"30s\"\n[share]\naccess = \"open\"",
                                             settle: "500ms", configExtra: "[archives.vault]\nkind = \"local\"\npath = \"\(vault.path)\"\n")
            h.verbose = true
            try h.start()
            let f = h.drop + "/upload.mov"
            let chunk = randomBytes(50_000)
            _ = FileManager.default.createFile(atPath: f, contents: chunk)
            #expect(waitUntil(timeout: 20) { h.items() == 1 }, "\(h.log.suffix(2000))")
            // Four more appends 0.6 s apart: each pause is longer than settle (0.5 s), so before
            // the window grew every pause made an item; after the first report the window is 1 s.
            for _ in 0..<4 {
                usleep(600_000)
                let fd = open(f, O_WRONLY | O_APPEND)
                chunk.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            let final = try Data(contentsOf: URL(fileURLWithPath: f))
            #expect(waitUntil(timeout: 30) { h.done(with: [f], size: 250_000) }, "\(h.log.suffix(3000))")
            let count = h.items()
            // 2 on a quiet machine; a third only if the test's own writer stalled past 1 s.
            try #require((2...3).contains(count), "one item per pause is what this prevents: \(count) items")
            let newest = Int64(count)
            #expect(waitUntil(timeout: 60) { item(h, String(newest))["state"] as? String == "done" }, "\(h.log.suffix(3000))")
            #expect(item(h, String(newest))["size"] as? Int == 250_000)
            #expect(item(h, String(newest))["supersededBy"] == nil)
            for id in 1..<newest {
                #expect(item(h, String(id))["supersededBy"] as? Int == Int(id + 1), "each earlier version names its successor")
                // Still notarized: its QED proof confirms; then its archive is skipped, with the reason.
                #expect(waitUntil(timeout: 60) { events(h, String(id)).contains("stage-skipped") }, "\(events(h, String(id)))")
                let kinds = events(h, String(id))
                #expect(kinds.contains("superseded") && kinds.contains("notary-confirmed") && !kinds.contains("archived-file"), "\(kinds)")
            }
            // The archive holds the complete recording only.
            let originals = (FileManager.default.subpaths(atPath: vault.path) ?? []).filter { $0.hasSuffix("-upload.mov") }
            #expect(originals.count == 1, "\(originals)")
            #expect(originals.first.flatMap { FileManager.default.contents(atPath: vault.path + "/" + $0) } == final)

            let byPath = show(h, f)
            #expect((byPath["item"] as? [String: Any])?["id"] as? Int == Int(newest))
            #expect(byPath["earlierVersions"] as? [Int] == Array(1..<Int(newest)))
            let text = h.cli.run(["show", f])
            #expect(text.status == 0 && text.stdout.contains("superseded versions of this path"), "\(text.stdout) \(text.stderr)")
            let status = h.status()
            #expect((status["states"] as? [String: Int])?["superseded"] == count - 1, "\(status)")
            #expect(h.cli.run(["show", "1"]).stdout.contains("superseded by #2"))
            #expect(h.cli.run(["log", "verify"]).status == 0)
            #expect(h.cli.run(["fsck", "--quick"]).status == 0)
            #expect(h.stop() == 0)

            // Clearing the mark by SQL (so an earlier, truncated version passes for the newest) is caught.
            let edit = CLI.exec(["sqlite3", "-bail", h.home + "/catalog.sqlite", "UPDATE item SET superseded_by = NULL WHERE id = 1;"])
            #expect(edit.status == 0, "\(edit.stderr)")
            let verify = h.cli.run(["log", "verify"])
            #expect(verify.status == 1 && verify.stdout.contains("item #1 is not superseded in the catalog, but its custody events record it superseded by #2"),
                    "\(verify.stdout)")
        }
    }

    @Test("a 0-byte file is taken and flagged empty; under a rule saying empty = \"skip\" it is left, and taken once it has content")
    func emptyFiles() throws {
        let h = RunHarness(settle: "0s")
        let skipping = h.scratch.path + "/skipping"
        try FileManager.default.createDirectory(atPath: skipping, withIntermediateDirectories: true)
        try "path = \"\(skipping)\"\nsettle = \"0s\"\nempty = \"skip\"\n".write(toFile: h.rules + "/skip.toml", atomically: true, encoding: .utf8)
        try h.start()
        h.write("blank.mov", Data())
        #expect(waitUntil(timeout: 20) { h.items() == 1 }, "\(h.log.suffix(2000))")
        let it = item(h, "1")
        #expect(it["size"] as? Int == 0)
        #expect(h.status()["empty"] as? Int == 1)
        #expect(h.cli.run(["show", "1"]).stdout.contains("empty: the file was 0 bytes"))
        #expect(h.log.contains("\"empty\":\"0 bytes: flagged empty\""), "\(h.log.suffix(2000))")
        #expect(events(h, "1").first == "ingested")

        let later = skipping + "/later.mov"
        _ = FileManager.default.createFile(atPath: later, contents: Data())
        #expect(waitUntil(timeout: 20) { h.log.contains("empty file not taken") }, "\(h.log.suffix(2000))")
        #expect(h.items() == 1)
        try Data("now it holds something".utf8).write(to: URL(fileURLWithPath: later))
        #expect(waitUntil(timeout: 20) { h.items() == 2 }, "\(h.log.suffix(2000))")
        #expect(h.stop() == 0)
    }
}

/// A rule whose folder is missing (an unmounted dock): a warning everywhere, never a refusal.
@Suite("A rule whose folder is missing", .ownThread)
struct MissingFolderCLITests {
    @Test("rules check, doctor and run all warn; run takes the other rules' files and the dock's once it is mounted")
    func missingFolder() throws {
        let h = RunHarness(settle: "0s")
        let dock = h.scratch.path + "/dock"
        try "path = \"\(dock)\"\nsettle = \"0s\"\n".write(toFile: h.rules + "/dock.toml", atomically: true, encoding: .utf8)
        let check = h.cli.run(["rules", "check", h.rules])
        #expect(check.status == 0 && check.stdout.contains("watched folder \(dock) does not exist (yet)"), "\(check.stdout) \(check.stderr)")
        let doctor = h.cli.run(["doctor", "--offline", "--rules", h.rules], timeout: 60)
        #expect(doctor.stdout.contains("! folders") && doctor.stdout.contains(dock), "\(doctor.stdout)")
        #expect(!doctor.stdout.contains("✗ rules"), "\(doctor.stdout)")

        try h.start()
        #expect(h.log.contains("does not exist (yet)"), "\(h.log.suffix(2000))")
        h.write("one.bin", Data("from the present folder".utf8))
        #expect(waitUntil(timeout: 20) { h.items() == 1 }, "\(h.log.suffix(2000))")
        // Mounted later, with a file already on it.
        let staging = h.scratch.path + "/staging"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        try Data("already on the dock".utf8).write(to: URL(fileURLWithPath: staging + "/clip.bin"))
        #expect(rename(staging, dock) == 0)
        #expect(waitUntil(timeout: 30) { h.items() == 2 }, "\(h.log.suffix(2000))")
        let sources = (h.cli.run(["show", dock + "/clip.bin", "--json"]).json as? [String: Any])?["sources"] as? [[String: Any]]
        #expect(sources?.first?["rule"] as? String == "dock")
        #expect(h.stop() == 0)
    }
}
