import Foundation
import EvidenceTesting
import Testing

@Suite("evidence init", .ownThread)
struct InitCLITests {
    @Test("init writes a config and rule that load, creates the home, prints the next three commands, and refuses to overwrite")
    func initFolder() throws {
        let s = Scratch()
        let dir = ((s.path + "/site one") as NSString).standardizingPath
        let first = CLI.exec([CLI.binary, "init", dir])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("1. evidence --config \"\(dir)/evidence.toml\" rules check"))
        #expect(first.stdout.contains("2. evidence --config \"\(dir)/evidence.toml\" run"))
        #expect(first.stdout.contains("3. evidence --config \"\(dir)/evidence.toml\" status"))
        for f in ["evidence.toml", "watch-rules/drop.toml", "home/catalog.sqlite", "drop", "archive"] {
            #expect(FileManager.default.fileExists(atPath: dir + "/" + f), "\(f)")
        }
        let config = dir + "/evidence.toml"
        let check = CLI.exec([CLI.binary, "--config", config, "rules", "check"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let accounts = CLI.exec([CLI.binary, "--config", config, "accounts", "check"])
        #expect(accounts.status == 0 && accounts.stdout.contains("✓ vault (local)"), "\(accounts.stdout)\(accounts.stderr)")
        let status = CLI.exec([CLI.binary, "--config", config, "status", "--json"])
        #expect(status.status == 0)

        let before = try String(contentsOfFile: config, encoding: .utf8)
        try "# edited by the operator\n".write(toFile: config, atomically: true, encoding: .utf8)
        let again = CLI.exec([CLI.binary, "init", dir])
        #expect(again.status == 1 && again.stderr.contains("refusing to overwrite"))
        #expect(try String(contentsOfFile: config, encoding: .utf8) == "# edited by the operator\n")
        #expect(before.contains("[archives.vault]"))

        let other = s.path + "/two"
        let json = CLI.exec([CLI.binary, "init", other, "--json"])
        let j = json.json as? [String: Any]
        #expect(json.status == 0 && (j?["next"] as? [String])?.count == 3)
    }
}

@Suite("systemd unit", .ownThread)
struct SystemdUnitTests {
    static let analyze = "/usr/bin/systemd-analyze"

    @Test("scripts/systemd/evidence.service passes systemd-analyze verify (with ExecStart pointing at the built binary)",
          .enabled(if: FileManager.default.isExecutableFile(atPath: analyze), "systemd-analyze (Debian's systemd) is not installed"))
    func verify() throws {
        let s = Scratch()
        let unit = try String(contentsOfFile: CLI.packageRoot + "/scripts/systemd/evidence.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/evidence --config /etc/evidence/evidence.toml run"))
        #expect(unit.contains("Restart=on-failure") && unit.contains("ProtectSystem=strict") && unit.contains("ReadWritePaths="))
        let path = s.path + "/evidence.service"
        try unit.replacingOccurrences(of: "/usr/local/bin/evidence", with: CLI.binary).write(toFile: path, atomically: true, encoding: .utf8)
        let r = CLI.exec([Self.analyze, "verify", path])
        #expect(r.status == 0 && r.stderr.isEmpty && r.stdout.isEmpty, "\(r.stdout)\(r.stderr)")
    }
}
