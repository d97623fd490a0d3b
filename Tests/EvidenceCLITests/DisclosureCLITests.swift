import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Cases, tags and disclosure packages against a real sandbox (QED emulation, a TSA backed by
/// `openssl ts`): the package is checked with `sha256sum -c`, `openssl ts -verify`, `qpdf
/// --check` and `pdftotext`, then tampered with.
@Suite("Cases and disclosure packages: real processes", .serialized, .ownThread)
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
                let ts = CLI.exec(["openssl", "ts", "-verify", "-data", "original/\(name)", "-in", "proofs/tsa.tsr",
                                   "-CAfile", ca, "-untrusted", "proofs/tsa-tsa.crt"], cwd: folder)
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
}
