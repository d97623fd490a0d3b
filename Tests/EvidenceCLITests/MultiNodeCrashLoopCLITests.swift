import EvidenceProcess
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// The crash loop with several nodes: two or three `evidence run` processes on one PostgreSQL
/// catalog and one S3 bucket (a real S3 server, moto, with Object Lock), each node with a home of
/// its own, watching its own folder, all running any job; files dropped over
/// time; a node picked at random is SIGKILLed, and comes back after a random pause (while it is
/// away the others take its jobs once its leases end). Then, from outside: every file is one
/// done item (read with `psql`), QED got one report per hash and the provider one upload per
/// remote path (the sandbox's counters), every original is in the bucket (boto3), and `fsck`
/// (which re-hashes the bucket's objects) and `log verify` are clean.
///
/// `EVIDENCE_SOAK_FILES` and `EVIDENCE_SOAK_KILLS` make it longer (`make soak`).
@Suite("Soak: crash loop across several nodes on PostgreSQL and S3, real processes", .serialized, .ownThread)
struct MultiNodeCrashLoopLongTests {
    final class Node {
        let name: String
        let config: String
        let home: String
        let log: String
        var process: ChildProcess?
        var starts = 0
        init(name: String, config: String, home: String, log: String) {
            self.name = name; self.config = config; self.home = home; self.log = log
        }
        var text: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        deinit { if let p = process, p.isRunning { p.signal(SIGKILL); p.wait() } }
    }

