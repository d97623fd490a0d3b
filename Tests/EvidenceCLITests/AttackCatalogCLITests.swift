import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Attacks on a catalog made by a real `evidence run` (QED and the sandbox's RFC 3161 TSA, with
/// `[custody]` anchors), done with the `sqlite3` command-line tool alone — whose shell starts
/// with foreign keys off — and `rm`: rows deleted or changed, no custody event touched.
/// `log verify`, `fsck` and `doctor` must each fail (exit 1) and name the event and the row.
@Suite("Attacks on the catalog with sqlite3: what was deleted or changed without its event", .ownThread)
struct AttackCatalogCLITests {
    let notarization = NotarizationCLITests()

    struct Home {
        let h: RunHarness
        let cli: CLI
        var db: String { h.home + "/catalog.sqlite" }

        func sqlite(_ sql: String) -> CLI.Result { CLI.exec(["sqlite3", "-bail", db, sql]) }
        func value(_ sql: String) -> String { sqlite(sql).stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
        /// The item taken in from the file named `name`.
        func item(named name: String) -> String { value("SELECT item_id FROM source WHERE name = '\(name)'") }
        func objectPath(_ hex: String) -> String { "\(h.home)/objects/sha256/\(hex.prefix(2))/\(hex)" }
        /// The newest event of `kind` about `item` whose details contain `fragment`.
        func seq(_ kind: String, item: String, containing fragment: String = "") -> String {
            value("SELECT max(seq) FROM custody_event WHERE kind = '\(kind)' AND item_id = \(item) AND instr(details, '\(fragment)') > 0")
        }

        /// `log verify`, `fsck` and `doctor --offline` all exit 1 and say `expected` (doctor shows
        /// the first problems only, so it is asked for the first line alone).
        func expectCaught(_ expected: [String], sourceLocation: SourceLocation = #_sourceLocation) {
            let verify = cli.run(["log", "verify"])
            #expect(verify.status == 1, "log verify: \(verify.stdout)\(verify.stderr)", sourceLocation: sourceLocation)
            let fsck = cli.run(["fsck", "--quick"])
            #expect(fsck.status == 1, "fsck: \(fsck.stdout)\(fsck.stderr)", sourceLocation: sourceLocation)
            for text in expected {
                #expect(verify.stdout.contains(text), "log verify does not say \(text): \(verify.stdout)", sourceLocation: sourceLocation)
                #expect(fsck.stdout.contains(text), "fsck does not say \(text): \(fsck.stdout)", sourceLocation: sourceLocation)
            }
            let doctor = cli.run(["doctor", "--offline", "--rules", h.rules, "--json"], timeout: 60)
            #expect(doctor.status == 1, "doctor: \(doctor.stdout)\(doctor.stderr)", sourceLocation: sourceLocation)
            let custody = (doctor.json as? [[String: Any]])?.first { $0["check"] as? String == "custody" }
            #expect(custody?["status"] as? String == "fail", "doctor: \(doctor.stdout)", sourceLocation: sourceLocation)
            #expect((doctor.json as? [[String: Any]])?.filter { $0["status"] as? String == "fail" }.count == 1,
                    "custody is the only failing check: \(doctor.stdout)", sourceLocation: sourceLocation)
        }
    }

    /// Two files run through QED and the TSA to `done`, the log anchored, every check clean.
    func withAnchoredHome(_ body: (Home) throws -> Void) async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox)
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
            try (config + "\n\n[custody]\nanchor_tsa = \"tsa\"\n").write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            var cli = h.cli
            cli.environment["EVIDENCE_CONFIG"] = h.configPath!
            try h.start()
            h.write("statement.txt", Data("The witness saw the blue car at 21:04.\n".utf8))
            h.write("photo.bin", randomBytes(3_000))
            #expect(ProviderCLITests().waitDone(h, 2, timeout: 60), "\(h.log.suffix(2000))")
            #expect(h.stop() == 0)
            #expect(cli.run(["log", "anchor"]).status == 0)
            let home = Home(h: h, cli: cli)
            let verify = cli.run(["log", "verify"])
            #expect(verify.status == 0, "before the attack: \(verify.stdout)")
            let fsck = cli.run(["fsck", "--quick"])
            #expect(fsck.status == 0, "before the attack: \(fsck.stdout)")
            let doctor = cli.run(["doctor", "--offline", "--rules", h.rules], timeout: 60)
            #expect(doctor.status == 0, "before the attack: \(doctor.stdout)")
            #expect(home.value("PRAGMA foreign_keys") == "0", "the sqlite3 shell starts with foreign keys off")
            try body(home)
        }
    }

    @Test("a TSA proof row deleted with sqlite3: the notary-confirmed event names the missing row, and its receipt in the store is a problem, not an orphan note")
    func proofRowDeleted() async throws {
        try await withAnchoredHome { home in
            let item = home.item(named: "statement.txt")
            let receipt = home.value("SELECT receipt FROM proof WHERE item_id = \(item) AND notary = 'tsa'")
            #expect(receipt.count == 64)
            let seq = home.seq("notary-confirmed", item: item, containing: "\"notary\":\"tsa\"")
            let delete = home.sqlite("DELETE FROM proof WHERE item_id = \(item) AND notary = 'tsa';")
            #expect(delete.status == 0, "\(delete.stderr)")

            home.expectCaught(["custody event #\(seq): notary-confirmed event records the proof of item #\(item) by tsa (receipt \(receipt.prefix(8))), "
                               + "which has no proof row: the proof was deleted from the catalog"])
            let fsck = home.cli.run(["fsck", "--quick", "--json"])
            let report = try #require(fsck.json as? [String: Any])
            let problems = report["problems"] as? [String] ?? []
            #expect(problems.contains { $0.hasPrefix("custody event #\(seq): records \(home.objectPath(receipt)), the receipt of item #\(item) by tsa") },
                    "\(problems)")
            #expect(!(report["orphans"] as? [String] ?? []).contains(home.objectPath(receipt)), "not a mere orphan: \(report)")
            let verify = try #require(home.cli.run(["log", "verify", "--json"]).json as? [String: Any])
            let named = (verify["problems"] as? [[String: Any]] ?? []).compactMap { $0["seq"] as? Int }
            #expect(named.contains(Int(seq) ?? -1), "log verify --json names event #\(seq): \(verify)")
            // verify ITEM fails on it, and no bundle is written that would silently omit the proof.
            let item1 = home.cli.run(["verify", item])
            #expect(item1.status == 1 && item1.stdout.contains("✗ proof recorded in custody: custody event #\(seq)"), "\(item1.stdout)")
            let bundle = home.cli.run(["bundle", item, "-o", home.h.scratch.path + "/omitting-bundle"])
            #expect(bundle.status != 0 && bundle.stderr.contains("records tsa confirmed"), "\(bundle.stdout)\(bundle.stderr)")
            #expect(!FileManager.default.fileExists(atPath: home.h.scratch.path + "/omitting-bundle"))
        }
    }

    @Test("a whole item deleted with sqlite3 (item, sources, proofs, certificates, jobs) and its store objects removed: its events name what is gone")
    func wholeItemDeleted() async throws {
        try await withAnchoredHome { home in
            let item = home.item(named: "photo.bin")
            let original = home.value("SELECT sha256 FROM item WHERE id = \(item)")
            let objects = [original] + home.value("SELECT receipt FROM proof WHERE item_id = \(item) AND receipt IS NOT NULL "
                                                  + "UNION SELECT sha256 FROM certificate WHERE item_id = \(item)").split(separator: "\n").map(String.init)
            #expect(objects.count >= 4, "the original, two receipts, certificates: \(objects)")
            let ingested = home.seq("ingested", item: item)
            let delete = home.sqlite("""
                DELETE FROM job WHERE item_id = \(item); DELETE FROM certificate WHERE item_id = \(item);
                DELETE FROM proof WHERE item_id = \(item); DELETE FROM source WHERE item_id = \(item);
                DELETE FROM item WHERE id = \(item);
                """)
            #expect(delete.status == 0, "\(delete.stderr)")
            for hex in objects { #expect(CLI.exec(["rm", "-f", home.objectPath(hex)]).status == 0) }

            home.expectCaught([
                "custody event #\(ingested): ingested event records item #\(item) (\(original.prefix(8)), photo.bin), which has no item row: "
                    + "the item was deleted from the catalog",
                "custody event #\(ingested): store object \(original), the original of item #\(item) (ingested event), is missing from the store",
                "notary-confirmed event records the proof of item #\(item) by qed",
                "certificate event records certificate evidence of item #\(item)",
            ])
        }
    }

    @Test("a source renamed with sqlite3 (path and name): its ingested event names the source that is gone, and the renamed row has no event")
    func sourceRenamed() async throws {
        try await withAnchoredHome { home in
            let item = home.item(named: "statement.txt")
            let path = home.value("SELECT path FROM source WHERE item_id = \(item)")
            #expect(path.hasSuffix("/statement.txt"))
            let ingested = home.seq("ingested", item: item)
            let update = home.sqlite("UPDATE source SET path = '/srv/drop/alibi.txt', name = 'alibi.txt' WHERE item_id = \(item);")
            #expect(update.status == 0, "\(update.stderr)")

            home.expectCaught([
                "custody event #\(ingested): ingested event records source \"\(path)\" (name \"statement.txt\", rule cam) of item #\(item), "
                    + "which has no such source row: the source was deleted or renamed in the catalog",
                "of item #\(item) (\"/srv/drop/alibi.txt\", name \"alibi.txt\", rule cam) has no ingested or seen-again event",
            ])
        }
    }

    @Test("a QED proof's explorer link repointed with sqlite3: the notary-confirmed event records the link, and the difference is named")
    func explorerLinkRepointed() async throws {
        try await withAnchoredHome { home in
            let item = home.item(named: "statement.txt")
            let link = home.value("SELECT link FROM proof WHERE item_id = \(item) AND notary = 'qed'")
            #expect(link.hasPrefix("http"), "the sandbox's report has an explorer link: \(link)")
            let seq = home.seq("notary-confirmed", item: item, containing: "\"notary\":\"qed\"")
            let forged = "https://explorer.evil.example/tx/forged"
            let update = home.sqlite("UPDATE proof SET link = '\(forged)' WHERE item_id = \(item) AND notary = 'qed';")
            #expect(update.status == 0, "\(update.stderr)")

            home.expectCaught([
                "custody event #\(seq): proof of item #\(item) by qed differs from its newest event (notary-confirmed): "
                    + "the catalog has link \"\(forged)\", the event records \"\(link)\": the proof row was changed without its event",
            ])
        }
    }
}
