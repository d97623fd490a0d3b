import Foundation
import Glibc
import EvidenceTesting
import Testing

@Suite("CLI: ingest, status, show, hash", .ownThread)
struct IngestCLITests {
    @Test("ingesting samples/ stores every file and status counts them")
    func ingestSamples() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        let r = cli.run(["ingest", "--json", CLI.samples])
        #expect(r.status == 0, "\(r.stderr)")
        let entries = try #require(r.json as? [[String: Any]])
        #expect(entries.count == 5)
        #expect(entries.allSatisfy { $0["status"] as? String == "stored" })
        let status = cli.run(["status", "--json"])
        #expect(status.status == 0)
        let st = try #require(status.json as? [String: Any])
        #expect(st["items"] as? Int == 5)
        #expect((st["states"] as? [String: Int])?["ingested"] == 5)
    }

    @Test("evidence loads libavformat, libcurl, libpq and cairo on use, not at start: the media probe still reads media")
    func heavyLibrariesLoadedOnUse() throws {
        let libraries = CLI.exec(["ldd", CLI.binary]).stdout
        #expect(libraries.contains("libcrypto"), "ldd said: \(libraries)")
        for name in ["libavformat", "libavcodec", "libcurl", "libpq", "libcairo"] {
            #expect(!libraries.contains(name), "\(name) is linked: \(libraries)")
        }
        let r = CLI.exec([CLI.binary, "__probe", CLI.samples + "/bodycam-2024-05-01.mp4"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("\"container\""), "\(r.stdout)")
    }

    @Test("a burst given to evidence ingest is stored and recorded file by file, each once, custody chain intact")
    func burstIngest() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        let folder = s.home + "-burst"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for i in 0..<400 { _ = FileManager.default.createFile(atPath: folder + "/f\(i).bin", contents: Data("file \(i) \(UUID())".utf8)) }
        _ = FileManager.default.createFile(atPath: folder + "/same.bin", contents: Data("file 0 dup".utf8))
        _ = FileManager.default.createFile(atPath: folder + "/same2.bin", contents: Data("file 0 dup".utf8))
        let r = cli.run(["ingest", "--json", "--jobs", "4", folder], timeout: 180)
        #expect(r.status == 0, "\(r.stderr)")
        let entries = try #require(r.json as? [[String: Any]])
        #expect(entries.count == 402)
        #expect(entries.filter { $0["status"] as? String == "stored" }.count == 401)
        #expect(entries.filter { $0["status"] as? String == "duplicate" }.count == 1)
        #expect((cli.run(["status", "--json"]).json as? [String: Any])?["items"] as? Int == 401)
        #expect(cli.run(["log", "verify"]).status == 0)
        #expect(cli.run(["fsck"]).status == 0)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: s.home + "/tmp")) ?? []).isEmpty)
    }

    @Test("show by path prints media, sources and custody events as JSON")
    func show() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        cli.run(["ingest", CLI.samples + "/bodycam-2024-05-01.mp4"])
        let r = cli.run(["show", "--json", CLI.samples + "/bodycam-2024-05-01.mp4"])
        #expect(r.status == 0, "\(r.stderr)")
        let j = try #require(r.json as? [String: Any])
        let item = try #require(j["item"] as? [String: Any])
        let media = try #require(item["media"] as? [String: Any])
        let streams = try #require(media["streams"] as? [[String: Any]])
        #expect(streams.contains { $0["codec"] as? String == "h264" })
        #expect(item["dateTaken"] as? String == "2024-05-01T09:30:00.000Z")
        #expect((j["custody"] as? [[String: Any]])?.first?["kind"] as? String == "ingested")
        // Also by hash prefix, and in text.
        let sha = try #require(item["sha256"] as? String)
        let text = cli.run(["show", String(sha.prefix(8))])
        #expect(text.status == 0 && text.stdout.contains("MP4 video, 2.0 s, H.264 320×240 25 fps, AAC"))
        #expect(cli.run(["show", "999"]).status == 1)
    }

    @Test("global options work before the subcommand")
    func globalOptionsFirst() {
        let s = Scratch()
        let r = CLI.exec([CLI.binary, "--home", s.home, "--json", "ingest", CLI.samples + "/interview.wav"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("\"status\" : \"stored\""))
    }

    @Test("the same content under a second name is one item with two sources")
    func duplicates() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        let a = s.file("a/clip.txt", "same bytes")
        let b = s.file("b/copy.txt", "same bytes")
        let r = cli.run(["ingest", "--json", a, b])
        let e = try #require(r.json as? [[String: Any]])
        // Files are ingested in parallel: either one may be the first.
        #expect(e.compactMap { $0["status"] as? String }.sorted() == ["duplicate", "stored"])
        #expect((cli.run(["status", "--json"]).json as? [String: Any])?["items"] as? Int == 1)
        let again = cli.run(["ingest", "--json", a])
        #expect((again.json as? [[String: Any]])?.first?["status"] as? String == "already-ingested")
    }

    @Test("hash output is accepted by sha256sum -c, including an awkward name")
    func hashCompatible() throws {
        let s = Scratch()
        s.file("plain.txt", "hello")
        s.file("back\\slash.txt", "world")
        let r = CLI.exec([CLI.binary, "hash", "plain.txt", "back\\slash.txt"], cwd: s.path)
        #expect(r.status == 0)
        try r.stdout.write(toFile: s.path + "/SUMS", atomically: true, encoding: .utf8)
        let check = CLI.exec(["sha256sum", "-c", "SUMS"], cwd: s.path)
        #expect(check.status == 0, "\(check.stdout)")
        let j = CLI.exec([CLI.binary, "hash", "--json", s.path + "/plain.txt"])
        #expect(j.stdout.contains("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"))
        let missing = CLI.exec([CLI.binary, "hash", s.path + "/nope"])
        #expect(missing.status == 1 && missing.stderr.contains("nope: no such file"))
    }

    @Test("usage and config errors exit 2 with a message")
    func usageErrors() {
        let s = Scratch()
        let noPaths = CLI.exec([CLI.binary, "--home", s.home, "ingest"])
        #expect(noPaths.status == 2 && noPaths.stderr.contains("<path>"))
        #expect(CLI.exec([CLI.binary, "frobnicate"]).status == 2)
        let badConfig = CLI.exec([CLI.binary, "--config", s.path + "/missing.toml", "status"])
        #expect(badConfig.status == 2 && badConfig.stderr.contains("missing.toml"))
        let noHome = CLI.exec([CLI.binary, "--home", s.path + "/nothing-here", "show", "1"])
        #expect(noHome.status == 2 && noHome.stderr.contains("no evidence home"))
    }
}
