import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// An `opentimestamps` notary end to end against the sandbox's calendars and header source,
/// with the reference implementation (PyPI `opentimestamps-client` 0.7.2: `ots info`, and
/// python-opentimestamps with python-bitcoinlib in `scripts/oracles/ots_check.py`) reading
/// every proof we make and driving the calendars as their own client.
@Suite("OpenTimestamps: calendars, Bitcoin headers, the reference client", .ownThread)
struct OpenTimestampsCLITests {
    static let venv = (ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache") + "/evidence/ots"
    static let oracle = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/oracles/ots_check.py").path

    func withSandbox<T>(confirm: Double = 0, _ body: (SandboxProcess) async throws -> T) async throws -> T {
        try await NotarizationCLITests().withSandbox(extra: ["--ots-confirm", String(confirm)], body)
    }

    func harness(_ sandbox: SandboxProcess, confirmations: Int = 2, extra: String = "") throws -> RunHarness {
        let base = sandbox.baseURL.absoluteString
        let h = RunHarness(extra: "notary = [\"ots\"]\n")
        let config = """
            [notaries.ots]
            kind = "opentimestamps"
            calendars = ["\(base)/ots/a", "\(base)/ots/b", "\(base)/ots/c"]
            headers_url = "\(base)/esplora"
            network = "regtest"
            confirmations = \(confirmations)
            batch = "2s"
            poll_first = "300ms"
            poll_max = "1s"
            \(extra)
            """
        h.configPath = h.scratch.path + "/evidence.toml"
        try config.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
        return h
    }

    func post(_ sandbox: SandboxProcess, _ path: String) {
        _ = CLI.exec(["curl", "-sf", "-X", "POST", sandbox.baseURL.absoluteString + path])
    }

    func stats(_ sandbox: SandboxProcess) -> [String: Any] {
        let r = CLI.exec(["curl", "-sf", sandbox.baseURL.absoluteString + "/_sandbox/ots/stats"])
        return ((try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any]) ?? [:]
    }

    func submissions(_ sandbox: SandboxProcess) -> [String: Int] { stats(sandbox)["submissions"] as? [String: Int] ?? [:] }

    func proof(_ h: RunHarness, _ item: Int) -> [String: Any]? {
        let shown = h.cli.run(["--config", h.configPath!, "show", String(item), "--json"]).json as? [String: Any]
        return (shown?["proofs"] as? [[String: Any]])?.first { $0["notary"] as? String == "ots" }
    }

    func state(_ h: RunHarness, _ item: Int) -> String? {
        ((h.cli.run(["show", String(item), "--json"]).json as? [String: Any])?["item"] as? [String: Any])?["state"] as? String
    }

    @Test("the sandbox's calendars and header source serve the reference client: submit, upgrade, header check")
    func emulationServesReferenceClient() async throws {
        try await withSandbox { sandbox in
            let base = sandbox.baseURL.absoluteString
            // The reference client joins `digest` to the URL as a URL: the calendar's own URI ends in a slash.
            let r = CLI.exec([Self.venv + "/bin/python", Self.oracle, "client", base + "/ots/a/", base + "/esplora", base + "/_sandbox/ots/mine"])
            #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
            #expect(r.stdout.contains("\"height\": 800000"), "\(r.stdout)")
        }
    }

    @Test("five files, two of three calendars up: one submission per calendar, each item's .ots attested by a Bitcoin header, read by the reference client, bundles verify")
    func batchConfirmsThroughBitcoinHeader() async throws {
        try await withSandbox { sandbox in
            post(sandbox, "/_sandbox/ots/calendar?name=b&mode=down")
            let h = try harness(sandbox)
            try h.start()
            let staging = h.scratch.path + "/staging"
            try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
            for i in 0..<5 { try randomBytes(2_000 + i).write(to: URL(fileURLWithPath: staging + "/v\(i).bin")) }
            for i in 0..<5 { rename(staging + "/v\(i).bin", h.drop + "/v\(i).bin") }
            #expect(waitUntil(timeout: 90) { (1...5).allSatisfy { state(h, $0) == "done" } }, "log: \(h.log)")
            let sent = submissions(sandbox)
            // One window, or two if the drop straddled a window's end: never one per item. b was down.
            #expect((1...2).contains(sent["a"] ?? 0) && sent["a"] == sent["c"] && sent["b"] == nil, "\(sent)")
            let base = sandbox.baseURL.absoluteString
            for id in 1...5 {
                let p = try #require(proof(h, id))
                #expect(p["kind"] as? String == "opentimestamps" && p["state"] as? String == "confirmed", "\(p)")
                #expect((p["block_height"] as? Int ?? p["blockHeight"] as? Int).map { $0 >= 800_000 } == true, "\(p)")
                let v = h.cli.run(["--config", h.configPath!, "verify", String(id)])
                #expect(v.status == 0 && v.stdout.contains("OpenTimestamps proof ots"), "\(v.stdout)")
                let bundle = h.scratch.path + "/bundle\(id)"
                #expect(h.cli.run(["--config", h.configPath!, "bundle", String(id), "-o", bundle]).status == 0)
                let original = try #require(try FileManager.default.contentsOfDirectory(atPath: bundle + "/original").first)
                let info = CLI.exec([Self.venv + "/bin/ots", "info", bundle + "/proofs/ots.ots"])
                // Both answering calendars upgraded: two ways to the block, no promise left.
                #expect(info.status == 0 && info.stdout.components(separatedBy: "verify BitcoinBlockHeaderAttestation(").count == 3
                        && !info.stdout.contains("PendingAttestation"), "\(info.stdout) \(info.stderr)")
                let check = CLI.exec([Self.venv + "/bin/python", Self.oracle, "proof", bundle + "/proofs/ots.ots",
                                      bundle + "/original/" + original, base + "/esplora"])
                #expect(check.status == 0 && check.stdout.contains("\"height\": 8"), "\(check.stdout) \(check.stderr)")
                let verified = h.cli.run(["--config", h.configPath!, "verify", bundle])
                #expect(verified.status == 0 && verified.stdout.contains("PROVEN"), "\(verified.stdout)")
                // Without a header source from the config the Bitcoin claim proves nothing.
                let alone = h.cli.run(["verify", bundle])
                #expect(alone.status != 0 && alone.stdout.contains("no source of Bitcoin block headers"), "\(alone.stdout)")
                // Another item's proof in this bundle's place (its SHA256SUMS and manifest redone) is refused by the
                // proof's own check too: it is of the other file.
                if id == 2 {
                    let other = h.scratch.path + "/bundle1/proofs/ots.ots"
                    let target = bundle + "/proofs/ots.ots"
                    _ = CLI.exec(["cp", other, target])
                    let moved = CLI.exec([Self.venv + "/bin/python", Self.oracle, "proof", target, bundle + "/original/" + original, base + "/esplora"])
                    #expect(moved.status != 0, "the reference code accepts a moved proof: \(moved.stdout)")
                    let refused = h.cli.run(["--config", h.configPath!, "verify", bundle])
                    #expect(refused.status != 0, "\(refused.stdout)")
                }
            }
            // The pending proofs the upgrades replaced are history the events record, not orphans.
            let fsck = h.cli.run(["fsck"])
            #expect(fsck.status == 0 && !fsck.stdout.contains("orphan") && fsck.stdout.contains("5 superseded receipt(s) kept"), "\(fsck.stdout)")
            #expect(h.stop() == 0)
        }
    }

