import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// The custody log as an RFC 9162 Merkle tree: anchors time-stamp C2SP checkpoints, bundles carry
/// each event's inclusion proof. Checked by Go's golang.org/x/mod/sumdb/tlog (the Go checksum
/// database's own code), `openssl ts -verify` and the bundle's hashlib-only script; forged with
/// sqlite3, python3 and a forger's own TSA.
@Suite("Custody tree: checkpoints, inclusion and consistency proofs", .ownThread)
struct CustodyTreeCLITests {
    let notarization = NotarizationCLITests()
    let attacks = AttackCLITests()

    /// A harness with `[custody]` anchoring to the sandbox TSA; its cli reads that config.
    func custodyHarness(_ sandbox: SandboxProcess) throws -> (RunHarness, CLI) {
        let h = try notarization.harness(sandbox, notaries: ["tsa"])
        let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
        try (config + "\n\n[custody]\nanchor_tsa = \"tsa\"\norigin = \"test.example/custody\"\n")
            .write(toFile: h.configPath!, atomically: true, encoding: .utf8)
        var cli = h.cli
        cli.environment["EVIDENCE_CONFIG"] = h.configPath!
        return (h, cli)
    }

    func ingest(_ h: RunHarness, _ cli: CLI, _ names: [String]) {
        for name in names {
            let file = h.scratch.path + "/" + name
            _ = FileManager.default.createFile(atPath: file, contents: Data("content of \(name)\n".utf8))
            let r = cli.run(["ingest", file])
            #expect(r.status == 0, "\(r.stderr)")
        }
    }

