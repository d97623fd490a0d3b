import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// `evidence doctor` over a real set-up (sandbox notaries and a Dropbox account): all ✓ when
/// healthy; each broken part ✗ with its fix and exit 1; --offline skips the network.
@Suite("evidence doctor", .ownThread)
struct DoctorCLITests {
    let notarization = NotarizationCLITests()

    /// A harness with QED + TSA and a Dropbox account, its home created by one ingest, and
    /// two nested folders below the watched one.
    func setUp(_ sandbox: SandboxProcess) throws -> RunHarness {
        let h = try notarization.harness(sandbox)
        try ProviderCLITests.Provider.dropbox.add(to: h, as: "vault", url: sandbox.baseURL.absoluteString)
        try FileManager.default.createDirectory(atPath: h.drop + "/day1/cam2", withIntermediateDirectories: true)
        let sample = h.scratch.file("sample.txt", "evidence doctor test\n")
        #expect(h.cli.run(["ingest", sample]).status == 0)
        return h
    }

    func doctor(_ h: RunHarness, _ extra: [String] = [], environment: [String: String]? = nil) -> CLI.Result {
        CLI.exec([CLI.binary, "--config", h.configPath!, "--home", h.home, "doctor", "--rules", h.rules] + extra,
                 environment: environment ?? h.environment)
    }

    func statuses(_ r: CLI.Result) -> [String: [String: Any]] {
        let list = (r.json as? [[String: Any]]) ?? []
        return Dictionary(list.map { ($0["check"] as? String ?? "?", $0) }, uniquingKeysWith: { a, _ in a })
    }

    @Test("a healthy set-up: every check ✓, exit 0; inotify counts the watched folders")
    func healthy() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try setUp(sandbox)
            let r = doctor(h, ["--json"])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let s = statuses(r)
            for name in ["config", "rules", "home", "catalog", "custody", "store", "queue", "disk", "inotify",
                         "notary qed", "notary tsa", "clock", "account vault"] {
                #expect(s[name]?["status"] as? String == "ok", "\(name): \(s[name] ?? [:])")
            }
            let limit = try String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(s["inotify"]?["detail"] as? String == "3 folder(s) watched, fs.inotify.max_user_watches = \(limit)")
            #expect((s["catalog"]?["detail"] as? String)?.hasPrefix("1 items") == true, "\(s["catalog"] ?? [:])")

            // Tests run as root: the one warning is that (root can rewrite every trust anchor).
            #expect(s["anchors"]?["status"] as? String == (geteuid() == 0 ? "warn" : "ok"), "\(s["anchors"] ?? [:])")
            let text = doctor(h)
            #expect(text.status == 0)
            let lines = text.stdout.split(separator: "\n")
            let rootWarning = geteuid() == 0 ? lines.firstIndex { $0.hasPrefix("! anchors: evidence runs as root") } : nil
            #expect(lines.enumerated().allSatisfy { i, line in
                line.hasPrefix("✓ ") || (rootWarning.map { i == $0 || i == $0 + 1 } ?? false)
            }, "\(text.stdout)")
        }
    }

    @Test("broken parts: each ✗ with its fix, exit 1; secrets never printed")
    func broken() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try setUp(sandbox)
            // Wrong QED key, wrong Dropbox app secret, a rule whose folder is gone, a disk "too small".
            try "wrong-dropbox-secret".write(toFile: h.scratch.path + "/secrets/dbx-secret", atomically: true, encoding: .utf8)
            chmod(h.scratch.path + "/secrets/dbx-secret", 0o600)
            try "path = \"\(h.scratch.path)/gone\"\n".write(toFile: h.rules + "/gone.toml", atomically: true, encoding: .utf8)
            let env = ["EVIDENCE_TEST_QED_KEY": "not-the-sandbox-key"]
            let r = doctor(h, ["--json", "--min-free", "1000T"], environment: env)
            #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
            let s = statuses(r)
            for name in ["notary qed", "account vault", "disk"] {
                #expect(s[name]?["status"] as? String == "fail", "\(name): \(s[name] ?? [:])")
                #expect((s[name]?["fix"] as? String)?.isEmpty == false, "\(name) has no fix")
            }
            // A rule whose folder is missing is a warning (an unmounted dock), as in `rules check` and `run`.
            #expect(s["rules"]?["status"] as? String == "ok", "\(s["rules"] ?? [:])")
            #expect(s["folders"]?["status"] as? String == "warn" && (s["folders"]?["detail"] as? String)?.contains("gone") == true,
                    "\(s["folders"] ?? [:])")
            #expect((s["folders"]?["fix"] as? String)?.isEmpty == false)
            #expect(s["notary tsa"]?["status"] as? String == "ok")
            #expect(!r.stdout.contains("not-the-sandbox-key") && !r.stdout.contains("wrong-dropbox-secret"))

            let text = doctor(h, ["--min-free", "1000T"], environment: env)
            #expect(text.status == 1)
            #expect(text.stdout.contains("✗ notary qed:") && text.stdout.contains("✗ account vault:") && text.stdout.contains("    fix: "),
                    "\(text.stdout)")
        }
    }

    @Test("--offline: no request leaves the machine; an unbuilt home is a warning, not a failure")
    func offline() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox)
            let before = notarization.counters(sandbox)["requests"] as? Int ?? -1
            let r = doctor(h, ["--json", "--offline"])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let s = statuses(r)
            #expect(s["home"]?["status"] as? String == "warn")
            #expect(s["network"]?["status"] as? String == "warn")
            #expect(s["notary qed"] == nil && s["clock"] == nil)
            #expect(notarization.counters(sandbox)["requests"] as? Int == before)
        }
    }
}
