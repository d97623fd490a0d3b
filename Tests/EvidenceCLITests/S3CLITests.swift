import EvidenceCore
import EvidenceProcess
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// `[store] kind = "s3"` end to end: `evidence run` as real processes, a real S3 server (moto)
/// checked by boto3, the sandbox's QED and TSA, a local archive, and for several nodes a real
/// PostgreSQL catalog.
@Suite("S3 store: evidence run against a real S3 server", .ownThread)
struct S3CLITests {
    static func storeTable(_ s3: S3Server, bucket: String, lock: Bool) -> String {
        """
        [store]
        kind = "s3"
        endpoint = "\(s3.endpoint)"
        bucket = "\(bucket)"
        region = "\(s3.region)"
        access_key_env = "AWS_ACCESS_KEY_ID"
        secret_key_env = "AWS_SECRET_ACCESS_KEY"
        """ + (lock ? "\nobject_lock = \"governance\"\nretain = \"2d\"\n" : "\n")
    }

    static func notaries(_ base: String, ca: String) -> String {
        """
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
        """
    }

    static func sha256(_ data: Data, in dir: String) -> String {
        let f = dir + "/hash-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: f, contents: data)
        defer { unlink(f) }
        return String(CLI.exec(["sha256sum", f]).stdout.prefix(64))
    }

    static func key(_ hex: String) -> String { "sha256/\(hex.prefix(2))/\(hex.dropFirst(2).prefix(2))/\(hex)" }

