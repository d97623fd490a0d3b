import EvidenceProcess
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Several `evidence run` nodes on one PostgreSQL catalog and one home on a shared filesystem
/// (here: the same folder), each watching its own drop folder, every node running any job.
/// Real processes, a real PostgreSQL server, the sandbox's QED and TSA.
@Suite("Several nodes on one PostgreSQL catalog, real processes", .ownThread)
struct MultiNodeCLITests {
    final class Node {
        let name: String
        let config: String
        let log: String
        var process: ChildProcess?
        init(name: String, config: String, log: String) { self.name = name; self.config = config; self.log = log }
        var text: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        deinit { if let p = process, p.isRunning { p.signal(SIGKILL); p.wait() } }
    }

    /// One query: `t` once every file of `folder` is an item's source and `node` runs a job.
    static func holdingSQL(node: String, folder: String, files: Int) -> String {
        """
        SELECT (SELECT count(DISTINCT path) FROM source WHERE path LIKE '\(folder)/%') = \(files)
           AND EXISTS (SELECT 1 FROM job WHERE state = 'running' AND lease_owner LIKE 'run@\(node):%')
        """
    }

    /// Waits until `node` holds a job lease with every file of `folder` taken in: the moment the
    /// multi-node tests kill it. One query per look: waiting for every file of both folders first
    /// missed the moment when the last one came in after the node had finished all its jobs. A look
    /// is a psql process, and on a loaded machine a node once finished all its jobs between two
    /// looks (fresh-clone run 6 of loop 24), so a round that misses drops `batch` new files into
    /// the folder, which gives the node new jobs: three rounds in all. Returns whether a look saw
    /// the lease, and the contents of every file it dropped (the totals count them).
    static func awaitHoldingLease(node: String, folder: String, files: Int, batch: Int,
                                  sql: (String) -> String) async -> (holding: Bool, dropped: [Data]) {
        var dropped: [Data] = []
        for round in 1...3 {
            let expected = files + dropped.count
            if await waitUntil(timeout: round == 1 ? 60 : 30, every: 0.05, {
                sql(holdingSQL(node: node, folder: folder, files: expected)) == "t"
            }) { return (true, dropped) }
            guard round < 3 else { break }
            for i in 0..<batch {
                let data = randomBytes(40_000 + round * 1_000 + i)
                _ = FileManager.default.createFile(atPath: folder + "/more-\(round)-\(i).bin", contents: data)
                dropped.append(data)
            }
        }
        return (false, dropped)
    }

