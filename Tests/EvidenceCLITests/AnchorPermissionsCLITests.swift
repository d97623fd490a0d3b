import EvidenceProcess
import Foundation
import Glibc
import EvidenceTesting
import Testing

/// Issue 28 point 4, from outside: the service user could rewrite its own config, CA file and
/// rules. `doctor` and `run`, run as an unprivileged user (setpriv, as systemd's User= would),
/// now refuse a set-up that user can write, and accept one that is root's and read-only to it.
@Suite("Trust anchors writable by the service user", .enabled(if: geteuid() == 0, "needs root to switch to uid 65534"), .ownThread)
struct AnchorPermissionsCLITests {
    static let nobody: UInt32 = 65534

    /// A folder in /tmp with evidence.toml, watch-rules/drop.toml and drop/; `owner` owns the
    /// folder, the config and the rules; the drop folder and home belong to nobody.
    final class SetUp {
        let dir: String
        init(owner: UInt32, extra: String = "") throws {
            var template = Array("/tmp/evidence-anchors-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
            dir = String(cString: made)
            chmod(dir, 0o755)
            try FileManager.default.createDirectory(atPath: dir + "/watch-rules", withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: dir + "/drop", withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: false)
            try "home = \"home\"\nrules = \"watch-rules\"\n\(extra)\n".write(toFile: config, atomically: false, encoding: .utf8)
            try "path = \"\(dir)/drop\"\ninclude = [\"*\"]\n".write(toFile: dir + "/watch-rules/drop.toml", atomically: false, encoding: .utf8)
            for p in [dir, config, dir + "/watch-rules", dir + "/watch-rules/drop.toml"] {
                chown(p, owner, owner)
                chmod(p, p.hasSuffix(".toml") ? 0o644 : 0o755)
            }
            for p in [dir + "/drop", dir + "/home"] { chown(p, AnchorPermissionsCLITests.nobody, AnchorPermissionsCLITests.nobody); chmod(p, 0o700) }
        }
        var config: String { dir + "/evidence.toml" }
        deinit { try? FileManager.default.removeItem(atPath: dir) }
    }

    func asNobody(_ args: [String]) -> CLI.Result {
        CLI.exec(["/usr/bin/setpriv", "--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", CLI.binary] + args, timeout: 60)
    }

    func anchors(_ r: CLI.Result) -> [String: Any]? {
        ((r.json as? [[String: Any]]) ?? []).first { $0["check"] as? String == "anchors" }
    }

    @Test("config and rules owned by the service user: doctor ✗ names them with the fix (exit 1); run refuses to start (exit 2)")
    func ownedByServiceRefused() throws {
        let s = try SetUp(owner: Self.nobody)
        let doctor = asNobody(["--config", s.config, "doctor", "--offline", "--json"])
        #expect(doctor.status == 1, "\(doctor.stdout)\(doctor.stderr)")
        let check = try #require(anchors(doctor), "\(doctor.stdout)")
        #expect(check["status"] as? String == "fail")
        let detail = check["detail"] as? String ?? ""
        #expect(detail.contains("\(s.dir) (folder holding config file; owner nobody:nogroup, mode 0755): owned by uid 65534"), "\(detail)")
        #expect(detail.contains("\(s.config) (config file;") && detail.contains("\(s.dir)/watch-rules/drop.toml (rule file;"), "\(detail)")
        #expect((check["fix"] as? String)?.contains("chown root:root \(s.config) && chmod 0644 \(s.config)") == true)

        let run = asNobody(["--config", s.config, "run"])
        #expect(run.status == 2, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains(s.config) && run.stderr.contains("mode 0644") && run.stderr.contains("chown root:root"), "\(run.stderr)")
        #expect(run.stderr.contains("anchor_permissions"), "\(run.stderr)")
    }

    @Test("with anchor_permissions = \"warn\" the same set-up is a doctor warning, not a failure")
    func warnOnly() throws {
        let s = try SetUp(owner: Self.nobody, extra: "anchor_permissions = \"warn\"")
        let doctor = asNobody(["--config", s.config, "doctor", "--offline", "--json"])
        #expect(doctor.status == 0, "\(doctor.stdout)\(doctor.stderr)")
        #expect(anchors(doctor)?["status"] as? String == "warn", "\(doctor.stdout)")
    }

    @Test("config and rules root's and read-only to the service: doctor ✓ anchors as that user; as root only a warning")
    func rootOwnedAccepted() throws {
        let s = try SetUp(owner: 0)
        let doctor = asNobody(["--config", s.config, "doctor", "--offline", "--json"])
        #expect(anchors(doctor)?["status"] as? String == "ok", "\(doctor.stdout)\(doctor.stderr)")
        let asRoot = CLI.exec([CLI.binary, "--config", s.config, "doctor", "--offline", "--json"])
        #expect(anchors(asRoot)?["status"] as? String == "warn", "\(asRoot.stdout)")
        #expect((anchors(asRoot)?["detail"] as? String)?.contains("runs as root") == true)
    }
}

/// Issue 28's appended root, through the CLI: every command that loads the config refuses it.
@Suite("ca_file with an appended root", .ownThread)
struct AppendedRootCLITests {
    func root(_ dir: String, _ name: String, _ cn: String) throws -> String {
        let r = try ChildProcess.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                          "-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).crt", "-days", "30", "-subj", "/CN=\(cn)"])
        try #require(r.status == 0, "\(r.output)")
        return try String(contentsOfFile: "\(dir)/\(name).crt", encoding: .utf8)
    }

    @Test("doctor shows ✗ config naming the file, count and subjects; log verify and run exit 2; allow_many_roots lets it load")
    func refusedEverywhere() throws {
        let s = Scratch()
        let ca = try root(s.path, "real", "Real TSA Root") + (try root(s.path, "forged", "Forged Root"))
        s.file("tsa-ca.pem", ca)
        try FileManager.default.createDirectory(atPath: s.path + "/drop", withIntermediateDirectories: true)
        s.file("watch-rules/drop.toml", "path = \"\(s.path)/drop\"\n")
        let table = "[notaries.tsa]\nkind = \"rfc3161\"\nurls = [\"http://127.0.0.1:9/tsr\"]\nca_file = \"tsa-ca.pem\"\n"
        let config = s.file("evidence.toml", "home = \"home\"\nrules = \"watch-rules\"\n" + table)
        let doctor = CLI.exec([CLI.binary, "--config", config, "doctor", "--offline"])
        #expect(doctor.status == 1, "\(doctor.stdout)\(doctor.stderr)")
        #expect(doctor.stdout.contains("✗ config: \(config): field `notaries.tsa.ca_file`: \(s.path)/tsa-ca.pem holds 2 root (self-signed) certificates"),
                "\(doctor.stdout)")
        #expect(doctor.stdout.contains("CN=Real TSA Root") && doctor.stdout.contains("CN=Forged Root"))
        for args in [["log", "verify"], ["run"]] {
            let r = CLI.exec([CLI.binary, "--config", config] + args, timeout: 30)
            #expect(r.status == 2 && r.stderr.contains("holds 2 root"), "\(args): \(r.stdout)\(r.stderr)")
        }
        s.file("evidence.toml", "home = \"home\"\nrules = \"watch-rules\"\n" + table + "allow_many_roots = true\n")
        let allowed = CLI.exec([CLI.binary, "--config", config, "doctor", "--offline", "--json"])
        let checks = (allowed.json as? [[String: Any]]) ?? []
        #expect(checks.first { $0["check"] as? String == "config" }?["status"] as? String == "ok", "\(allowed.stdout)\(allowed.stderr)")
    }
}
