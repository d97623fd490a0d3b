import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// A wrong password is not a network blip: `evidence run` against the sandbox's ownCloud with
/// a refused password pauses the account (one request, then none), shows one alert, and
/// resumes when the password file changes, on SIGHUP, or by `evidence accounts resume`.
@Suite("Refused credentials pause the account", .ownThread)
struct PausedCredentialsCLITests {
    let providers = ProviderCLITests()

    /// Requests to the ownCloud emulation the sandbox answered 401.
    func refused(_ sandbox: SandboxProcess) -> Int {
        let log = (try? String(contentsOfFile: sandbox.stateDirectory + "/requests.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").count { $0.contains("\"path\":\"/owncloud") && $0.contains("\"status\":401") }
    }

    func paused(_ h: RunHarness) -> [[String: Any]] {
        (h.cli.run(["status", "--json"]).json as? [String: Any])?["paused"] as? [[String: Any]] ?? []
    }

    func state(_ h: RunHarness, _ item: String) -> String? {
        ((h.cli.run(["show", item, "--json"]).json as? [String: Any])?["item"] as? [String: Any])?["state"] as? String
    }

    func jobs(_ h: RunHarness, _ item: String) -> [[String: Any]] {
        (h.cli.run(["show", item, "--json"]).json as? [String: Any])?["jobs"] as? [[String: Any]] ?? []
    }

    func setPassword(_ h: RunHarness, _ value: String) throws {
        let file = h.scratch.path + "/secrets/oc-password"
        let temp = file + ".new"
        _ = FileManager.default.createFile(atPath: temp, contents: Data(value.utf8), attributes: [.posixPermissions: 0o600])
        #expect(rename(temp, file) == 0)
    }

    @Test("a wrong password: one refused request, the account paused with one alert, no request while paused; a fixed password file, SIGHUP or accounts resume ends it, and the archive finishes without a restart")
    func wrongPassword() async throws {
        try await providers.withSandbox { sandbox in
            let h = try providers.harness(.owncloud, sandbox)
            try setPassword(h, "not-the-password")
            try h.start()
            h.write("one.bin", randomBytes(20_000))
            #expect(waitUntil(timeout: 60) { !paused(h).isEmpty }, "\(h.log.suffix(3000))")
            let alert = paused(h).first
            #expect(alert?["kind"] as? String == "account" && alert?["name"] as? String == "vault", "\(alert ?? [:])")
            #expect((alert?["fix"] as? String)?.contains("evidence accounts login vault") == true)
            #expect((alert?["reason"] as? String)?.contains("HTTP 401") == true, "\(alert ?? [:])")
            let reason = alert?["reason"] as? String ?? ""
            #expect(!reason.contains("<?xml"), "the server's XML is summarised, not dumped: \(reason)")
            let first = refused(sandbox)
            #expect(first >= 1)

            // A second file reaches its archive stage and waits there: no request is sent.
            h.write("two.bin", randomBytes(20_000))
            #expect(waitUntil(timeout: 60) {
                jobs(h, "2").contains { $0["kind"] as? String == "archive" && ($0["lastError"] as? String)?.contains("is paused") == true }
            }, "\(jobs(h, "2"))")
            #expect(refused(sandbox) == first, "a request went to the paused account")
            #expect(state(h, "1") == "certified" && state(h, "2") == "certified")
            #expect(jobs(h, "1").allSatisfy { ($0["attempts"] as? Int ?? 0) <= 1 }, "waiting counts no attempt: \(jobs(h, "1"))")
            let status = h.cli.run(["status"])
            #expect(status.status == 1 && status.stdout.contains("✗ PAUSED: account vault paused since"), "\(status.stdout)")
            let doctor = h.cli.run(["--config", h.configPath!, "doctor", "--offline", "--rules", h.rules], timeout: 60)
            #expect(doctor.stdout.contains("✗ credentials") && doctor.stdout.contains("account vault paused"), "\(doctor.stdout)")

            // 1. The password file fixed: seen within seconds, the account rebuilt, both archived.
            try setPassword(h, "sandbox-app-password")
            #expect(waitUntil(timeout: 60) { state(h, "1") == "done" && state(h, "2") == "done" }, "\(h.log.suffix(3000))")
            #expect(paused(h).isEmpty)
            #expect(h.log.contains("resumed: its credentials changed"))

            // 2. Broken again, and only SIGHUP makes the service read it: the next file pauses the account.
            try setPassword(h, "wrong-again")
            h.process?.signal(SIGHUP)
            #expect(waitUntil(timeout: 20) { h.log.contains("accounts and notaries reloaded") }, "\(h.log.suffix(2000))")
            h.write("three.bin", randomBytes(20_000))
            #expect(waitUntil(timeout: 60) { !paused(h).isEmpty }, "\(h.log.suffix(3000))")
            let second = refused(sandbox)
            #expect(second > first)
            // `accounts resume` without a fix: exactly one more refused request, and paused again.
            let resume = h.cli.run(["accounts", "resume", "vault"])
            #expect(resume.status == 0 && resume.stdout.contains("✓ account vault resumed"), "\(resume.stdout) \(resume.stderr)")
            #expect(waitUntil(timeout: 60) { refused(sandbox) > second && !paused(h).isEmpty }, "\(h.log.suffix(3000))")
            #expect(refused(sandbox) == second + 1, "one request per resume, not a retry loop")
            // 3. Fixed, and SIGHUP: done without a restart.
            try setPassword(h, "sandbox-app-password")
            h.process?.signal(SIGHUP)
            #expect(waitUntil(timeout: 60) { state(h, "3") == "done" }, "\(h.log.suffix(3000))")
            #expect(paused(h).isEmpty)
            #expect(h.cli.run(["accounts", "resume", "vault"]).status == 1, "nothing paused any more")
            #expect(!h.log.contains("not-the-password") && !h.log.contains("wrong-again"), "a secret in the log")
            #expect(h.stop() == 0)
        }
    }
}
