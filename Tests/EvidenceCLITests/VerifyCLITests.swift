import Foundation
import Glibc
import EvidenceTesting
import Testing

@Suite("CLI: verify, fsck, log verify", .ownThread)
struct VerifyCLITests {
    @Test("verify FILE finds an ingested file (store intact, but NOT PROVEN without a time-stamp) and fails a changed copy")
    func verifyFile() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        let f = s.file("report.txt", "original words")
        #expect(cli.run(["ingest", f]).status == 0)
        let ok = cli.run(["verify", f])
        #expect(ok.stdout.contains("✓ store object re-hashed") && !ok.stdout.contains("✗"), "\(ok.stdout)")
        // Ingested only: nothing proves when it existed, so it is not "verified".
        #expect(ok.status == 1 && ok.stdout.contains("NOT PROVEN"), "\(ok.stdout)")
        let changed = s.file("changed.txt", "original wordz")
        let bad = cli.run(["verify", changed])
        #expect(bad.status == 1 && bad.stdout.contains("✗ in catalog"))
    }

    @Test("verify ITEM and fsck catch one changed byte in a store object")
    func tamperedObject() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        #expect(cli.run(["ingest", CLI.samples]).status == 0)
        #expect(cli.run(["fsck"]).status == 0)
        let before = try #require(cli.run(["verify", "--json", "1"]).json as? [String: Any])
        #expect(before["verdict"] as? String == "not-proven", "intact, unproven: \(before)")
        let show = try #require(cli.run(["show", "--json", "1"]).json as? [String: Any])
        let object = try #require(show["objectPath"] as? String)
        chmod(object, 0o644)
        let fd = open(object, O_WRONLY)
        var byte: UInt8 = 0x58
        pwrite(fd, &byte, 1, 100)
        close(fd)
        chmod(object, 0o444)
        let v = cli.run(["verify", "--json", "1"])
        #expect(v.status == 1)
        #expect((v.json as? [String: Any])?["ok"] as? Bool == false)
        #expect((v.json as? [String: Any])?["verdict"] as? String == "failed", "\(v.stdout)")
        let f = cli.run(["fsck", "--json"])
        #expect(f.status == 1)
        let problems = (f.json as? [String: Any])?["problems"] as? [String] ?? []
        #expect(problems.contains { $0.contains(object) && $0.contains("hashes to") })
    }

    @Test("log verify fails when the head anchor no longer matches the log")
    func headAnchor() {
        let s = Scratch()
        let cli = CLI(home: s.home)
        #expect(cli.run(["ingest", CLI.samples + "/interview.wav"]).status == 0)
        #expect(cli.run(["log", "verify"]).status == 0)
        try? "7 \(String(repeating: "0", count: 64))\n".write(toFile: s.home + "/custody.head", atomically: true, encoding: .utf8)
        let r = cli.run(["log", "verify"])
        #expect(r.status == 1 && r.stdout.contains("tail removed"))
    }
}