    func twoNodesOneDies() async throws {
        guard let pg = PostgresServer.shared else {
            throw PostgresServer.Failure(description: "PostgreSQL test server unavailable: \(PostgresServer.unavailable)")
        }
        let database = try pg.makeDatabase()
        let scratch = Scratch()
        let sandbox = try await SandboxProcess.start(executable: NotarizationCLITests.sandboxBinary,
                                                     stateDirectory: scratch.path + "/sandbox",
                                                     // Every QED request takes 300 ms, so a node holds job leases most of
                                                     // the time: idle workers woken by NOTIFY finish the work fast enough
                                                     // that a sampled "station-1 holds a lease" could otherwise be missed.
                                                     arguments: ["--pending-seconds", "1", "--latency", "300ms"])
        defer { Task { await sandbox.stop() } }
        let base = sandbox.baseURL.absoluteString
        let ca = scratch.path + "/tsa-ca.pem"
        #expect(CLI.exec(["curl", "-sf", "-o", ca, "\(base)/tsa/ca.pem"]).status == 0)

        let home = scratch.path + "/shared-home", rules = scratch.path + "/rules"
        let drops = ["station-1": scratch.path + "/drop1", "station-2": scratch.path + "/drop2"]
        for d in [home, rules] + drops.values.sorted() { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        // Every node loads every rule (any node runs any rule's jobs); each folder is watched by its own node.
        for (n, node) in ["station-1", "station-2"].enumerated() {
            try """
                path = "\(drops[node]!)"
                settle = "0s"
                notary = ["qed", "tsa"]
                nodes = ["\(node)"]
                """.write(toFile: rules + "/cam\(n + 1).toml", atomically: true, encoding: .utf8)
        }
        func config(_ node: String) throws -> String {
            let path = scratch.path + "/\(node).toml"
            try """
                node = "\(node)"
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
                """.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let env = ChildProcess.environment(["EVIDENCE_TEST_DB_PASSWORD": pg.password, "EVIDENCE_TEST_QED_KEY": "sandbox-key"],
                                           removing: ["EVIDENCE_HOME", "EVIDENCE_CONFIG"])
        let nodes = try ["station-1", "station-2"].map { Node(name: $0, config: try config($0), log: scratch.path + "/\($0).log") }
        func start(_ node: Node) throws {
            node.process = try ChildProcess(CLI.binary, ["--config", node.config, "--home", home, "run", "--rules", rules, "--log-format", "json"],
                                            environment: env, directory: scratch.path, stdout: .file(node.log), stderr: .stdout)
        }
        for node in nodes { try start(node) }
        for node in nodes {
            #expect(await waitUntil(timeout: 60) { node.text.contains("initial scan") }, "\(node.name) did not start: \(node.text)")
        }

        let perNode = 12
        var hashes: [String] = []
        for (n, node) in ["station-1", "station-2"].enumerated() {
            for i in 0..<perNode {
                let data = randomBytes(30_000 + n * 1_000 + i)
                let path = drops[node]! + "/clip-\(i).bin"
                _ = FileManager.default.createFile(atPath: path, contents: data)
                hashes.append(String(CLI.exec(["sha256sum", path]).stdout.prefix(64)))
            }
        }
        func sql(_ q: String) -> String { ((try? pg.psql(q, database: database)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
        // Kill station-1 while it holds job leases, once its own folder is taken in (station-2
        // goes on taking in its own).
        let (holding, dropped) = await Self.awaitHoldingLease(node: "station-1", folder: drops["station-1"]!,
                                                               files: perNode, batch: perNode, sql: sql)
        for data in dropped { hashes.append(S3CLITests.sha256(data, in: scratch.path)) }
        #expect(holding, """
            station-1 never held a lease with every file taken in: items \(sql("SELECT count(*) FROM item")), \
            jobs \(sql("SELECT kind, state, split_part(lease_owner, ':', 1), count(*) FROM job GROUP BY 1, 2, 3")); \
            station-1: \(nodes[0].text.suffix(1500)); station-2: \(nodes[1].text.suffix(1500))
            """)
        nodes[0].process?.signal(SIGKILL)
        _ = nodes[0].process?.wait()
        let orphaned = Int(sql("SELECT count(*) FROM job WHERE state = 'running' AND lease_owner LIKE 'run@station-1:%'")) ?? 0
        print("multi-node: station-1 killed holding \(orphaned) lease(s)")

        // station-2 alone: every item done once station-1's leases run out (10 s).
        let done = await waitUntil(timeout: 120, every: 0.5) { sql("SELECT count(*) FROM item WHERE state = 'done'") == "\(hashes.count)" }
        #expect(done, "not every item done: \(sql("SELECT state, count(*) FROM item GROUP BY 1")); jobs: \(sql("SELECT kind, state, lease_owner FROM job WHERE state <> 'done'"))")
        #expect(orphaned == 0 || sql("SELECT count(*) FROM job WHERE lease_owner LIKE 'run@station-1:%'") == "0",
                "station-1's leases were never taken over")
        let counters = ((try? JSONSerialization.jsonObject(with: Data(CLI.exec(["curl", "-sf", "\(base)/_sandbox/counters"]).stdout.utf8)))
                        as? [String: Any]) ?? [:]
        let byHash = counters["submissions_by_hash"] as? [String: Any] ?? [:]
        for hash in hashes { #expect(byHash[hash] as? Int == 1, "\(hash) was submitted to QED \(byHash[hash] ?? 0) times") }
        // Both nodes' actors in the one chain, and the chain verifies from either node's config.
        let actors = sql("SELECT DISTINCT split_part(actor, ':', 2) FROM custody_event WHERE kind = 'ingested' ORDER BY 1")
        #expect(actors == "station-1\nstation-2", "\(actors)")
        let cli = CLI(home: home, environment: ["EVIDENCE_TEST_DB_PASSWORD": pg.password, "EVIDENCE_TEST_QED_KEY": "sandbox-key"])
        let verify = cli.run(["--config", nodes[1].config, "log", "verify"])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        let status = cli.run(["--config", nodes[1].config, "status", "--json"])
        #expect((status.json as? [String: Any])?["items"] as? Int == hashes.count, "\(status.stdout) \(status.stderr)")
        let perNodeRows = ((status.json as? [String: Any])?["nodes"] as? [[String: Any]]) ?? []
        #expect(perNodeRows.map { "\($0["node"] ?? "")=\($0["takenIn"] ?? "")" } == ["station-1=\(perNode + dropped.count)", "station-2=\(perNode)"],
                "\(perNodeRows)")
        nodes[1].process?.signal(SIGTERM)
        #expect(nodes[1].process?.wait(seconds: 30)?.status == 0, "\(nodes[1].text)")
    }

    @Test("catalog migrate copies a single host's SQLite catalog into PostgreSQL, chain and all; the home then runs on it; a second copy is refused")
    func migrateSQLiteToPostgres() throws {
        guard let pg = PostgresServer.shared else {
            throw PostgresServer.Failure(description: "PostgreSQL test server unavailable: \(PostgresServer.unavailable)")
        }
        let database = try pg.makeDatabase()
        let scratch = Scratch()
        let cli = CLI(home: scratch.home, environment: ["EVIDENCE_TEST_DB_PASSWORD": pg.password])
        for i in 0..<5 {
            let f = scratch.path + "/in-\(i).bin"
            _ = FileManager.default.createFile(atPath: f, contents: randomBytes(2_000 + i))
            #expect(cli.run(["ingest", f]).status == 0)
        }
        let before = cli.run(["log", "verify", "--json"]).json as? [String: Any]
        let url = "postgres://\(pg.user)@127.0.0.1:\(pg.port)/\(database)"
        let inline = cli.run(["catalog", "migrate", "--to", "postgres://\(pg.user):\(pg.password)@127.0.0.1:\(pg.port)/\(database)"])
        #expect(inline.status == 2 && inline.stderr.contains("carries a password") && !inline.stderr.contains(pg.password), "\(inline.stderr)")
        let copy = cli.run(["catalog", "migrate", "--to", url, "--password-env", "EVIDENCE_TEST_DB_PASSWORD", "--json"])
        #expect(copy.status == 0, "\(copy.stdout) \(copy.stderr)")
        let copied = (copy.json as? [String: Any])?["copied"] as? [String: Any]
        #expect(copied?["items"] as? Int == 5 && copied?["events"] as? Int == before?["events"] as? Int, "\(copy.stdout)")
        #expect(copied?["headHash"] as? String == before?["headHash"] as? String)
        #expect(!copy.stderr.contains("NOTICE"), "the server's notices reach the operator: \(copy.stderr)")
        let again = cli.run(["catalog", "migrate", "--to", url, "--password-env", "EVIDENCE_TEST_DB_PASSWORD"])
        #expect(again.status == 1 && again.stderr.contains("empty database"), "\(again.stderr) \(again.stdout)")

        // The home on PostgreSQL: the same items, a chain that verifies, and new work continues it.
        let config = scratch.path + "/evidence.toml"
        try "[catalog]\nurl = \"\(url)\"\npassword_env = \"EVIDENCE_TEST_DB_PASSWORD\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let status = cli.run(["--config", config, "status", "--json"]).json as? [String: Any]
        #expect(status?["items"] as? Int == 5)
        let extra = scratch.path + "/after.bin"
        _ = FileManager.default.createFile(atPath: extra, contents: randomBytes(3_333))
        #expect(cli.run(["--config", config, "ingest", extra]).status == 0)
        let verify = cli.run(["--config", config, "log", "verify", "--json"])
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect((verify.json as? [String: Any])?["events"] as? Int == (before?["events"] as? Int ?? 0) + 1)
        #expect((try? pg.psql("SELECT max(id) FROM item", database: database))?.trimmingCharacters(in: .whitespacesAndNewlines) == "6",
                "new ids continue after the copied ones")

    }
}

/// The long end-to-end runs of `MultiNodeCLITests`, apart so that `make test` stays short: `make test-long`
/// runs them (and CI runs both). The bodies are `MultiNodeCLITests`'s own, unchanged.
@Suite("Several nodes on one PostgreSQL catalog, long runs: a node killed", .serialized, .ownThread)
struct MultiNodeLongTests {
    @Test("two nodes take in their own folders into one catalog; one is killed with SIGKILL and the other finishes every job: nothing lost, nothing notarized twice, one custody chain")
    func twoNodesOneDies() async throws {
        try await MultiNodeCLITests().twoNodesOneDies()
    }
}
