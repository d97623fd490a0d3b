import EvidenceTesting
import Foundation
import Glibc
import Testing

/// SIGHUP re-reads the rules of a running `evidence run` (a real process): a new rule file is
/// watched, a broken one keeps its previous version (and the log names the file), a changed
/// `include` takes effect, all without a restart and without losing what was taken.
@Suite("SIGHUP reloads the rules", .ownThread)
struct RulesReloadCLITests {
    func ruleOf(_ h: RunHarness, _ name: String) -> String? {
        for i in 1...20 {
            guard let s = h.cli.run(["show", String(i), "--json"]).json as? [String: Any] else { break }
            let sources = s["sources"] as? [[String: Any]] ?? []
            if let hit = sources.first(where: { $0["name"] as? String == name }) { return hit["rule"] as? String }
        }
        return nil
    }

    func hup(_ h: RunHarness, until mark: String, count: Int = 1) -> Bool {
        h.process?.signal(SIGHUP)
        return waitUntil(timeout: 30) { h.log.components(separatedBy: mark).count - 1 >= count }
    }

    @Test("a rule added, a rule file broken (the old version stays and is logged), a rule's include changed: each by SIGHUP, no restart")
    func reload() throws {
        let h = RunHarness()
        try h.start()
        h.write("first.bin", randomBytes(2_000))
        #expect(waitUntil(timeout: 30) { ruleOf(h, "first.bin") == "cam" }, "\(h.log.suffix(2000))")

        // 1. A new rule file: its folder is watched after SIGHUP.
        let second = h.scratch.path + "/drop2"
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        try "path = \"\(second)\"\nsettle = \"0s\"\n".write(toFile: h.rules + "/second.toml", atomically: true, encoding: .utf8)
        #expect(hup(h, until: "rule second added"), "\(h.log.suffix(2000))")
        #expect(waitUntil(timeout: 30) { h.log.contains("watching the reloaded rules") })
        _ = FileManager.default.createFile(atPath: second + "/two.bin", contents: randomBytes(2_000))
        #expect(waitUntil(timeout: 30) { ruleOf(h, "two.bin") == "second" }, "\(h.log.suffix(2000))")

        // 2. cam.toml broken: cam keeps its previous version, the log names the file and line, cam's folder still works.
        let cam = h.rules + "/cam.toml"
        let good = try String(contentsOfFile: cam, encoding: .utf8)
        try (good + "\nsettle = [unclosed\n").write(toFile: cam, atomically: true, encoding: .utf8)
        #expect(hup(h, until: "rule cam keeps its previous version"), "\(h.log.suffix(2000))")
        #expect(h.log.contains("cam.toml"))
        h.write("still.bin", randomBytes(2_000))
        #expect(waitUntil(timeout: 30) { ruleOf(h, "still.bin") == "cam" }, "\(h.log.suffix(2000))")

        // 3. cam fixed, now taking only *.mp4: a .txt dropped afterwards stays, a .mp4 is taken.
        try (good + "include = [\"*.mp4\"]\n").write(toFile: cam, atomically: true, encoding: .utf8)
        #expect(hup(h, until: "rule cam changed"), "\(h.log.suffix(2000))")
        #expect(waitUntil(timeout: 30) { h.log.components(separatedBy: "watching the reloaded rules").count - 1 >= 2 })
        h.write("note.txt", Data("not taken\n".utf8))
        h.write("clip.mp4", randomBytes(3_000))
        #expect(waitUntil(timeout: 30) { ruleOf(h, "clip.mp4") == "cam" }, "\(h.log.suffix(2000))")
        #expect(ruleOf(h, "note.txt") == nil, "a file the reloaded rule excludes is not taken")
        // Nothing taken twice: the new watchers' initial scans found the earlier files already taken.
        let status = h.cli.run(["status", "--json"]).json as? [String: Any]
        #expect((status?["items"] as? Int) == 4, "\(String(describing: status))")
        #expect(h.stop() == 0)
    }
}
