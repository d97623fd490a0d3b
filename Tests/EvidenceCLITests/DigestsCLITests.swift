import EvidenceTesting
import Foundation
import Testing

/// Several digests of one read (issue: NSRL and forensic tools look files up by MD5 and SHA-1):
/// recorded at ingest, shown, printed on the certificate, and put in bundles as MD5SUMS/SHA1SUMS
/// that coreutils' md5sum -c and sha1sum -c check.
@Suite("Several digests: MD5 and SHA-1 beside SHA-256", .ownThread)
struct DigestsCLITests {
    func tool(_ name: String, _ path: String) -> String { String(CLI.exec([name, path]).stdout.prefix { $0 != " " }) }

    @Test("ingest --digest md5 --digest sha1: show, the certificate and the bundle agree with md5sum and sha1sum; a forged MD5SUMS is refused")
    func ingestShowBundle() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        let file = s.file("statement.txt", "The witness saw the blue car at 21:04.\n")
        let r = cli.run(["ingest", "--digest", "md5", "--digest", "sha1", file])
        #expect(r.status == 0, "\(r.stderr)")
        let md5 = tool("md5sum", file), sha1 = tool("sha1sum", file)
        let shown = try #require(cli.run(["show", "1", "--json"]).json as? [String: Any])
        #expect(shown["digests"] as? [String: String] == ["md5": md5, "sha1": sha1], "\(shown["digests"] ?? "none")")
        let text = cli.run(["show", "1"]).stdout
        #expect(text.contains("md5       \(md5)") && text.contains("sha1      \(sha1)"), "\(text)")
        // Recorded in the custody log itself, under the event's hash.
        let ingested = (shown["custody"] as? [[String: Any]])?.first { $0["kind"] as? String == "ingested" }
        #expect((ingested?["details"] as? String)?.contains("\"md5\":\"\(md5)\"") == true, "\(ingested ?? [:])")

        let pdf = s.path + "/evidence.pdf"
        #expect(cli.run(["cert", "1", "--origin", "evidence", "-o", pdf]).status == 0)
        let printed = CLI.exec(["pdftotext", pdf, "-"]).stdout
        #expect(printed.contains(md5) && printed.contains(sha1) && printed.contains("MD5") && printed.contains("SHA-1"), "\(printed)")

        let dir = s.path + "/bundle"
        #expect(cli.run(["bundle", "1", "-o", dir]).status == 0)
        for (sumsTool, sums) in [("md5sum", "MD5SUMS"), ("sha1sum", "SHA1SUMS"), ("sha256sum", "SHA256SUMS")] {
            let c = CLI.exec([sumsTool, "-c", sums], cwd: dir)
            #expect(c.status == 0 && c.stdout.contains("OK"), "\(sumsTool): \(c.stdout)\(c.stderr)")
        }
        let verify = cli.run(["verify", dir])
        #expect(verify.stdout.contains("✓ other digests: MD5 \(md5), SHA-1 \(sha1) recomputed from the original"), "\(verify.stdout)")
        #expect(try String(contentsOfFile: dir + "/VERIFY.md", encoding: .utf8).contains("md5sum -c MD5SUMS"))

        // A forger changes MD5SUMS and the manifest to another MD5 (every hash redone): refused twice,
        // by the original's own MD5 and by the one the custody log recorded.
        let forged = s.path + "/forged"
        #expect(CLI.exec(["cp", "-a", dir, forged]).status == 0)
        _ = CLI.exec(["chmod", "-R", "u+w", forged])
        let other = String(repeating: "0", count: 32)
        AttackVerdictCLITests().python("""
            import json, os, sys
            d = sys.argv[1]
            open(os.path.join(d, 'MD5SUMS'), 'w').write('\(other)  original/statement.txt\\n')
            m = json.load(open(os.path.join(d, 'manifest.json')))
            m['item']['digests']['md5'] = '\(other)'
            json.dump(m, open(os.path.join(d, 'manifest.json'), 'w'), indent=2, sort_keys=True)
            """, in: forged)
        AttackVerdictCLITests().python(AttackVerdictCLITests.fixEntry, in: forged, ["MD5SUMS"])
        AttackVerdictCLITests().resum(forged)
        let refused = cli.run(["verify", forged])
        #expect(refused.status == 1 && refused.stdout.contains("✗ other digests: the original's MD5 is \(md5), the manifest says \(other)")
                && refused.stdout.contains("is not the one recorded at ingest"), "\(refused.stdout)")
        #expect(CLI.exec(["md5sum", "-c", "MD5SUMS"], cwd: forged).status != 0)

        // Unknown names are refused before anything is read.
        let bad = cli.run(["ingest", "--digest", "crc32", file])
        #expect(bad.status == 2 && bad.stderr.contains("--digest crc32"), "\(bad.stderr)")
    }
}
