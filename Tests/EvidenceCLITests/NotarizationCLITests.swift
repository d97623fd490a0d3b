import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// `evidence run` against a real `evidence-sandbox` process: QED emulation and a TSA backed by
/// the real `openssl ts`. Bundles are checked with `sha256sum -c` and `openssl ts -verify`.
@Suite("Notarization: evidence run + sandbox, real processes", .ownThread)
struct NotarizationCLITests {
    static let sandboxBinary = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().appendingPathComponent("evidence-sandbox")

    /// A harness whose rule requires `notaries`, with an evidence.toml pointing at `sandbox`.
    func harness(_ sandbox: SandboxProcess, notaries: [String] = ["qed", "tsa"], ruleExtra: String = "",
                 keyEnv: String = "EVIDENCE_TEST_QED_KEY", settle: String = "0s", configExtra: String = "") throws -> RunHarness {
        let list = notaries.map { "\"\($0)\"" }.joined(separator: ", ")
        let h = RunHarness(settle: settle, extra: "notary = [\(list)]\n\(ruleExtra)")
        let ca = h.scratch.path + "/tsa-ca.pem"
        // Retried: the fault soak injects faults under /tsa too.
        #expect(CLI.exec(["curl", "-sf", "--retry", "20", "--retry-all-errors", "--retry-delay", "0", "-o", ca,
                          "\(sandbox.baseURL.absoluteString)/tsa/ca.pem"]).status == 0)
        let config = """
            [notaries.qed]
            kind = "qed"
            base_url = "\(sandbox.baseURL.absoluteString)/v1/"
            api_key_env = "\(keyEnv)"
            poll_first = "300ms"
            poll_max = "1s"

            [notaries.tsa]
            kind = "rfc3161"
            urls = ["\(sandbox.baseURL.absoluteString)/tsa"]
            ca_file = "\(ca)"
            \(configExtra)
            """
        h.configPath = h.scratch.path + "/evidence.toml"
        try config.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
        h.environment = ["EVIDENCE_TEST_QED_KEY": "sandbox-key"]
        return h
    }

    func withSandbox<T>(pending: Double = 1, extra: [String] = [], _ body: (SandboxProcess) async throws -> T) async throws -> T {
        let scratch = Scratch()
        defer { withExtendedLifetime(scratch) {} }
        let dir = scratch.path + "/sandbox"
        let sandbox = try await SandboxProcess.start(executable: Self.sandboxBinary, stateDirectory: dir,
                                                     arguments: ["--pending-seconds", String(pending)] + extra)
        do {
            let v = try await body(sandbox)
            _ = await sandbox.stop()
            return v
        } catch {
            _ = await sandbox.stop()
            throw error
        }
    }

    func counters(_ sandbox: SandboxProcess) -> [String: Any] {
        let r = CLI.exec(["curl", "-sf", "\(sandbox.baseURL.absoluteString)/_sandbox/counters"])
        return ((try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any]) ?? [:]
    }

    func submissions(_ sandbox: SandboxProcess, hash: String) -> Int {
        (counters(sandbox)["submissions_by_hash"] as? [String: Any])?[hash] as? Int ?? 0
    }

    func show(_ h: RunHarness, _ item: String) -> [String: Any] {
        (h.cli.run(["show", item, "--json"]).json as? [String: Any]) ?? [:]
    }

    func proof(_ h: RunHarness, _ item: String, _ notary: String) -> [String: Any]? {
        (show(h, item)["proofs"] as? [[String: Any]])?.first { $0["notary"] as? String == notary }
    }

    func state(_ h: RunHarness, _ item: String) -> String? {
        (show(h, item)["item"] as? [String: Any])?["state"] as? String
    }

    /// The standard-tool check of a bundle folder's TSA proof, whichever form it has: `openssl ts
    /// -verify -data` on a per-item token, or the record's root script and `openssl ts -verify
    /// -digest ROOT -token_in` on a batched one.
    func opensslVerify(bundle folder: String, original name: String, ca: String, notary: String = "tsa") -> CLI.Result {
        if FileManager.default.fileExists(atPath: folder + "/proofs/\(notary).ers") {
            let root = CLI.exec(["python3", "proofs/\(notary).root.py", "original/\(name)"], cwd: folder)
            guard root.status == 0 else { return root }
            return CLI.exec(["openssl", "ts", "-verify", "-digest", root.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
                             "-token_in", "-in", "proofs/\(notary).tst", "-CAfile", ca, "-untrusted", "proofs/\(notary)-tsa.crt"], cwd: folder)
        }
        return CLI.exec(["openssl", "ts", "-verify", "-data", "original/\(name)", "-in", "proofs/\(notary).tsr",
                         "-CAfile", ca, "-untrusted", "proofs/\(notary)-tsa.crt"], cwd: folder)
    }

    func sha256(_ data: Data) -> String {
        let s = Scratch()
        let f = s.path + "/data"
        _ = FileManager.default.createFile(atPath: f, contents: data)
        return String(CLI.exec(["sha256sum", f]).stdout.prefix(64))
    }

    @Test("a dropped file is notarized by QED and a TSA, certified, and its bundle verifies with standard tools",
          arguments: ["2s", "0s"])
    func fullPath(batch: String) async throws {
        try await withSandbox { sandbox in
            let h = try harness(sandbox, configExtra: "batch = \"\(batch)\"")
            try h.start()
            let data = randomBytes(50_000)
            let hash = sha256(data)
            h.write("clip.bin", data)
            #expect(waitUntil(timeout: 30) { state(h, "1") == "done" }, "log: \(h.log)")
            let s = show(h, "1")
            let proofs = s["proofs"] as? [[String: Any]] ?? []
            #expect(proofs.map { $0["notary"] as? String } == ["qed", "tsa"])
            #expect(proofs.allSatisfy { $0["state"] as? String == "confirmed" })
            #expect((proofs.first?["txHash"] as? String)?.hasPrefix("0x") == true)
            #expect((s["certificates"] as? [[String: Any]])?.compactMap { $0["origin"] as? String }.sorted() == ["evidence", "qed"])
            #expect(submissions(sandbox, hash: hash) == 1)

            let bundle = h.scratch.path + "/bundle"
            #expect(h.cli.run(["--config", h.configPath!, "bundle", "1", "-o", bundle]).status == 0)
            #expect(CLI.exec(["sha256sum", "-c", "SHA256SUMS"], cwd: bundle).status == 0)
            // The auditor's line from VERIFY.md, with the TSA's CA fetched from the TSA (not the bundle's copy).
            let ca = h.scratch.path + "/tsa-ca.pem"
            if batch == "0s" {
                #expect(proofs.last?["kind"] as? String == "rfc3161")
                let ts = CLI.exec(["openssl", "ts", "-verify", "-data", "original/clip.bin", "-in", "proofs/tsa.tsr",
                                   "-CAfile", ca, "-untrusted", "proofs/tsa-tsa.crt"], cwd: bundle)
                #expect(ts.status == 0 && ts.stdout.contains("Verification: OK"), "\(ts.stdout) \(ts.stderr)")
            } else {
                // A batch of one: the record has no tree, the token is over the file's hash itself.
                #expect(proofs.last?["kind"] as? String == "rfc4998")
                let root = CLI.exec(["python3", "proofs/tsa.root.py", "original/clip.bin"], cwd: bundle)
                #expect(root.status == 0 && root.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == hash, "\(root.stdout) \(root.stderr)")
                let ts = CLI.exec(["openssl", "ts", "-verify", "-digest", hash, "-token_in", "-in", "proofs/tsa.tst",
                                   "-CAfile", ca, "-untrusted", "proofs/tsa-tsa.crt"], cwd: bundle)
                #expect(ts.status == 0 && ts.stdout.contains("Verification: OK"), "\(ts.stdout) \(ts.stderr)")
                let bc = try BouncyCastleERS.check(record: bundle + "/proofs/tsa.ers", data: bundle + "/original/clip.bin", caFile: ca)
                #expect(bc.succeeded, "\(bc.output)")
                #expect(CLI.exec(["grep", "-q", "python3 proofs/tsa.root.py", bundle + "/VERIFY.md"]).status == 0)
            }
            let v = h.cli.run(["verify", bundle, "--trust", ca])
            #expect(v.status == 0, "\(v.stdout)")
            #expect(v.stdout.contains("signature and chain verified"))
            let viaConfig = h.cli.run(["--config", h.configPath!, "verify", bundle])
            #expect(viaConfig.status == 0, "\(viaConfig.stdout)")
            #expect(CLI.exec(["qpdf", "--check", bundle + "/certificates/evidence.pdf"]).status == 0)
            #expect(CLI.exec(["pdftotext", bundle + "/certificates/evidence.pdf", "-"]).stdout.contains(hash))
            for origin in ["evidence", "qed"] {
                let out = h.scratch.path + "/\(origin).pdf"
                #expect(h.cli.run(["--config", h.configPath!, "cert", "1", "--origin", origin, "-o", out]).status == 0)
                #expect(CLI.exec(["qpdf", "--check", out]).status == 0)
            }
            let item = h.cli.run(["--config", h.configPath!, "verify", "1"])
            #expect(item.status == 0, "\(item.stdout)")
            #expect(item.stdout.contains("✓ QED report qed: confirmed"))
            #expect(item.stdout.contains(batch == "0s" ? "✓ RFC 3161 token tsa" : "✓ RFC 4998 evidence record tsa")
                    && item.stdout.contains("signature and chain verified"), "\(item.stdout)")
            #expect(item.stdout.contains("✓ certificate evidence") && item.stdout.contains("✓ certificate qed"))
            let none = h.cli.run(["cert", "1", "--origin", "nope", "-o", h.scratch.path + "/x.pdf"])
            #expect(none.status == 1 && none.stderr.contains("no certificate from \"nope\""))
            // Who took what away: the bundle and the two certificates written, by the local user.
            let accessed = (show(h, "1")["custody"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "accessed" }
            #expect(accessed.count == 3 && accessed.allSatisfy { ($0["actor"] as? String)?.hasPrefix("cli:") == true }, "\(accessed)")
            #expect(accessed.first.flatMap { $0["details"] as? String }?.contains("bundle written to") == true)
            #expect(CLI.exec(["grep", "-c", "\"kind\":\"accessed\"", bundle + "/custody.jsonl"]).stdout.hasPrefix("1"),
                    "the bundle's own custody log shows its making")
            #expect(h.cli.run(["fsck"]).status == 0)
            #expect(h.stop() == 0)
        }
    }

    @Test("one changed byte in any bundle file fails `evidence verify` and names the file",
          arguments: ["original/clip.bin", "proofs/qed.json", "proofs/tsa.ers", "proofs/tsa.tst", "proofs/tsa.root.py",
                      "custody.jsonl", "manifest.json"])
    func tamper(file: String) async throws {
        try await withSandbox { sandbox in
            let h = try harness(sandbox)
            try h.start()
            h.write("clip.bin", randomBytes(4_000))
            #expect(waitUntil(timeout: 30) { state(h, "1") == "done" })
            let bundle = h.scratch.path + "/bundle"
            #expect(h.cli.run(["--config", h.configPath!, "bundle", "1", "-o", bundle]).status == 0)
            let path = bundle + "/" + file
            chmod(path, 0o644)
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes[bytes.count / 2] ^= 0x01
            try bytes.write(to: URL(fileURLWithPath: path))
            let v = h.cli.run(["verify", bundle, "--trust", h.scratch.path + "/tsa-ca.pem"])
            #expect(v.status == 1)
            #expect(v.stdout.contains("✗ file intact: \(file)"), "\(v.stdout)")
            #expect(h.stop() == 0)
        }
    }

    @Test("twelve files dropped at once: one time-stamp for the batch, each item its own evidence record, verified by Bouncy Castle and openssl")
    func batchOfTwelve() async throws {
        try await withSandbox { sandbox in
            let h = try harness(sandbox, notaries: ["tsa"], configExtra: "batch = \"3s\"")
            try h.start()
            // Written elsewhere and renamed in, all within the first second of a 3 s window.
            let staging = h.scratch.path + "/staging"
            try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
            var hashes: [String] = []
            for i in 0..<12 {
                let data = randomBytes(3_000 + i)
                hashes.append(sha256(data))
                try data.write(to: URL(fileURLWithPath: staging + "/f\(i).bin"))
            }
            // One name an auditor's script must not trip on (the root script never embeds it).
            let names = (0..<12).map { $0 == 0 ? "f\"0 + str(1) + \".bin" : "f\($0).bin" }
            for i in 0..<12 { rename(staging + "/f\(i).bin", h.drop + "/" + names[i]) }
            #expect(waitUntil(timeout: 60) { (1...12).allSatisfy { state(h, String($0)) == "done" } }, "log: \(h.log)")
            let stamped = counters(sandbox)["timestamps_by_imprint"] as? [String: Int] ?? [:]
            // One window, or two if the drop straddled a window's end: never one per item.
            #expect((1...2).contains(stamped.values.reduce(0, +)), "\(stamped)")
            #expect(stamped.keys.allSatisfy { !hashes.contains($0) } || stamped.count == 2, "roots, not items: \(stamped)")
            let ca = h.scratch.path + "/tsa-ca.pem"
            var pairs: [(record: String, data: String)] = []
            for id in 1...12 {
                let bundle = h.scratch.path + "/bundle\(id)"
                #expect(h.cli.run(["--config", h.configPath!, "bundle", String(id), "-o", bundle]).status == 0)
                let original = try #require(try FileManager.default.contentsOfDirectory(atPath: bundle + "/original").first)
                let root = CLI.exec(["python3", "proofs/tsa.root.py", "original/" + original], cwd: bundle)
                    .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(stamped[root] != nil, "item \(id): root \(root) is not what the TSA stamped")
                let ts = CLI.exec(["openssl", "ts", "-verify", "-digest", root, "-token_in", "-in", "proofs/tsa.tst",
                                   "-CAfile", ca, "-untrusted", "proofs/tsa-tsa.crt"], cwd: bundle)
                #expect(ts.status == 0 && ts.stdout.contains("Verification: OK"), "\(ts.stdout) \(ts.stderr)")
                let v = h.cli.run(["verify", bundle, "--trust", ca])
                #expect(v.status == 0, "\(v.stdout)")
                pairs.append((bundle + "/proofs/tsa.ers", bundle + "/original/" + original))
            }
            let bc = try BouncyCastleERS.check(pairs, caFile: ca)
            #expect(bc.succeeded, "\(bc.output)")
            // A record moved to another item's file of the same batch is refused.
            let swapped = try BouncyCastleERS.check(record: pairs[0].record, data: pairs[1].data, caFile: ca)
            #expect(!swapped.succeeded, "\(swapped.output)")
            #expect(h.cli.run(["fsck"]).status == 0)
            #expect(h.stop() == 0)
        }
    }

    @Test("SIGKILL while items wait in a time-stamp window, restart: each item gets one record, each window one token")
    func killMidWindow() async throws {
        try await withSandbox { sandbox in
            let h = try harness(sandbox, notaries: ["tsa"], configExtra: "batch = \"3s\"")
            // The TSA answers garbage until the restart: however slowly a loaded machine ingests
            // the five files, no window is stamped before the kill, which then falls while the
            // items wait in their windows (before a window's end or between its failed attempts).
            let tsa = { (count: Int) in
                CLI.exec(["curl", "-sf", "-X", "POST", "\(sandbox.baseURL.absoluteString)/_sandbox/misbehave?path=/tsa&mode=garbage&count=\(count)"])
            }
            #expect(tsa(1_000).status == 0)
            try h.start()
            for i in 0..<5 { h.write("w\(i).bin", randomBytes(2_000 + i)) }
            func tsaProof(_ id: Int) -> [String: Any]? {
                (show(h, String(id))["proofs"] as? [[String: Any]])?.first { $0["notary"] as? String == "tsa" }
            }
            // Every item joined a window: its proof is pending under the window's key.
            #expect(waitUntil(timeout: 30) { (1...5).allSatisfy { tsaProof($0)?["state"] as? String == "pending" } }, "log: \(h.log)")
            let windows = Set((1...5).compactMap { tsaProof($0)?["remoteID"] as? String })
            #expect(h.stop(SIGKILL) == -9)
            #expect(counters(sandbox)["timestamps"] as? Int ?? 0 == 0, "\(counters(sandbox))")
            #expect(tsa(0).status == 0)
            try h.start(scanned: false)
            #expect(waitUntil(timeout: 60) { (1...5).allSatisfy { state(h, String($0)) == "done" } }, "log: \(h.log)")
            // One token per window the items were in (two if the drop straddled a window's end), none twice.
            #expect(counters(sandbox)["timestamps"] as? Int == windows.count, "windows \(windows): \(counters(sandbox))")
            let records = (1...5).compactMap { tsaProof($0) }
            #expect(records.count == 5 && records.allSatisfy { $0["kind"] as? String == "rfc4998" && $0["state"] as? String == "confirmed" })
            #expect(Set(records.compactMap { $0["remoteID"] as? String }).count == windows.count, "one serial per window")
            #expect(h.cli.run(["fsck"]).status == 0)
            #expect(h.stop() == 0)
        }
    }

    @Test("a TSA certificate that expires tomorrow: verify --at names the failure, evidence renew waits for a certificate that outlives it, then renews; renewed bundles verify years later")
    func renewalBeforeExpiry() async throws {
        try await withSandbox { sandbox in
            let reissue = { (days: Int) in
                CLI.exec(["curl", "-sf", "-X", "POST", "\(sandbox.baseURL.absoluteString)/_sandbox/tsa/reissue?days=\(days)"])
            }
            let h = try harness(sandbox, notaries: ["tsa"])
            // The custody log is anchored by the same TSA: its anchors are renewed with the records, and
            // copied (renewals too) to a vault account.
            let vault = h.scratch.path + "/vault"
            try FileManager.default.createDirectory(atPath: vault, withIntermediateDirectories: true)
            try (String(contentsOfFile: h.configPath!, encoding: .utf8) + "\n[archives.vault]\nkind = \"local\"\npath = \"\(vault)\"\n"
                 + "\n[custody]\nanchor_tsa = \"tsa\"\nanchor_archive = \"vault\"\n")
                .write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            #expect(reissue(1).status == 0)
            try h.start()
            h.write("a.bin", randomBytes(3_000))
            h.write("b.bin", randomBytes(3_001))
            #expect(waitUntil(timeout: 60) { state(h, "1") == "done" && state(h, "2") == "done" }, "log: \(h.log)")
            #expect(h.stop() == 0)
            let later = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3 * 86_400))
            let now = h.cli.run(["--config", h.configPath!, "verify", "1"])
            #expect(now.status == 0, "\(now.stdout)")
            let expired = h.cli.run(["--config", h.configPath!, "verify", "1", "--at", later])
            #expect(expired.status == 1 && expired.stdout.contains("✗ RFC 4998 evidence record tsa"), "\(expired.stdout)")
            #expect(h.cli.run(["--config", h.configPath!, "log", "verify"]).status == 0)
            let anchorsExpired = h.cli.run(["--config", h.configPath!, "log", "verify", "--at", later])
            #expect(anchorsExpired.status == 1 && anchorsExpired.stdout.contains("does not verify"), "\(anchorsExpired.stdout)")
            // The TSA still signs with tomorrow's certificate: renewing with it gains nothing.
            let waits = h.cli.run(["--config", h.configPath!, "renew"])
            #expect(waits.status == 1 && waits.stdout.contains("no later than") && waits.stdout.contains("wait for a TSA certificate"), "\(waits.stdout) \(waits.stderr)")
            #expect(reissue(3650).status == 0)
            let renewed = h.cli.run(["--config", h.configPath!, "renew", "--json"])
            #expect(renewed.status == 0, "\(renewed.stdout) \(renewed.stderr)")
            let summary = (renewed.json as? [[String: Any]])?.first
            let anchors = summary?["anchors"] as? Int ?? 0
            #expect(anchors >= 1 && summary?["renewed"] as? Int == 2 + anchors && summary?["due"] as? Int == 2 + anchors, "\(renewed.stdout)")
            let records = try FileManager.default.contentsOfDirectory(atPath: h.home + "/anchors").filter { $0.hasSuffix(".ers") }
            #expect(records.count == anchors, "\(records)")
            let anchorsRenewed = h.cli.run(["--config", h.configPath!, "log", "verify", "--at", later])
            #expect(anchorsRenewed.status == 0, "\(anchorsRenewed.stdout)")
            // The renewed records went to the vault as new files beside the first copies: with anchors/
            // gone, the copies alone still verify the log years later.
            #expect(renewed.stdout.isEmpty || !renewed.stdout.contains("cannot copy"), "\(renewed.stdout)")
            let copies = vault + "/evidence-anchors"
            let copied = (try? FileManager.default.contentsOfDirectory(atPath: copies)) ?? []
            #expect(copied.filter { $0.hasSuffix(".r2.ers") }.count == anchors, "\(copied)")
            let saved = h.scratch.path + "/anchors-saved"
            #expect(rename(h.home + "/anchors", saved) == 0)
            let fromCopies = h.cli.run(["--config", h.configPath!, "log", "verify", "--at", later, "--anchors", copies])
            #expect(fromCopies.status == 0, "\(fromCopies.stdout)")
            // Without the renewals among the copies, the same check fails: the first tokens have expired.
            let bare = h.scratch.path + "/copies-without-renewals"
            try FileManager.default.createDirectory(atPath: bare, withIntermediateDirectories: true)
            for n in copied where !n.hasSuffix(".ers") { try FileManager.default.copyItem(atPath: copies + "/" + n, toPath: bare + "/" + n) }
            let withoutRenewals = h.cli.run(["--config", h.configPath!, "log", "verify", "--at", later, "--anchors", bare])
            #expect(withoutRenewals.status != 0, "\(withoutRenewals.stdout)")
            #expect(rename(saved, h.home + "/anchors") == 0)
            let again = h.cli.run(["--config", h.configPath!, "renew"])
            #expect(again.status == 0 && again.stdout.contains("nothing due"), "\(again.stdout)")
            // The records the renewal replaced stay in the store as history, not as orphans.
            let fsck = h.cli.run(["--config", h.configPath!, "fsck"])
            #expect(fsck.status == 0 && !fsck.stdout.contains("orphan") && fsck.stdout.contains("superseded receipt(s) kept"), "\(fsck.stdout)")
            for id in ["1", "2"] {
                let v = h.cli.run(["--config", h.configPath!, "verify", id, "--at", later])
                #expect(v.status == 0, "\(v.stdout)")
            }
            let ca = h.scratch.path + "/tsa-ca.pem"
            let bundle = h.scratch.path + "/bundle"
            #expect(h.cli.run(["--config", h.configPath!, "bundle", "1", "-o", bundle]).status == 0)
            #expect(h.cli.run(["verify", bundle, "--trust", ca, "--at", later]).status == 0)
            let original = try #require(try FileManager.default.contentsOfDirectory(atPath: bundle + "/original").first)
            let bc = try BouncyCastleERS.check(record: bundle + "/proofs/tsa.ers", data: bundle + "/original/" + original, caFile: ca,
                                               at: Date().addingTimeInterval(3 * 86_400))
            #expect(bc.succeeded, "\(bc.output)")
            // VERIFY.md's renewal steps, with standard tools: the first token over the batch root as of
            // the renewal, the renewal's token over the first token's file.
            let verifyText = try String(contentsOfFile: bundle + "/VERIFY.md", encoding: .utf8)
            #expect(verifyText.contains("proofs/tsa.2.tst") && verifyText.contains("-attime"), "\(verifyText)")
            let attime = try #require(verifyText.range(of: #"-attime (\d+)"#, options: .regularExpression).map {
                String(verifyText[$0].dropFirst("-attime ".count)) })
            let root1 = CLI.exec(["python3", "proofs/tsa.root.py", "original/" + original], cwd: bundle).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let first = CLI.exec(["openssl", "ts", "-verify", "-digest", root1, "-token_in", "-in", "proofs/tsa.tst", "-attime", attime,
                                  "-CAfile", ca], cwd: bundle)
            #expect(first.stdout.contains("Verification: OK"), "\(first.stdout) \(first.stderr)")
            let root2 = CLI.exec(["python3", "proofs/tsa.root.py", "proofs/tsa.tst", "2"], cwd: bundle)
            #expect(root2.status == 0, "\(root2.stderr)")
            let second = CLI.exec(["openssl", "ts", "-verify", "-digest", root2.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
                                   "-token_in", "-in", "proofs/tsa.2.tst", "-CAfile", ca], cwd: bundle)
            #expect(second.stdout.contains("Verification: OK"), "\(second.stdout) \(second.stderr)")
            // The first token alone, as of three days on, is what renewal saves it from.
            let expiredFirst = CLI.exec(["openssl", "ts", "-verify", "-digest", root1, "-token_in", "-in", "proofs/tsa.tst",
                                         "-attime", String(Int(Date().timeIntervalSince1970) + 3 * 86_400), "-CAfile", ca], cwd: bundle)
            #expect(!expiredFirst.stdout.contains("Verification: OK"))
            // The custody log records the renewed receipt; fsck and the log still hold.
            #expect(h.cli.run(["fsck"]).status == 0)
            #expect(h.cli.run(["log", "verify"]).status == 0)
            // A renewal that is not the anchor's own (an item's record put in its place) is refused.
            let anchorRecord = h.home + "/anchors/" + records[0]
            chmod(anchorRecord, 0o644)
            try Data(contentsOf: URL(fileURLWithPath: bundle + "/proofs/tsa.ers")).write(to: URL(fileURLWithPath: anchorRecord))
            let swapped = h.cli.run(["--config", h.configPath!, "log", "verify", "--at", later])
            #expect(swapped.status == 1 && swapped.stdout.contains("nor does its renewal"), "\(swapped.stdout)")
        }
    }

    @Test("hash-tree renewal to SHA-512: a new chain over SHA-512(file ‖ the chains before), one TSA request, verified by Bouncy Castle's renewHash reading; then renewed in SHA-512")
    func hashTreeRenewal() async throws {
        try await withSandbox { sandbox in
            let h = try harness(sandbox, notaries: ["tsa"], ruleExtra: "archive = \"vault\"\nremote_path = \"evidence/{name}\"")
            let vault = h.scratch.path + "/vault"
            try FileManager.default.createDirectory(atPath: vault, withIntermediateDirectories: true)
            try (String(contentsOfFile: h.configPath!, encoding: .utf8) + "\n[archives.vault]\nkind = \"local\"\npath = \"\(vault)\"\n")
                .write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            try h.start()
            h.write("a.bin", randomBytes(3_000))
            h.write("b.bin", randomBytes(3_001))
            #expect(waitUntil(timeout: 60) { state(h, "1") == "done" && state(h, "2") == "done" }, "log: \(h.log)")
            #expect(h.stop() == 0)
            func archivedRecords() -> [String] {
                ((try? FileManager.default.contentsOfDirectory(atPath: vault + "/evidence")) ?? []).filter { $0.hasSuffix(".ers") }.sorted()
            }
            #expect(archivedRecords().count == 2, "\(archivedRecords())")
            let before = counters(sandbox)["timestamps"] as? Int ?? 0
            #expect(h.cli.run(["--config", h.configPath!, "renew", "--hash", "sha512"]).status != 0, "--hash without ITEMs or --all")
            let renewed = h.cli.run(["--config", h.configPath!, "renew", "--hash", "sha512", "--all"])
            #expect(renewed.status == 0 && renewed.stdout.contains("hash-tree renewal to SHA-512 of 2 of 2"), "\(renewed.stdout) \(renewed.stderr)")
            // One request for both records, with a SHA-512 imprint.
            #expect(counters(sandbox)["timestamps"] as? Int == before + 1, "\(counters(sandbox))")
            let stamped = (counters(sandbox)["timestamps_by_imprint"] as? [String: Int] ?? [:]).keys
            #expect(stamped.contains { $0.count == 128 }, "\(stamped)")
            let again = h.cli.run(["--config", h.configPath!, "renew", "--hash", "sha512", "--all"])
            #expect(again.status == 0 && again.stdout.contains("nothing to hash-renew"), "\(again.stdout)")
            // The renewed records reach the archive once the service runs its queued archive jobs:
            // beside the first ones (never over them), each the bytes of the item's current receipt.
            try h.start(scanned: false)
            #expect(waitUntil(timeout: 60) { archivedRecords().count == 4 }, "\(archivedRecords()) \(h.log.suffix(1500))")
            #expect(h.stop() == 0)
            for id in ["1", "2"] {
                let receipt = try #require((proof(h, id, "tsa")?["receipt"]) as? String)
                let copies = archivedRecords().map { vault + "/evidence/" + $0 }
                #expect(copies.contains { sha256(FileManager.default.contents(atPath: $0) ?? Data()) == receipt }, "item \(id): \(copies)")
            }
            for id in ["1", "2"] {
                let v = h.cli.run(["--config", h.configPath!, "verify", id])
                #expect(v.status == 0, "\(v.stdout)")
            }
            let ca = h.scratch.path + "/tsa-ca.pem"
            let bundle = h.scratch.path + "/bundle"
            #expect(h.cli.run(["--config", h.configPath!, "bundle", "1", "-o", bundle]).status == 0)
            let v = h.cli.run(["verify", bundle, "--trust", ca])
            #expect(v.status == 0, "\(v.stdout)")
            let original = try #require(try FileManager.default.contentsOfDirectory(atPath: bundle + "/original").first)
            // Bouncy Castle checks the newest chain against the file and the chains before it.
            let bc = try BouncyCastleERS.check(record: bundle + "/proofs/tsa.ers", data: bundle + "/original/" + original, caFile: ca)
            #expect(bc.succeeded, "\(bc.output)")
            // The record moved to the other item's file, and the record with its first chain altered
            // (a byte of the first time-stamp's token): both refused, by Bouncy Castle and by us.
            let other = h.scratch.path + "/other.bin"
            try randomBytes(3_002).write(to: URL(fileURLWithPath: other))
            #expect(!(try BouncyCastleERS.check(record: bundle + "/proofs/tsa.ers", data: other, caFile: ca)).succeeded)
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: bundle + "/proofs/tsa.ers")))
            let token = try [UInt8](Data(contentsOf: URL(fileURLWithPath: bundle + "/proofs/tsa.tst")))
            let at = try #require(bytes.firstRange(of: token.prefix(64)))
            bytes[at.lowerBound + 40] ^= 0x01
            let altered = h.scratch.path + "/altered.ers"
            try Data(bytes).write(to: URL(fileURLWithPath: altered))
            #expect(!(try BouncyCastleERS.check(record: altered, data: bundle + "/original/" + original, caFile: ca)).succeeded)
            // Time-stamp renewal of the SHA-512 chain: a SHA-512 request again, and the record still verifies.
            let later = h.cli.run(["--config", h.configPath!, "renew", "1", "--force"])
            #expect(later.status == 0 && later.stdout.contains("renewed 1"), "\(later.stdout) \(later.stderr)")
            #expect(h.cli.run(["--config", h.configPath!, "verify", "1"]).status == 0)
            let bundle2 = h.scratch.path + "/bundle2"
            #expect(h.cli.run(["--config", h.configPath!, "bundle", "1", "-o", bundle2]).status == 0)
            #expect(h.cli.run(["verify", bundle2, "--trust", ca]).status == 0)
            let bc2 = try BouncyCastleERS.check(record: bundle2 + "/proofs/tsa.ers", data: bundle2 + "/original/" + original, caFile: ca)
            #expect(bc2.succeeded, "\(bc2.output)")
            #expect(h.cli.run(["--config", h.configPath!, "fsck"]).status == 0)
        }
    }

    @Test("SIGKILL while the QED report is pending, restart: polling resumes, one submission, item done")
    func killWhilePending() async throws {
        try await withSandbox(pending: 3) { sandbox in
            let h = try harness(sandbox, notaries: ["qed"])
            try h.start()
            let data = randomBytes(10_000)
            let hash = sha256(data)
            h.write("pending.bin", data)
            #expect(waitUntil(timeout: 20) { state(h, "1") == "submitted" })
            #expect(h.stop(SIGKILL) == -9)
            try h.start()
            #expect(waitUntil(timeout: 30) { state(h, "1") == "done" }, "log: \(h.log)")
            #expect(submissions(sandbox, hash: hash) == 1)
            #expect(h.stop() == 0)
        }
    }

    @Test("a report already at the notary for this hash (crash after the POST) is adopted, not submitted again")
    func adoptsExistingReport() async throws {
        try await withSandbox { sandbox in
            let h = try harness(sandbox, notaries: ["qed"])
            let data = randomBytes(8_000)
            let hash = sha256(data)
            let body = #"{"hash":"\#(hash)","provable_files":[],"original_created_at":"2026-01-01T00:00:00Z","name":"earlier run"}"#
            let made = CLI.exec(["curl", "-sf", "-X", "POST", "-H", "Authorization: app-token sandbox-key", "-H",
                                 "Content-Type: application/json", "--data", body, "\(sandbox.baseURL.absoluteString)/v1/reports/"])
            let slug = ((try? JSONSerialization.jsonObject(with: Data(made.stdout.utf8))) as? [String: Any])?["slug"] as? String
            #expect(slug != nil, "\(made.stderr)")
            try h.start()
            h.write("again.bin", data)
            #expect(waitUntil(timeout: 30) { state(h, "1") == "done" }, "log: \(h.log)")
            let proof = (show(h, "1")["proofs"] as? [[String: Any]])?.first
            #expect(proof?["remoteID"] as? String == slug)
            #expect(submissions(sandbox, hash: hash) == 1)
            #expect(h.stop() == 0)
        }
    }

    @Test("a report the notary fails marks the item failed with its reason; retry submits a new one")
    func failedReport() async throws {
        try await withSandbox { sandbox in
            let h = try harness(sandbox, notaries: ["qed"], ruleExtra: "name = \"FAIL-ME {name}\"")
            try h.start()
            let data = randomBytes(6_000)
            let hash = sha256(data)
            h.write("doomed.bin", data)
            #expect(waitUntil(timeout: 30) { state(h, "1") == "failed" }, "log: \(h.log)")
            let item = show(h, "1")["item"] as? [String: Any]
            #expect((item?["stateReason"] as? String)?.contains("Transaction reverted") == true)
            let st = h.cli.run(["status"])
            #expect(st.status == 1)
            #expect(st.stdout.contains("Transaction reverted"))
            #expect(h.cli.run(["retry", "1"]).status == 0)
            #expect(waitUntil(timeout: 30) { submissions(sandbox, hash: hash) == 2 && state(h, "1") == "failed" })
            #expect(h.stop() == 0)
        }
    }

    func faultSoak() async throws {
        try await withSandbox(extra: ["--fail-rate", "0.3", "--drop-rate", "0.1", "--fault-path", "/v1/", "--fault-path", "/tsa",
                                      "--seed", "11"]) { sandbox in
            let h = try harness(sandbox)
            try h.start()
            var hashes: [String] = []
            for i in 0..<8 {
                let data = randomBytes(3_000 + i)
                hashes.append(sha256(data))
                h.write("f\(i).bin", data)
            }
            let all = waitUntil(timeout: 150) { ((h.status()["states"] as? [String: Int])?["done"] ?? 0) == 8 }
            #expect(all, "\(h.cli.run(["status"]).stdout)")
            for hash in hashes { #expect(submissions(sandbox, hash: hash) == 1, "hash \(hash)") }
            let faults = counters(sandbox)["faults"] as? [String: Int] ?? [:]
            #expect((faults["5xx"] ?? 0) > 0 && (faults["dropped"] ?? 0) > 0, "faults were injected: \(faults)")
            #expect(h.cli.run(["fsck"]).status == 0)
            #expect(h.stop() == 0)
        }
    }

    @Test("a QED notary whose API key variable is unset: run refuses to start, naming file and field, exit 2")
    func missingKey() async throws {
        try await withSandbox { sandbox in
            let h = try harness(sandbox, keyEnv: "EVIDENCE_TEST_UNSET_KEY")
            let r = CLI.exec([CLI.binary, "--config", h.configPath!, "--home", h.home, "run", "--rules", h.rules])
            #expect(r.status == 2)
            #expect(r.stderr.contains("evidence.toml") && r.stderr.contains("notaries.qed.api_key_env"), "\(r.stderr)")
        }
    }
}

/// The long end-to-end runs of `NotarizationCLITests`, apart so that `make test` stays short: `make test-long`
/// runs them (and CI runs both). The bodies are `NotarizationCLITests`'s own, unchanged.
@Suite("Notarization, long runs: faults at QED and the TSA", .serialized, .ownThread)
struct NotarizationLongTests {
    @Test("under 30% 5xx and 10% dropped connections at QED and the TSA, every file is confirmed once: one submission per hash")
    func faultSoak() async throws {
        try await NotarizationCLITests().faultSoak()
    }
}
