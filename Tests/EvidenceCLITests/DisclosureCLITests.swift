import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Cases, tags and disclosure packages against a real sandbox (QED emulation, a TSA backed by
/// `openssl ts`): the package is checked with `sha256sum -c`, `openssl ts -verify`, `qpdf
/// --check` and `pdftotext`, then tampered with.
@Suite("Cases and disclosure packages: real processes", .ownThread)
struct DisclosureCLITests {
    let n = NotarizationCLITests()

    @Test("a case's disclosure package verifies with sha256sum and openssl ts alone, and evidence verify catches each tampering")
    func disclosePackage() async throws {
        try await n.withSandbox { sandbox in
            let h = try n.harness(sandbox, notaries: ["tsa"])
            try h.start()
            h.write("stop-a.bin", randomBytes(30_000))
            h.write("stop-b.bin", randomBytes(20_000))
            h.write("other.bin", randomBytes(10_000))
            #expect(waitUntil(timeout: 60) { ["1", "2", "3"].allSatisfy { n.state(h, $0) == "done" } }, "log: \(h.log)")
            let cfg = ["--config", h.configPath!]
            // Ids by file name (the three are taken in in any order).
            var id: [String: String] = [:]
            for i in ["1", "2", "3"] {
                if let name = (n.show(h, i)["sources"] as? [[String: Any]])?.first?["name"] as? String { id[name] = i }
            }
            let (a, b, other) = (id["stop-a.bin"] ?? "?", id["stop-b.bin"] ?? "?", id["other.bin"] ?? "?")

            // Cases and tags.
            #expect(h.cli.run(cfg + ["case", "create", "2026-0412", "--title", "Riverside stop"]).status == 0)
            let again = h.cli.run(cfg + ["case", "create", "2026-0412"])
            #expect(again.status == 1 && again.stderr.contains("exists already"))
            #expect(h.cli.run(cfg + ["case", "create", "../x"]).status == 2)
            let missing = h.cli.run(cfg + ["case", "add", "nope", "1"])
            #expect(missing.status == 1 && missing.stderr.contains("no case \"nope\""))
            let bySearch = h.cli.run(cfg + ["case", "add", "2026-0412", "--search", "STOP-", "--json"])
            #expect(bySearch.status == 0)
            #expect(((bySearch.json as? [String: Any])?["added"] as? [Int])?.count == 2, "\(bySearch.stdout)")
            #expect(h.cli.run(cfg + ["case", "add", "2026-0412", other]).status == 0)
            #expect(h.cli.run(cfg + ["case", "remove", "2026-0412", other, "--reason", "not from this stop"]).status == 0)
            #expect(h.cli.run(cfg + ["tag", a, "use-of-force", "night"]).status == 0)
            #expect(h.cli.run(cfg + ["tag", a, "night", "--remove"]).status == 0)
            let shown = h.cli.run(cfg + ["case", "show", "2026-0412", "--json"]).json as? [String: Any]
            let items = shown?["items"] as? [[String: Any]] ?? []
            #expect(Set(items.compactMap { ($0["id"] as? Int).map(String.init) }) == [a, b], "\(String(describing: shown))")
            #expect(items.first { ($0["id"] as? Int).map(String.init) == a }?["tags"] as? [String] == ["use-of-force"])
            let list = h.cli.run(cfg + ["case", "list", "--json"]).json as? [[String: Any]]
            #expect(list?.first?["items"] as? Int == 2)

            // The package.
            let dir = h.scratch.path + "/disclosure"
            let d = h.cli.run(cfg + ["disclose", "2026-0412", "-o", dir])
            #expect(d.status == 0, "\(d.stdout) \(d.stderr)")
            let sums = CLI.exec(["sha256sum", "-c", "SHA256SUMS"], cwd: dir)
            #expect(sums.status == 0 && !sums.stdout.contains("FAILED"), "\(sums.stdout)")
            #expect(sums.stdout.contains("items/\(a)-stop-a.bin/original/stop-a.bin: OK"))
            let ca = h.scratch.path + "/tsa-ca.pem"
            for (i, name) in [(a, "stop-a.bin"), (b, "stop-b.bin")] {
                let folder = dir + "/items/\(i)-\(name)"
                #expect(FileManager.default.fileExists(atPath: folder + "/proofs/tsa.ers"), "the default batches: an evidence record")
                let ts = n.opensslVerify(bundle: folder, original: name, ca: ca)
                #expect(ts.status == 0 && ts.stdout.contains("Verification: OK"), "\(ts.stdout) \(ts.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/items/\(other)-other.bin"), "a removed item is not disclosed")
            #expect(CLI.exec(["qpdf", "--check", dir + "/index.pdf"]).status == 0)
            let text = CLI.exec(["pdftotext", "-layout", dir + "/index.pdf", "-"]).stdout
            let hash1 = (n.show(h, a)["item"] as? [String: Any])?["sha256"] as? String ?? "?"
            #expect(text.contains(hash1) && text.contains("Case 2026-0412") && text.contains("Riverside stop") && text.contains("Page 1 of"), "\(text)")
            let csv = (try? String(contentsOfFile: dir + "/custody.csv", encoding: .utf8)) ?? ""
            #expect(csv.hasPrefix("seq,at,item,kind,actor,details,prev_hash,hash\r\n"))
            #expect(csv.contains(",case-opened,") && csv.contains(",case-removed,") && csv.contains(",ingested,"))
            let v = h.cli.run(["verify", dir, "--trust", ca])
            #expect(v.status == 0, "\(v.stdout)")
            #expect(v.stdout.contains("package verified: 2 of 2 item(s) proven"), "\(v.stdout)")
            let noAnchor = h.cli.run(["verify", dir])
            #expect(noAnchor.status == 1 && noAnchor.stdout.contains("PACKAGE NOT PROVEN"), "\(noAnchor.stdout)")
            // Who took what away: an accessed event per disclosed item, in its own bundle too.
            let accessed = (n.show(h, b)["custody"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "accessed" }
            #expect(accessed.contains { ($0["details"] as? String)?.contains("disclosed in case 2026-0412") == true }, "\(accessed)")

            // Tampering, each on a fresh copy: a changed CSV (SHA256SUMS re-made to match), an
            // item folder dropped from the package and the manifest, an added file.
            func tampered(_ name: String, _ change: (String) throws -> Void) throws -> CLI.Result {
                let copy = h.scratch.path + "/" + name
                #expect(CLI.exec(["cp", "-a", dir, copy]).status == 0)
                try change(copy)
                return h.cli.run(["verify", copy, "--trust", ca])
            }
            func resum(_ copy: String) {
                _ = CLI.exec(["sh", "-c", "find . -type f ! -name SHA256SUMS | sed 's|^./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS"], cwd: copy)
            }
            let csvEdit = try tampered("t-csv") { copy in
                let edited = csv.replacingOccurrences(of: "case-removed", with: "case-added")
                try edited.write(toFile: copy + "/custody.csv", atomically: true, encoding: .utf8)
                resum(copy)
            }
            #expect(csvEdit.status == 1 && csvEdit.stdout.contains("✗ custody.csv is the events'"), "\(csvEdit.stdout)")
            let dropped = try tampered("t-drop") { copy in
                try FileManager.default.removeItem(atPath: copy + "/items/\(b)-stop-b.bin")
                let m = try String(contentsOfFile: copy + "/disclosure.json", encoding: .utf8)
                var json = try JSONSerialization.jsonObject(with: Data(m.utf8)) as! [String: Any]
                json["items"] = (json["items"] as! [[String: Any]]).filter { ($0["id"] as? Int).map(String.init) != b }
                try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: copy + "/disclosure.json"))
                resum(copy)
            }
            #expect(dropped.status == 1 && dropped.stdout.contains("✗ case custody events"), "\(dropped.stdout)")
            let added = try tampered("t-add") { copy in
                try "x".write(toFile: copy + "/items/\(a)-stop-a.bin/original/extra.txt", atomically: true, encoding: .utf8)
            }
            #expect(added.status == 1 && added.stdout.contains("present but not in SHA256SUMS"), "\(added.stdout)")
            // An extra file listed in SHA256SUMS (a "read me first" naming another CA) is still not the package's.
            let listedExtra = try tampered("t-listed") { copy in
                try "trust proofs/tsa-ca.pem\n".write(toFile: copy + "/READ-ME-FIRST.md", atomically: true, encoding: .utf8)
                resum(copy)
            }
            #expect(listedExtra.status == 1 && listedExtra.stdout.contains("READ-ME-FIRST.md: a file the package does not have"), "\(listedExtra.stdout)")
            // One item listed twice (its bundle copied to a second folder), and a manifest text with a line break.
            func editManifest(_ copy: String, _ change: (inout [String: Any]) -> Void) throws {
                let m = try Data(contentsOf: URL(fileURLWithPath: copy + "/disclosure.json"))
                var json = try JSONSerialization.jsonObject(with: m) as! [String: Any]
                change(&json)
                try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: copy + "/disclosure.json"))
            }
            let twice = try tampered("t-twice") { copy in
                #expect(CLI.exec(["cp", "-a", copy + "/items/\(a)-stop-a.bin", copy + "/items/\(a)-stop-a.bim"]).status == 0)
                try editManifest(copy) { json in
                    var items = json["items"] as! [[String: Any]]
                    var again = items.first { ($0["id"] as? Int).map(String.init) == a }!
                    again["folder"] = "items/\(a)-stop-a.bim"
                    items.append(again)
                    json["items"] = items
                }
                resum(copy)
            }
            #expect(twice.status == 1 && twice.stdout.contains("an item is listed twice"), "\(twice.stdout)")
            let injected = try tampered("t-text") { copy in
                try editManifest(copy) { json in json["tool"] = "evidence 9\n\n## 0. First trust proofs/tsa-ca.pem" }
                let m = try Data(contentsOf: URL(fileURLWithPath: copy + "/disclosure.json"))
                _ = m
                resum(copy)
            }
            #expect(injected.status == 1 && injected.stdout.contains("tool holds a control or invisible formatting character"), "\(injected.stdout)")
            // A FIFO in place of custody.csv is refused at once, not waited on.
            let fifo = try tampered("t-fifo") { copy in
                try FileManager.default.removeItem(atPath: copy + "/custody.csv")
                #expect(mkfifo(copy + "/custody.csv", 0o600) == 0)
            }
            #expect(fifo.status == 1 && fifo.stdout.contains("custody.csv: not a regular file"), "\(fifo.stdout)")

            // The same package as a .zip, extracted by Python's zipfile (not our code).
            let zip = h.scratch.path + "/case.zip"
            #expect(h.cli.run(cfg + ["disclose", "2026-0412", "-o", zip]).status == 0)
            let out = h.scratch.path + "/unzipped"
            #expect(CLI.exec(["python3", "-c", "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])", zip, out]).status == 0)
            #expect(CLI.exec(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd: out + "/disclosure-2026-0412").status == 0)
            #expect(h.cli.run(["verify", out + "/disclosure-2026-0412", "--trust", ca]).status == 0)
            #expect(h.cli.run(cfg + ["disclose", "2026-0412", "-o", zip]).status == 1, "an existing zip is never overwritten")
            #expect(h.cli.run(["fsck"]).status == 0)
            #expect(h.stop() == 0)
        }
    }

    @Test("a certificate a court can file: rule labels and a sidecar, local time, a plain media line; declare writes a signable FRE 902(13)/(14) certification")
    func courtCertificate() async throws {
        try await n.withSandbox { sandbox in
            let labels = "include = [\"*.mp4\"]\n[labels]\nagency = \"Riverside PD\"\nofficer = \"Rule Officer\"\ndevice = \"Axon Body 4\""
            let h = try n.harness(sandbox, notaries: ["tsa"], ruleExtra: labels)
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
            try ("timezone = \"Europe/Berlin\"\n" + config).write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            let clip = try Data(contentsOf: URL(fileURLWithPath: CLI.samples + "/bodycam-2024-05-01.mp4"))
            // The device's sidecar: the officer it names replaces the rule's; a field it does not know is ignored.
            h.write("bodycam.json", Data(#"{"officer": "Ofc. A. Rivera #4411", "case": "INC-2026-0412", "firmware": "1.2"}"#.utf8))
            h.write("bodycam.mp4", clip)
            try h.start()
            #expect(waitUntil(timeout: 60) { n.state(h, "1") == "done" }, "log: \(h.log)")
            let custody = n.show(h, "1")["custody"] as? [[String: Any]] ?? []
            let labelled = custody.first { $0["kind"] as? String == "labelled" }?["details"] as? String ?? ""
            #expect(labelled.contains("bodycam.json") && labelled.contains("sidecar_sha256") && labelled.contains("Rivera"), "\(custody)")
            let cfg = ["--config", h.configPath!]
            let cert = h.scratch.path + "/cert.pdf"
            #expect(h.cli.run(cfg + ["cert", "1", "-o", cert]).status == 0)
            #expect(CLI.exec(["qpdf", "--check", cert]).status == 0)
            let text = CLI.exec(["pdftotext", "-layout", cert, "-"]).stdout
            for expected in ["Riverside PD", "Ofc. A. Rivera #4411", "INC-2026-0412", "Axon Body 4", "Europe/Berlin", "MP4 video, ", "H.264"] {
                #expect(text.contains(expected), "certificate lacks \(expected): \(text)")
            }
            #expect(!text.contains("Rule Officer") && !text.contains("mov,mp4"), "\(text)")
            // The poster frame: decoded in the confined probe child, kept in the store, recorded, drawn.
            let poster = custody.first { $0["kind"] as? String == "poster" }?["details"] as? String ?? ""
            #expect(poster.contains("\"width\":\"320\"") && poster.contains("\"height\":\"240\""), "\(custody)")
            let images = CLI.exec(["pdfimages", "-list", cert]).stdout
            #expect(images.contains(" 320   240 "), "\(images)")
            #expect(text.contains("Poster frame"))
            #expect(h.cli.run(cfg + ["fsck"]).stdout.contains("orphan") == false, "the poster is recorded, not an orphan")

            let declaration = h.scratch.path + "/declaration.pdf"
            let d = h.cli.run(cfg + ["declare", "1", "--custodian", "J. Smith", "--role", "Records custodian", "--agency", "Riverside PD",
                                     "-o", declaration])
            #expect(d.status == 0, "\(d.stderr)")
            #expect(CLI.exec(["qpdf", "--check", declaration]).status == 0)
            let dtext = CLI.exec(["pdftotext", declaration, "-"]).stdout
            let hash = (n.show(h, "1")["item"] as? [String: Any])?["sha256"] as? String ?? "?"
            let exe = String(CLI.exec(["sha256sum", CLI.binary]).stdout.prefix(64))
            for expected in [hash, exe, "902(13)", "902(14)", "J. Smith", "Records custodian", "penalty of perjury", "Signature", "Page 1 of"] {
                #expect(dtext.contains(expected), "declaration lacks \(expected): \(dtext)")
            }
            // Rendered, the pages are not blank.
            #expect(CLI.exec(["pdftoppm", "-r", "30", "-png", declaration, h.scratch.path + "/decl"]).status == 0)
            let page = (try? Data(contentsOf: URL(fileURLWithPath: h.scratch.path + "/decl-1.png")))?.count ?? 0
            #expect(page > 2_000, "page 1 renders to \(page) bytes")
            let accessed = (n.show(h, "1")["custody"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "accessed" }
            #expect(accessed.contains { ($0["details"] as? String)?.contains("declaration by J. Smith") == true })
            #expect(h.cli.run(cfg + ["declare", "1", "--custodian", "", "-o", declaration]).status == 2)

            // The portal shows the poster on the item page: Chromium renders the test pattern's bars.
            let withServe = try String(contentsOfFile: h.configPath!, encoding: .utf8) + """

                [serve]
                user = "auditor"
                password_env = "EVIDENCE_TEST_PORTAL_PASSWORD"

                """
            try withServe.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            let serve = try ServeCLITests.ServeProcess(config: h.configPath!, home: h.home, scratch: h.scratch.path,
                                                       environment: ["EVIDENCE_TEST_PORTAL_PASSWORD": "pw"])
            let png = CLI.exec(["curl", "-sf", "-u", "auditor:pw", "-o", h.scratch.path + "/poster.png", "-w", "%{content_type}", serve.url + "items/1/poster.png"])
            #expect(png.status == 0 && png.stdout == "image/png", "\(png.stdout)")
            let chromium = try #require(["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                        "chromium is not installed: run scripts/deps.sh")
            let shot = h.scratch.path + "/item.png"
            let authed = serve.url.replacingOccurrences(of: "http://", with: "http://auditor:pw@")
            #expect(CLI.exec([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                              "--user-data-dir=" + h.scratch.path + "/chromium-profile", "--window-size=1200,1000",
                              "--screenshot=" + shot, authed + "items/1"], timeout: 90).status == 0)
            let screen = try PNGImage(data: try #require(FileManager.default.contents(atPath: shot)))
            // testsrc's pure magenta and green bars, about 8,700 pixels each in a 320×240 frame.
            #expect(screen.count((255, 0, 255), tolerance: 40) > 3_000, "magenta pixels: \(screen.count((255, 0, 255), tolerance: 40))")
            #expect(screen.count((0, 255, 0), tolerance: 40) > 3_000, "green pixels: \(screen.count((0, 255, 0), tolerance: 40))")
            #expect(serve.stop() == 0)
            #expect(h.stop() == 0)
        }
    }
}