    @Test("crash loop over several nodes: SIGKILL a random node at random moments, restart it later: each file once, notarized once, uploaded once, fsck and custody clean",
          arguments: [2, 3])
    func crashLoop(nodeCount: Int) async throws {
        guard let pg = PostgresServer.shared else {
            throw PostgresServer.Failure(description: "PostgreSQL test server unavailable: \(PostgresServer.unavailable)")
        }
        guard let s3 = S3Server.shared else { throw S3Server.Failure(description: "S3 test server unavailable: \(S3Server.unavailable)") }
        let bucket = try s3.makeBucket(objectLock: true)
        let files = SoakCLITests.setting("EVIDENCE_SOAK_FILES", 36)
        let kills = SoakCLITests.setting("EVIDENCE_SOAK_KILLS", 4)
        let seed = UInt64(SoakCLITests.setting("EVIDENCE_SOAK_SEED", Int(Date().timeIntervalSince1970) % 100_000))
        let database = try pg.makeDatabase()
        let started = Date()
        try await ProviderCLITests().withSandbox(["--seed", String(seed)]) { sandbox in
            let scratch = Scratch()
            let base = sandbox.baseURL.absoluteString
            let ca = scratch.path + "/tsa-ca.pem"
            #expect(CLI.exec(["curl", "-sf", "-o", ca, "\(base)/tsa/ca.pem"]).status == 0)
            let rules = scratch.path + "/rules", secrets = scratch.path + "/secrets"
            try FileManager.default.createDirectory(atPath: rules, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let account = ProviderCLITests.Provider.dropbox.account(base, secrets: secrets)
            let names = (1...nodeCount).map { "station-\($0)" }
            var nodes: [Node] = []
            for name in names {
                let drop = scratch.path + "/drop-" + name
                try FileManager.default.createDirectory(atPath: drop, withIntermediateDirectories: true)
                try """
                    path = "\(drop)"
                    settle = "0s"
                    notary = ["qed", "tsa"]
                    archive = "vault"
                    remote_path = "evidence/{rule}/{sha8}-{name}"
                    nodes = ["\(name)"]

                    [share]
                    access = "open"
                    expires_in = "30d"
                    """.write(toFile: rules + "/\(name).toml", atomically: true, encoding: .utf8)
                let config = scratch.path + "/\(name).toml"
                try """
                    node = "\(name)"
                    [workers]
                    jobs = 2
                    lease = "10s"
                    [catalog]
                    url = "postgres://\(pg.user)@127.0.0.1:\(pg.port)/\(database)"
                    password_env = "EVIDENCE_TEST_DB_PASSWORD"
                    [notaries.qed]
                    kind = "qed"
                    base_url = "\(base)/v1/"
                    api_key_env = "EVIDENCE_TEST_QED_KEY"
                    poll_first = "300ms"
                    poll_max = "1s"
                    [notaries.tsa]
                    kind = "rfc3161"
                    urls = ["\(base)/tsa"]
                    ca_file = "\(ca)"
                    [archives.vault]
                    \(account)

                    \(S3CLITests.storeTable(s3, bucket: bucket, lock: true))
                    """.write(toFile: config, atomically: true, encoding: .utf8)
                nodes.append(Node(name: name, config: config, home: scratch.path + "/home-" + name, log: scratch.path + "/\(name).log"))
            }
            let secretsEnv = s3.environment(["EVIDENCE_TEST_DB_PASSWORD": pg.password, "EVIDENCE_TEST_QED_KEY": "sandbox-key"])
            let env = ChildProcess.environment(secretsEnv, removing: ["EVIDENCE_HOME", "EVIDENCE_CONFIG"])
            func start(_ node: Node) async throws {
                node.starts += 1
                node.process = try ChildProcess(CLI.binary, ["--config", node.config, "--home", node.home, "run", "--rules", rules,
                                                             "--log-format", "json"],
                                                environment: env, directory: scratch.path, stdout: .file(node.log, append: true), stderr: .stdout)
                let marker = node.starts
                #expect(await waitUntil(timeout: 60) { node.text.components(separatedBy: "initial scan").count > marker },
                        "\(node.name) did not start: \(node.text.suffix(2000))")
            }
            for node in nodes { try await start(node) }

            let corpus = SoakCLITests.Corpus(count: files, in: scratch, seed: seed)
            var rng = SplitMix(seed: seed &+ 1)
            var killLog: [String] = []
            var down: [(node: Node, back: Date)] = []
            let batches = (0...kills).map { k in (k * files / (kills + 1))..<((k + 1) * files / (kills + 1)) }
            for k in 0...kills {
                for i in batches[k] {
                    corpus.drop(i, into: scratch.path + "/drop-" + names[i % nodeCount])
                    if rng.next() % 4 == 0 { usleep(UInt32(rng.next() % 60_000)) }   // the scenario: drops spread out
                }
                // Nodes whose pause is over come back.
                let now = Date()
                for d in down where d.back <= now { try await start(d.node) }
                down.removeAll { $0.back <= now }
                guard k < kills else { break }
                usleep(UInt32(300_000 + rng.next() % 2_700_000))   // the scenario: a kill at a random moment
                // One node always stays up: with the others away, wait for the next one back first.
                if nodes.filter({ $0.process?.isRunning == true }).count < 2, let next = down.min(by: { $0.back < $1.back }) {
                    usleep(UInt32(max(0, next.back.timeIntervalSinceNow) * 1_000_000))   // the scenario: its random time down
                    try await start(next.node)
                    down.removeAll { $0.node === next.node }
                }
                let running = nodes.filter { $0.process?.isRunning == true }
                let victim = running[Int(rng.next() % UInt64(running.count))]
                victim.process?.signal(SIGKILL)
                _ = victim.process?.wait()
                victim.process = nil
                let pause = Double(rng.next() % 4_000) / 1000
                down.append((victim, Date().addingTimeInterval(pause)))
                killLog.append("kill \(k + 1) at \(String(format: "%.1f", Date().timeIntervalSince(started))) s: \(victim.name), back after \(String(format: "%.1f", pause)) s")
            }
            for d in down { try await start(d.node) }

            func sql(_ q: String) -> String { ((try? pg.psql(q, database: database)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
            let distinct = Set(corpus.hashes.values).count
            let done = await waitUntil(timeout: Double(max(300, files * 6)), every: 0.5) {
                sql("SELECT count(*) FROM item WHERE state = 'done'") == "\(distinct)"
            }
            #expect(done, "not all done: \(sql("SELECT state, count(*) FROM item GROUP BY 1")); jobs: \(sql("SELECT kind, state, lease_owner, last_error FROM job WHERE state <> 'done' LIMIT 20"))\n\(killLog.joined(separator: "\n"))")

            // From outside: the catalog with psql, the sandbox's counters, fsck and log verify.
            var lost: [String] = [], duplicates: [String] = [], problems: [String] = []
            var byHash: [String: [String]] = [:]
            for line in sql("""
                SELECT i.sha256, i.state,
                  (SELECT count(*) FROM source s WHERE s.item_id = i.id),
                  (SELECT string_agg(DISTINCT a.role, ',' ORDER BY a.role) FROM archived_file a WHERE a.item_id = i.id),
                  (SELECT count(*) FROM shared_link l WHERE l.item_id = i.id),
                  (SELECT count(*) FROM proof p WHERE p.item_id = i.id AND p.state = 'confirmed')
                FROM item i
                """).split(separator: "\n") {
                let f = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
                if f.count == 6 { byHash[f[0]] = f }
            }
            let sameContent = Dictionary(grouping: corpus.names, by: { corpus.hashes[$0] ?? "" })
            for (hash, named) in sameContent {
                guard let f = byHash[hash], f[1] == "done" else { lost.append("\(named[0]) (\(byHash[hash]?[1] ?? "no item"))"); continue }
                if f[2] != "\(named.count)" { duplicates.append("\(named[0]): \(f[2]) source rows for \(named.count) file(s)") }
                if !Set(f[3].split(separator: ",").map(String.init)).isSuperset(of: ["original", "receipt", "certificate", "manifest"]) {
                    problems.append("\(named[0]): archived roles \(f[3])")
                }
                if f[4] != "1" { problems.append("\(named[0]): \(f[4]) links") }
                if f[5] != "2" { problems.append("\(named[0]): \(f[5]) confirmed proofs") }
            }
            if byHash.count != sameContent.count { problems.append("\(byHash.count) items for \(sameContent.count) distinct files") }
            let quarantined = sql("SELECT path || ': ' || reason FROM quarantine WHERE NOT resolved")
            if !quarantined.isEmpty { problems.append("quarantined: \(quarantined.prefix(500))") }
            let counters = NotarizationCLITests().counters(sandbox)
            let submissions = (counters["submissions_by_hash"] as? [String: Int]) ?? [:]
            for (hash, named) in sameContent where submissions[hash] != 1 {
                duplicates.append("\(named[0]): \(submissions[hash] ?? 0) QED submissions")
            }
            let uploads = ProviderCLITests().uploads(sandbox)
            for (path, count) in uploads where count != 1 { duplicates.append("\(path) uploaded \(count) times") }
            let keys = Set(try s3.boto3("""
                for page in s3.get_paginator("list_objects_v2").paginate(Bucket=args[0], Prefix="sha256"):
                    for o in page.get("Contents", []): print(o["Key"].rsplit("/", 1)[-1])
                """, [bucket]).split(separator: "\n").map(String.init))
            for (hash, named) in sameContent where !keys.contains(hash) { lost.append("\(named[0]): not in the bucket") }
            let cli = CLI(home: nodes[nodeCount - 1].home, environment: secretsEnv)
            let fsck = cli.run(["--config", nodes[nodeCount - 1].config, "fsck"], timeout: 300)
            if fsck.status != 0 { problems.append("fsck: \(fsck.stdout.suffix(500)) \(fsck.stderr.suffix(500))") }
            let custody = cli.run(["--config", nodes[nodeCount - 1].config, "log", "verify"], timeout: 120)
            if custody.status != 0 { problems.append("log verify: \(custody.stdout.suffix(500)) \(custody.stderr.suffix(500))") }
            let actors = sql("SELECT split_part(actor, ':', 2) || ' ' || kind || ' ' || count(*) FROM custody_event GROUP BY actor, kind ORDER BY 1")

            SoakCLITests.report(.init(scenario: "crash loop, \(nodeCount) nodes on PostgreSQL and S3", files: files, kills: killLog.count,
                                      faults: "-", lost: lost.count, duplicates: duplicates.count, early: 0,
                                      seconds: Date().timeIntervalSince(started)))
            print("multi-node crash loop (\(nodeCount) nodes): \(killLog.count) kills\n" + killLog.joined(separator: "\n") + "\nevents by node and kind:\n" + actors)
            #expect(killLog.count == kills, "only \(killLog.count) of \(kills) kills happened")
            #expect(lost.isEmpty, "lost: \(lost.prefix(10)); seed \(seed)")
            #expect(duplicates.isEmpty, "duplicates: \(duplicates.prefix(10)); seed \(seed)")
            #expect(problems.isEmpty, "\(problems.prefix(10)); seed \(seed)\n\(killLog.joined(separator: "\n"))")
            for node in nodes where node.process?.isRunning == true {
                node.process?.signal(SIGTERM)
                #expect(node.process?.wait(seconds: 30)?.status == 0, "\(node.name): \(node.text.suffix(1500))")
            }
        }
    }
}