    func runOnS3() async throws {
        let s3 = try #require(S3Server.shared, "moto_server: \(S3Server.unavailable)")
        let bucket = try s3.makeBucket(objectLock: true)
        let vault = Scratch()
        let h = RunHarness(settle: "0s", extra: "notary = [\"qed\", \"tsa\"]\narchive = \"vault\"\nremote_path = \"ev/{rule}/{sha8}-{name}\"\n")
        let sandbox = try await SandboxProcess.start(executable: NotarizationCLITests.sandboxBinary,
                                                     stateDirectory: h.scratch.path + "/sandbox", arguments: ["--pending-seconds", "1"])
        defer { Task { await sandbox.stop() } }
        let base = sandbox.baseURL.absoluteString
        let ca = h.scratch.path + "/tsa-ca.pem"
        #expect(CLI.exec(["curl", "-sf", "-o", ca, "\(base)/tsa/ca.pem"]).status == 0)
        h.configPath = h.scratch.path + "/evidence.toml"
        try (Self.storeTable(s3, bucket: bucket, lock: true) + Self.notaries(base, ca: ca)
             + "\n[archives.vault]\nkind = \"local\"\npath = \"\(vault.path)\"\n").write(toFile: h.configPath!, atomically: true, encoding: .utf8)
        h.environment = s3.environment(["EVIDENCE_TEST_QED_KEY": "sandbox-key", "EVIDENCE_S3_PART_SIZE": "\(5 << 20)"])
        try h.start(timeout: 60)
        let files = [("small.bin", randomBytes(40_000)), ("clip.mov", randomBytes(200_000)), ("big.bin", randomBytes(6 << 20 + 3))]
        for (name, data) in files { h.write(name, data) }
        let cli = CLI(home: h.home, environment: h.environment)
        func state(_ item: String) -> String? {
            ((cli.run(["--config", h.configPath!, "show", item, "--json"]).json as? [String: Any])?["item"] as? [String: Any])?["state"] as? String
        }
        let done = await waitUntil(timeout: 120, every: 0.5) { (1...3).allSatisfy { state("\($0)") == "done" } }
        #expect(done, "not every item done: \((1...3).map { state("\($0)") ?? "-" }) \(h.log.suffix(3000))")
        #expect(h.stop() == 0)
        #expect(!h.log.contains(s3.secretKey), "the secret key is never logged")
        #expect(!FileManager.default.fileExists(atPath: h.home + "/objects"), "no local store is made beside the bucket")

        for (name, data) in files {
            let hex = Self.sha256(data, in: h.scratch.path)
            let archived = vault.path + "/ev/cam/\(hex.prefix(8))-\(name)"
            #expect(FileManager.default.contents(atPath: archived) == data, "\(archived)")
            let head = try s3.boto3("""
                h = s3.head_object(Bucket=args[0], Key=args[1], ChecksumMode='ENABLED')
                print(h['ContentLength'], h.get('ObjectLockMode'), 'multipart' if '-' in h['ETag'] else h.get('ChecksumSHA256'))
                """, [bucket, Self.key(hex)])
            let checksum = Data(Hex.decode(hex)!).base64EncodedString()
            #expect(head.trimmingCharacters(in: .whitespacesAndNewlines)
                    == "\(data.count) GOVERNANCE \(data.count > 5 << 20 ? "multipart" : checksum)", "\(name)")
        }
        let run = { (args: [String]) in cli.run(["--config", h.configPath!] + args, timeout: 120) }
        let fsck = run(["fsck"])
        #expect(fsck.status == 0, "\(fsck.stdout) \(fsck.stderr)")
        for item in 1...3 {
            let verify = run(["verify", "\(item)"])
            #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        }
        #expect(run(["log", "verify"]).status == 0)

        // Legal hold from the CLI, seen by boto3.
        let hold = run(["hold", "1", "--on", "--json"])
        #expect(hold.status == 0 && (hold.json as? [String: Any])?["legalHold"] as? Bool == true, "\(hold.stdout) \(hold.stderr)")
        let small = Self.sha256(files[0].1, in: h.scratch.path)
        let itemOne = ((run(["show", "1", "--json"]).json as? [String: Any])?["item"] as? [String: Any])?["sha256"] as? String ?? ""
        let status = try s3.boto3("print(s3.get_object_legal_hold(Bucket=args[0], Key=args[1])['LegalHold']['Status'])",
                                  [bucket, Self.key(itemOne)])
        #expect(status.hasPrefix("ON"))
        #expect(run(["hold", "1", "--on"]).stdout.contains("(unchanged)"))
        #expect(run(["hold", "1", "--off"]).status == 0)
        // Each change, and only a change, is in the item's custody log.
        let holds = (((run(["show", "1", "--json"]).json as? [String: Any])?["custody"] as? [[String: Any]]) ?? [])
            .filter { $0["kind"] as? String == "legal-hold" }.map { ($0["details"] as? String) ?? "" }
        #expect(holds.count == 2 && holds[0].contains("\"on\"") && holds[1].contains("\"off\""), "\(holds)")

        // An attacker with write access to the bucket replaces an object: refused by name.
        try s3.boto3("s3.put_object(Bucket=args[0], Key=args[1], Body=b'forged')", [bucket, Self.key(small)])
        let smallItem = (1...3).first { ((run(["show", "\($0)", "--json"]).json as? [String: Any])?["item"] as? [String: Any])?["sha256"] as? String == small }
        let refused = run(["verify", "\(smallItem ?? 0)"])
        #expect(refused.status != 0 && (refused.stdout + refused.stderr).contains("s3://\(bucket)/\(Self.key(small))"),
                "\(refused.stdout) \(refused.stderr)")
        let corrupt = run(["fsck"])
        #expect(corrupt.status != 0 && (corrupt.stdout + corrupt.stderr).contains(Self.key(small)), "\(corrupt.stdout) \(corrupt.stderr)")
    }

    @Test("evidence hold refuses clearly on a local store and on a bucket without Object Lock")
    func holdNeedsObjectLock() throws {
        let s3 = try #require(S3Server.shared, "moto_server: \(S3Server.unavailable)")
        let scratch = Scratch()
        let file = scratch.path + "/a.bin"
        _ = FileManager.default.createFile(atPath: file, contents: randomBytes(1_000))
        let local = CLI(home: scratch.home)
        #expect(local.run(["ingest", file]).status == 0)
        let onLocal = local.run(["hold", "1", "--on"])
        #expect(onLocal.status == 2 && onLocal.stderr.contains("store is local"), "\(onLocal.stderr)")

        let config = scratch.file("evidence.toml", Self.storeTable(s3, bucket: try s3.makeBucket(objectLock: false), lock: false))
        let remote = CLI(home: scratch.path + "/home2", environment: s3.environment())
        #expect(remote.run(["--config", config, "ingest", file]).status == 0)
        let noLock = remote.run(["--config", config, "hold", "1", "--on"])
        #expect(noLock.status == 2 && noLock.stderr.contains("has no Object Lock"), "\(noLock.stderr)")
    }

    @Test("doctor checks the bucket: reachable, and with object_lock configured a bucket that has Object Lock; one without fails with the fix")
    func doctorChecksTheBucket() throws {
        let s3 = try #require(S3Server.shared, "moto_server: \(S3Server.unavailable)")
        let scratch = Scratch()
        let file = scratch.path + "/a.bin"
        _ = FileManager.default.createFile(atPath: file, contents: randomBytes(1_000))
        func doctor(bucket: String, lock: Bool) -> [String: Any] {
            let config = scratch.file("evidence-\(bucket).toml", Self.storeTable(s3, bucket: bucket, lock: lock))
            let cli = CLI(home: scratch.path + "/home-\(bucket)", environment: s3.environment())
            _ = cli.run(["--config", config, "ingest", file])
            let r = cli.run(["--config", config, "doctor", "--offline", "--json"])
            let checks = (r.json as? [[String: Any]]) ?? []
            return checks.first { $0["check"] as? String == "bucket" } ?? ["stdout": r.stdout, "stderr": r.stderr]
        }
        let good = doctor(bucket: try s3.makeBucket(objectLock: true), lock: true)
        #expect(good["status"] as? String == "ok" && (good["detail"] as? String)?.contains("Object Lock on") == true, "\(good)")
        let bad = doctor(bucket: try s3.makeBucket(objectLock: false), lock: true)
        #expect(bad["status"] as? String == "fail" && (bad["detail"] as? String)?.contains("no Object Lock") == true, "\(bad)")
    }

    func twoNodesOwnHomesOneBucket() async throws {
        let s3 = try #require(S3Server.shared, "moto_server: \(S3Server.unavailable)")
        let pg = try #require(PostgresServer.shared, "PostgreSQL: \(PostgresServer.unavailable)")
        let database = try pg.makeDatabase()
        let bucket = try s3.makeBucket(objectLock: true)
        let scratch = Scratch()
        let sandbox = try await SandboxProcess.start(executable: NotarizationCLITests.sandboxBinary,
                                                     stateDirectory: scratch.path + "/sandbox",
                                                     // QED answers after 300 ms: station-1 holds leases most of the time
                                                     // (see MultiNodeCLITests).
                                                     arguments: ["--pending-seconds", "1", "--latency", "300ms"])
        defer { Task { await sandbox.stop() } }
        let base = sandbox.baseURL.absoluteString
        let ca = scratch.path + "/tsa-ca.pem"
        #expect(CLI.exec(["curl", "-sf", "-o", ca, "\(base)/tsa/ca.pem"]).status == 0)
        let rules = scratch.path + "/rules"
        let names = ["station-1", "station-2"]
        let drops = Dictionary(uniqueKeysWithValues: names.map { ($0, scratch.path + "/drop-" + $0) })
        let homes = Dictionary(uniqueKeysWithValues: names.map { ($0, scratch.path + "/home-" + $0) })
        for d in [rules] + drops.values.sorted() { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        for (n, node) in names.enumerated() {
            try "path = \"\(drops[node]!)\"\nsettle = \"0s\"\nnotary = [\"qed\", \"tsa\"]\nnodes = [\"\(node)\"]\n"
                .write(toFile: rules + "/cam\(n + 1).toml", atomically: true, encoding: .utf8)
        }
        func config(_ node: String) throws -> String {
            let path = scratch.path + "/\(node).toml"
            try ("node = \"\(node)\"\n[workers]\njobs = 2\nlease = \"10s\"\n[catalog]\nurl = \"postgres://\(pg.user)@127.0.0.1:\(pg.port)/\(database)\"\n"
                 + "password_env = \"EVIDENCE_TEST_DB_PASSWORD\"\n" + Self.storeTable(s3, bucket: bucket, lock: true) + Self.notaries(base, ca: ca))
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let env = s3.environment(["EVIDENCE_TEST_DB_PASSWORD": pg.password, "EVIDENCE_TEST_QED_KEY": "sandbox-key"])
        let nodes = try names.map { MultiNodeCLITests.Node(name: $0, config: try config($0), log: scratch.path + "/\($0).log") }
        for node in nodes {
            node.process = try ChildProcess(CLI.binary, ["--config", node.config, "--home", homes[node.name]!, "run", "--rules", rules, "--log-format", "json"],
                                            environment: ChildProcess.environment(env, removing: ["EVIDENCE_HOME", "EVIDENCE_CONFIG"]),
                                            directory: scratch.path, stdout: .file(node.log), stderr: .stdout)
        }
        for node in nodes {
            #expect(await waitUntil(timeout: 60) { node.text.contains("initial scan") }, "\(node.name) did not start: \(node.text)")
        }
        let perNode = 10
        var hashes: [String] = []
        for (n, node) in names.enumerated() {
            for i in 0..<perNode {
                let data = randomBytes(30_000 + n * 1_000 + i)
                let path = drops[node]! + "/clip-\(i).bin"
                _ = FileManager.default.createFile(atPath: path, contents: data)
                hashes.append(Self.sha256(data, in: scratch.path))
            }
        }
        func sql(_ q: String) -> String { ((try? pg.psql(q, database: database)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
        // Killed holding a lease once its own folder is taken in (station-2 goes on taking in its own).
        let (holding, dropped) = await MultiNodeCLITests.awaitHoldingLease(node: "station-1", folder: drops["station-1"]!,
                                                                            files: perNode, batch: perNode, sql: sql)
        for data in dropped { hashes.append(Self.sha256(data, in: scratch.path)) }
        #expect(holding, """
            station-1 never held a lease with every file taken in: items \(sql("SELECT count(*) FROM item")), \
            jobs \(sql("SELECT kind, state, split_part(lease_owner, ':', 1), count(*) FROM job GROUP BY 1, 2, 3")); \
            station-1: \(nodes[0].text.suffix(1500))
            """)
        nodes[0].process?.signal(SIGKILL)
        _ = nodes[0].process?.wait()

        let done = await waitUntil(timeout: 150, every: 0.5) { sql("SELECT count(*) FROM item WHERE state = 'done'") == "\(hashes.count)" }
        #expect(done, "not every item done: \(sql("SELECT state, count(*) FROM item GROUP BY 1")); jobs: \(sql("SELECT kind, state, lease_owner FROM job WHERE state <> 'done'"))")
        #expect(sql("SELECT count(*) FROM item") == "\(hashes.count)", "one item per file")
        let counters = ((try? JSONSerialization.jsonObject(with: Data(CLI.exec(["curl", "-sf", "\(base)/_sandbox/counters"]).stdout.utf8)))
                        as? [String: Any]) ?? [:]
        let byHash = counters["submissions_by_hash"] as? [String: Any] ?? [:]
        for hash in hashes { #expect(byHash[hash] as? Int == 1, "\(hash) was submitted to QED \(byHash[hash] ?? 0) times") }
        // Every object in the one bucket, none in either home.
        let listed = try s3.boto3("""
            keys = [o['Key'] for p in s3.get_paginator('list_objects_v2').paginate(Bucket=args[0], Prefix='sha256/') for o in p.get('Contents', [])]
            print('\\n'.join(keys))
            """, [bucket])
        for hash in hashes { #expect(listed.contains(Self.key(hash)), "\(hash) not in the bucket") }
        for node in names { #expect(!FileManager.default.fileExists(atPath: homes[node]! + "/objects")) }

        let cli = CLI(home: homes["station-2"]!, environment: env)
        let fsck = cli.run(["--config", nodes[1].config, "fsck"], timeout: 180)
        #expect(fsck.status == 0, "\(fsck.stdout) \(fsck.stderr)")
        let verify = cli.run(["--config", nodes[1].config, "log", "verify"])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        // A node on another bucket is refused by the shared catalog.
        let other = scratch.path + "/other.toml"
        try ("[catalog]\nurl = \"postgres://\(pg.user)@127.0.0.1:\(pg.port)/\(database)\"\npassword_env = \"EVIDENCE_TEST_DB_PASSWORD\"\n"
             + Self.storeTable(s3, bucket: try s3.makeBucket(objectLock: false), lock: false)).write(toFile: other, atomically: true, encoding: .utf8)
        let foreign = CLI(home: scratch.path + "/home-3", environment: env).run(["--config", other, "status"])
        #expect(foreign.status != 0 && foreign.stderr.contains("is not the one"), "\(foreign.stderr)")
        nodes[1].process?.signal(SIGTERM)
        #expect(nodes[1].process?.wait(seconds: 30)?.status == 0, "\(nodes[1].text)")
    }
}

/// The long end-to-end runs of `S3CLITests`, apart so that `make test` stays short: `make test-long`
/// runs them (and CI runs both). The bodies are `S3CLITests`'s own, unchanged.
@Suite("S3 store, long runs: evidence run against a real S3 server, and two nodes on one bucket", .serialized, .ownThread)
struct S3LongTests {
    @Test("evidence run on an S3 store: items notarized, certified and archived; objects in the bucket with our checksum and the retention; fsck, verify and log verify clean; an overwritten key is refused by verify and fsck naming it")
    func runOnS3() async throws {
        try await S3CLITests().runOnS3()
    }

    @Test("two nodes with their own homes on one PostgreSQL catalog and one S3 bucket; one is killed with SIGKILL and the other finishes: one item per file, one QED report per hash, fsck and log verify clean")
    func twoNodesOwnHomesOneBucket() async throws {
        try await S3CLITests().twoNodesOwnHomesOneBucket()
    }
}