    @Test("anchors stamp checkpoints that openssl verifies; log verify, log checkpoints and Go's tlog agree on roots and consistency; a log re-hashed under renamed anchors is caught by the roots alone")
    func checkpointsAndConsistency() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, cli) = try custodyHarness(sandbox)
            let ca = h.scratch.path + "/tsa-ca.pem"
            for batch in [["a.txt", "b.txt", "c.txt"], ["d.txt", "e.txt", "f.txt", "g.txt"], ["h.txt"]] {
                ingest(h, cli, batch)
                let a = cli.run(["log", "anchor"])
                #expect(a.status == 0 && a.stdout.contains("✓ anchored custody event"), "\(a.stdout)\(a.stderr)")
            }
            let anchors = h.home + "/anchors"
            let checkpoints = try FileManager.default.contentsOfDirectory(atPath: anchors).filter { $0.hasSuffix(".checkpoint") }.sorted()
            #expect(checkpoints.count == 3, "\(checkpoints)")
            // The token is over the checkpoint's bytes: the standard tool checks it with -data.
            for name in checkpoints {
                let text = try String(contentsOfFile: anchors + "/" + name, encoding: .utf8)
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                #expect(lines.count == 4 && lines[0] == "test.example/custody" && Int(lines[1]) == Int(name.prefix(12)), "\(text)")
                let ts = CLI.exec(["openssl", "ts", "-verify", "-data", anchors + "/" + name,
                                   "-in", anchors + "/" + name.dropLast(".checkpoint".count) + ".tsr", "-CAfile", ca])
                #expect(ts.status == 0 && ts.stdout.contains("Verification: OK"), "\(ts.stdout)\(ts.stderr)")
            }
            let verify = cli.run(["log", "verify"])
            #expect(verify.status == 0, "\(verify.stdout)")

            // log checkpoints: each with its consistency proof from the one before; Go's tlog recomputes
            // every root from the events' hashes and checks every proof.
            let listed = cli.run(["log", "checkpoints", "--json"])
            #expect(listed.status == 0, "\(listed.stderr)")
            let entries = try #require(listed.json as? [[String: Any]])
            #expect(entries.count == 3 && entries[1]["from"] as? Int == entries[0]["size"] as? Int
                    && entries[2]["from"] as? Int == entries[1]["size"] as? Int && entries[0]["from"] == nil, "\(entries)")
            let db = h.home + "/catalog.sqlite"
            let hashes = h.scratch.path + "/hashes.txt", cps = h.scratch.path + "/checkpoints.json"
            try attacks.sqlite(db, "SELECT hash FROM custody_event ORDER BY seq").stdout.write(toFile: hashes, atomically: true, encoding: .utf8)
            try listed.stdout.write(toFile: cps, atomically: true, encoding: .utf8)
            let go = try GoTlog.checkLog(hashes: hashes, checkpoints: cps)
            #expect(go.succeeded && go.output.contains("3 checkpoint roots recomputed and 2 consistency proofs verified"), "\(go.output)")

            // The attacker re-hashes the whole chain from a backdated event #2 on, rewrites every
            // hash the events mention (the anchored events name their anchors) and custody.head,
            // and renames the anchors onto the new hashes. Each token still verifies over its own
            // checkpoint; only the checkpoints' roots show that the log is not the one stamped.
            let events = try #require(try JSONSerialization.jsonObject(with: Data(CLI.exec(["sqlite3", "-json", db,
                "SELECT seq, item_id, at, kind, actor, details, hash FROM custody_event ORDER BY seq"]).stdout.utf8)) as? [[String: Any]])
            var prev = String(repeating: "0", count: 64)
            var renamed: [String: String] = [:]
            var sql = SecurityCLITests.dropTriggers
            var last = (seq: 0, hash: "")
            for var e in events {
                let seq = try #require(e["seq"] as? Int)
                if seq == 2 { e["at"] = "2019-03-01T09:00:00.000Z" }
                var details = try #require(e["details"] as? String)
                for (old, new) in renamed { details = details.replacingOccurrences(of: old, with: new) }
                let item = (e["item_id"] as? Int).map(String.init) ?? "-"
                let body = "evidence-custody-v1\n\(seq)\n\(e["at"]!)\n\(item)\n\(e["kind"]!)\n\(e["actor"]!)\n\(details)"
                let hash = attacks.sha256(text: prev + "\n" + body)
                renamed[try #require(e["hash"] as? String)] = hash
                sql += "UPDATE custody_event SET at = '\(e["at"]!)', details = '\(details)', prev_hash = '\(prev)', hash = '\(hash)' WHERE seq = \(seq);\n"
                prev = hash
                last = (seq, hash)
            }
            #expect(attacks.sqlite(db, sql).status == 0)
            try "\(last.seq) \(last.hash)\n".write(toFile: h.home + "/custody.head", atomically: true, encoding: .utf8)
            for name in try FileManager.default.contentsOfDirectory(atPath: anchors) {
                guard let (old, new) = renamed.first(where: { name.contains($0.key) }) else { continue }
                #expect(rename(anchors + "/" + name, anchors + "/" + name.replacingOccurrences(of: old, with: new)) == 0)
            }
            let forged = cli.run(["log", "verify"])
            #expect(forged.status == 1, "\(forged.stdout)")
            #expect(forged.stdout.contains("is not the root that anchor"), "\(forged.stdout)")
            #expect(!forged.stdout.contains("does not verify: ") && !forged.stdout.contains("content does not match its hash")
                    && !forged.stdout.contains("differs from anchor"), "tokens, chain and names agree: only the roots catch it: \(forged.stdout)")
            let checkpointsNow = cli.run(["log", "checkpoints"])
            #expect(checkpointsNow.status == 1 && checkpointsNow.stderr.contains("is not the custody tree as the log now has it"), "\(checkpointsNow.stderr)")
        }
    }

    @Test("a bundle proves its custody events from the bundle alone: check.py, openssl and Go's tlog agree; a flipped proof hash, a proof moved to another event, an edited event and a checkpoint re-signed by a forger's TSA are each refused")
    func bundleInclusionProofs() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, cli) = try custodyHarness(sandbox)
            let ca = h.scratch.path + "/tsa-ca.pem"
            ingest(h, cli, ["first.txt"])
            #expect(cli.run(["log", "anchor"]).status == 0)
            ingest(h, cli, ["second.txt", "third.txt"])
            // bundle anchors the head first (its own access event included): every event is covered.
            let dir = h.scratch.path + "/bundle"
            let made = cli.run(["bundle", "1", "-o", dir])
            #expect(made.status == 0, "\(made.stderr)")
            _ = CLI.exec(["chmod", "-R", "u+w", dir])
            let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/manifest.json"))) as? [String: Any])
            #expect(manifest["format"] as? String == "evidence-bundle/3")
            let checkpoint = try #require(manifest["custodyCheckpoint"] as? [String: Any])
            let size = try #require(checkpoint["size"] as? Int)
            let total = try #require(Int(attacks.sqlite(h.home + "/catalog.sqlite", "SELECT max(seq) FROM custody_event").stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(size == total - 1, "the checkpoint covers every event but the record of its own anchor (\(size) of \(total))")
            let seqs = try String(contentsOfFile: dir + "/custody.jsonl", encoding: .utf8).split(separator: "\n")
                .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["seq"] as? Int }
            #expect(seqs.count >= 2 && seqs.allSatisfy { FileManager.default.fileExists(atPath: dir + "/custody/\($0).tlog-proof") }, "\(seqs)")

            let script = CLI.exec(["python3", "custody/check.py"], cwd: dir)
            #expect(script.status == 0 && script.stdout.contains("\(seqs.count) event(s) recomputed and included, 0 after the checkpoint (not covered), 0 failed"),
                    "\(script.stdout)\(script.stderr)")
            let ts = CLI.exec(["openssl", "ts", "-verify", "-data", "custody/checkpoint", "-in", "custody/checkpoint.tsr",
                               "-CAfile", ca, "-untrusted", "custody/checkpoint-tsa.crt"], cwd: dir)
            #expect(ts.status == 0 && ts.stdout.contains("Verification: OK"), "\(ts.stdout)\(ts.stderr)")
            let go = try GoTlog.checkBundle(dir)
            #expect(go.succeeded && go.output.contains("\(seqs.count) inclusion proofs verified"), "\(go.output)")
            let verify = cli.run(["verify", dir, "--trust", ca])
            #expect(verify.stdout.contains("✓ custody checkpoint time-stamped") && verify.stdout.contains("✓ custody events in the checkpoint: \(seqs.count) event(s) proven"),
                    "\(verify.stdout)")
            #expect(verify.stdout.contains("✓ VERIFY.md") && !verify.stdout.contains("✗"), "\(verify.stdout)")
            let instructions = try String(contentsOfFile: dir + "/VERIFY.md", encoding: .utf8)
            #expect(instructions.contains("python3 custody/check.py") && instructions.contains("prevHash \\n evidence-custody-v1 \\n seq"), "\(instructions)")

            /// A copy of the bundle changed by `change`, its manifest entries and SHA256SUMS redone as a forger would.
            func forged(_ name: String, _ change: (String) throws -> Void) throws -> String {
                let copy = h.scratch.path + "/" + name
                #expect(CLI.exec(["cp", "-a", dir, copy]).status == 0)
                try change(copy)
                for rel in ["custody.jsonl", "custody/checkpoint.tsr", "custody/checkpoint-tsa.crt"] + seqs.map({ "custody/\($0).tlog-proof" }) {
                    AttackVerdictCLITests().python(AttackVerdictCLITests.fixEntry, in: copy, [rel])
                }
                AttackVerdictCLITests().resum(copy)
                return copy
            }

            // 1. One base64 character of the first proof's first hash changed.
            let flipped = try forged("flipped") { copy in
                let path = copy + "/custody/\(seqs[0]).tlog-proof"
                var lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
                lines[2] = (lines[2].first == "A" ? "B" : "A") + lines[2].dropFirst()
                try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
            }
            // 2. The second event's proof put in the first event's place.
            let moved = try forged("moved") { copy in
                #expect(CLI.exec(["cp", copy + "/custody/\(seqs[1]).tlog-proof", copy + "/custody/\(seqs[0]).tlog-proof"]).status == 0)
            }
            // 3. The last event's actor changed, its hash recomputed and made the manifest's head.
            let edited = try forged("edited") { copy in
                AttackVerdictCLITests().python("""
                    import hashlib, json, os, sys
                    d = sys.argv[1]
                    lines = open(os.path.join(d, 'custody.jsonl')).read().splitlines()
                    e = json.loads(lines[-1])
                    e['actor'] = 'cli:someone-else'
                    body = 'evidence-custody-v1\\n%d\\n%s\\n%s\\n%s\\n%s\\n%s' % (e['seq'], e['at'], e['itemID'], e['kind'], e['actor'], e['details'])
                    e['hash'] = hashlib.sha256((e['prevHash'] + '\\n' + body).encode()).hexdigest()
                    lines[-1] = json.dumps(e, sort_keys=True, separators=(',', ':'))
                    open(os.path.join(d, 'custody.jsonl'), 'w').write('\\n'.join(lines) + '\\n')
                    m = json.load(open(os.path.join(d, 'manifest.json')))
                    m['custodyHead'] = e['hash']
                    json.dump(m, open(os.path.join(d, 'manifest.json'), 'w'), indent=2, sort_keys=True)
                    """, in: copy)
            }
            // 4. The checkpoint time-stamped again by the forger's own TSA.
            let forger = try Forger(dir: h.scratch.path + "/forger")
            let resigned = try forged("resigned") { copy in
                try forger.timestamp(copy + "/custody/checkpoint", to: copy + "/custody/checkpoint.tsr")
                try? FileManager.default.removeItem(atPath: copy + "/custody/checkpoint-tsa.crt")
                try FileManager.default.copyItem(atPath: forger.tsaCertPath, toPath: copy + "/custody/checkpoint-tsa.crt")
            }
            for (copy, expected) in [(flipped, "is not in the checkpoint's tree"), (moved, "index \(seqs[1] - 1), not \(seqs[0] - 1)"),
                                     (edited, "is not in the checkpoint's tree"), (resigned, "✗ custody checkpoint time-stamped: custody/checkpoint.tsr: not verified")] {
                let v = cli.run(["verify", copy, "--trust", ca])
                #expect(v.status == 1 && v.stdout.contains(expected), "\(copy): \(v.stdout)")
                #expect(!v.stdout.contains("✗ file intact"), "the forger redid every hash: \(v.stdout)")
            }
            for copy in [flipped, moved, edited] {
                #expect(CLI.exec(["python3", "custody/check.py"], cwd: copy).status == 1, "check.py on \(copy)")
                #expect(try !GoTlog.checkBundle(copy).succeeded, "Go's tlog on \(copy)")
            }
            // 5. The manifest's stamp time moved a year back (VERIFY.md, made from it, would tell the reader so).
            let redated = try forged("redated") { copy in
                AttackVerdictCLITests().python("""
                    import json, os, sys
                    d = sys.argv[1]
                    m = json.load(open(os.path.join(d, 'manifest.json')))
                    m['custodyCheckpoint']['timeStamped'] = '2025-01-01T00:00:00.000Z'
                    json.dump(m, open(os.path.join(d, 'manifest.json'), 'w'), indent=2, sort_keys=True)
                    """, in: copy)
            }
            let r5 = cli.run(["verify", redated, "--trust", ca])
            #expect(r5.status == 1 && r5.stdout.contains("VERIFY.md states a time the token does not"), "\(r5.stdout)")
            // 6. custody/ and the manifest's checkpoint removed: never silent.
            let stripped = h.scratch.path + "/stripped"
            #expect(CLI.exec(["cp", "-a", dir, stripped]).status == 0)
            #expect(CLI.exec(["rm", "-rf", stripped + "/custody"]).status == 0)
            AttackVerdictCLITests().python("""
                import json, os, sys
                d = sys.argv[1]
                m = json.load(open(os.path.join(d, 'manifest.json')))
                del m['custodyCheckpoint']
                m['files'] = [f for f in m['files'] if not f['path'].startswith('custody/')]
                json.dump(m, open(os.path.join(d, 'manifest.json'), 'w'), indent=2, sort_keys=True)
                """, in: stripped)
            AttackVerdictCLITests().resum(stripped)
            let r6 = cli.run(["verify", stripped, "--trust", ca])
            #expect(r6.stdout.contains("no time-stamped checkpoint of the custody log covers these custody events"), "\(r6.stdout)")
            let forgedToken = CLI.exec(["openssl", "ts", "-verify", "-data", "custody/checkpoint", "-in", "custody/checkpoint.tsr",
                                        "-CAfile", ca, "-untrusted", "custody/checkpoint-tsa.crt"], cwd: resigned)
            #expect(forgedToken.status != 0, "\(forgedToken.stdout)")
        }
    }
}