    @Test("a calendar whose upgrade claims a block it does not lead to is ignored; the items wait and confirm from an honest calendar")
    func forgedUpgradeIgnored() async throws {
        try await withSandbox(confirm: 0) { sandbox in
            for c in ["a", "b", "c"] { post(sandbox, "/_sandbox/ots/calendar?name=\(c)&mode=forge") }
            let h = try harness(sandbox)
            try h.start()
            _ = h.write("f.bin", randomBytes(4_000))
            // Every calendar asked for its upgrade at least twice, every answer a forgery: still pending.
            #expect(waitUntil(timeout: 60) {
                let up = stats(sandbox)["upgrades"] as? [String: Int] ?? [:]
                return ["a", "b", "c"].allSatisfy { (up[$0] ?? 0) >= 2 }
            }, "\(stats(sandbox)) \(h.log)")
            let pending = try #require(proof(h, 1))
            #expect(pending["state"] as? String == "pending", "\(pending)")
            #expect(state(h, 1) != "done")
            #expect(h.log.contains("do not lead to that block"), "\(h.log)")
            post(sandbox, "/_sandbox/ots/calendar?name=c&mode=ok")
            #expect(waitUntil(timeout: 60) { state(h, 1) == "done" }, "log: \(h.log)")
            #expect(h.cli.run(["--config", h.configPath!, "verify", "1"]).status == 0)
            #expect(h.stop() == 0)
        }
    }

    @Test("SIGKILL while a batch waits for its Bitcoin block, restart: the upgrade resumes from the stored proofs, nothing is submitted twice")
    func killWhileWaitingForBlock() async throws {
        try await withSandbox(confirm: 3600) { sandbox in
            let h = try harness(sandbox, confirmations: 3)
            try h.start()
            for i in 0..<3 { _ = h.write("k\(i).bin", randomBytes(1_500 + i)) }
            // Submitted: each proof pending with its stored .ots.
            #expect(waitUntil(timeout: 60) { (1...3).allSatisfy { proof(h, $0)?["receipt"] is String } }, "log: \(h.log)")
            let before = submissions(sandbox)
            _ = h.stop(SIGKILL)
            try h.start(scanned: false)
            post(sandbox, "/_sandbox/ots/mine")
            // In a block with one more after it: 2 confirmations of the 3 asked for, so not yet.
            #expect(waitUntil(timeout: 60) { h.log.contains("2 of 3 confirmations") }, "log: \(h.log)")
            #expect((1...3).allSatisfy { proof(h, $0)?["state"] as? String == "pending" })
            post(sandbox, "/_sandbox/ots/mine")
            #expect(waitUntil(timeout: 60) { (1...3).allSatisfy { state(h, $0) == "done" } }, "log: \(h.log)")
            #expect(submissions(sandbox) == before, "\(submissions(sandbox)) vs \(before)")
            #expect(stats(sandbox)["blocks"] as? Int == 3, "\(stats(sandbox))")
            #expect(h.stop() == 0)
        }
    }

    @Test("fewer calendars than min_calendars answer: nothing is stamped, the batch is retried, and confirms once they are back")
    func quorum() async throws {
        try await withSandbox { sandbox in
            post(sandbox, "/_sandbox/ots/calendar?name=a&mode=down")
            post(sandbox, "/_sandbox/ots/calendar?name=b&mode=down")
            let h = try harness(sandbox)
            try h.start()
            _ = h.write("q.bin", randomBytes(3_000))
            #expect(waitUntil(timeout: 60) { h.cli.run(["status", "--json"]).stdout.contains("2 needed (min_calendars)") }, "\(h.log)")
            #expect(proof(h, 1)?["receipt"] == nil || proof(h, 1)?["receipt"] is NSNull)
            post(sandbox, "/_sandbox/ots/calendar?name=a&mode=ok")
            #expect(waitUntil(timeout: 90) { state(h, 1) == "done" }, "log: \(h.log)")
            #expect(h.stop() == 0)
        }
    }
}
