import EvidenceCatalog
import EvidenceCore
import EvidenceTesting
import Foundation
import Synchronization
import Testing

/// What only the PostgreSQL catalog has to show: several nodes (here, several catalogs on one
/// database, each with its own connections) writing one custody chain and claiming from one
/// queue at once, a schema that refuses edits of the log, and secrets kept out of messages.
@Suite("PostgreSQL catalog: several nodes, one chain, one queue")
struct PostgresCatalogTests {
    func nodes(_ n: Int) throws -> [PostgresCatalog] { try Backend.nodes(n).catalogs }

    @Test("three nodes appending at once make one unbroken chain: every event once, in one sequence")
    func threeWritersOneChain() async throws {
        let nodes = try nodes(3)
        let perNode = 150
        let started = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, node) in nodes.enumerated() {
                group.addTask {
                    for i in 0..<perNode {
                        try node.appendEvent(itemID: nil, kind: .retry, details: ["node": "\(n)", "i": "\(i)"])
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = Date().timeIntervalSince(started)
        let events = try nodes[0].allEvents()
        #expect(events.count == 3 * perNode)
        #expect(events.map(\.seq) == Array(1...Int64(3 * perNode)))
        let report = try nodes[1].verifyChain()
        #expect(report.ok, "\(report.problems)")
        // Each node's own events appear in its own order.
        for n in 0..<3 {
            let mine = events.filter { $0.details.contains("\"node\":\"\(n)\"") }
            #expect(mine.count == perNode)
        }
        print("postgres custody appends, 3 writers: \(Int(Double(3 * perNode) / elapsed)) events/s (information, not asserted)")
    }

    @Test("three nodes claiming from one queue at once take every job exactly once (FOR UPDATE SKIP LOCKED)")
    func skipLockedClaims() async throws {
        let nodes = try nodes(3)
        let jobs = 240
        for i in 0..<jobs { _ = try nodes[0].enqueue(JobSpec(.verify(rule: "cam")), itemID: nil, dedupeKey: "v\(i)") }
        final class Claimed: Sendable { let ids = Mutex<[Int64]>([]) }
        let claimed = Claimed()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, node) in nodes.enumerated() {
                group.addTask {
                    while let job = try node.claimJob(kinds: [.verify], owner: "node-\(n)", lease: 60, now: Date()) {
                        claimed.ids.withLock { $0.append(job.id) }
                        try node.completeJob(job.id, owner: "node-\(n)", transition: nil)
                    }
                }
            }
            try await group.waitForAll()
        }
        let ids = claimed.ids.withLock { $0 }
        #expect(ids.count == jobs, "claimed \(ids.count) of \(jobs)")
        #expect(Set(ids).count == ids.count, "a job was claimed twice")
        #expect(try nodes[2].jobCounts() == ["done": jobs])
    }

    @Test("a node's batch of ingests and another node's transitions of the same item never deadlock: one lock order, the custody lock first")
    func batchAndTransitionShareOneLockOrder() async throws {
        let (server, db, catalogs) = try Backend.nodes(2)
        let (a, b) = (catalogs[0], catalogs[1])
        let item = try a.recordIngest(record("a", path: "/drop/first.mp4")).item
        func deadlocks() throws -> Int {
            Int(try server.psql("SELECT deadlocks FROM pg_stat_database WHERE datname = '\(db)'", database: db)
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let before = try deadlocks()
        let rounds = 150
        // The batch locks the custody head, then the item's row (its content again, from a new
        // path); the transition locked the item's row, then the custody head: before both took
        // the custody lock first, PostgreSQL aborted one of the two as a deadlock now and then.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 0..<rounds {
                    let results = try a.recordIngests([record("a", path: "/drop/again-\(i).mp4", inode: UInt64(10 + i)),
                                                       record("b", path: "/drop/other-\(i).mp4", inode: UInt64(1000 + i))])
                    for r in results { _ = try r.get() }
                }
            }
            group.addTask {
                for i in 0..<rounds {
                    try apply(JobTransition(state: i % 2 == 0 ? .submitted : .ingested, event: .retry, reason: "round \(i)",
                                            details: ["round": "\(i)"]), to: item.id, in: b)
                }
            }
            try await group.waitForAll()
        }
        // The catalog runs a transaction PostgreSQL aborted as a deadlock again, silently; but the
        // server logs the ERROR before it answers the client, so with every transaction answered
        // each deadlock is in the log now (pg_stat_database can show it seconds later, or not yet).
        let log = server.log
        #expect(log.contains("database system is ready to accept connections"), "not the server's log: \(log.suffix(500))")
        let deadlocked = log.split(separator: "\n").filter { $0.contains("] \(db) ERROR:  deadlock detected") }
        #expect(deadlocked.isEmpty, "\(deadlocked.count) deadlock(s) between a batch of ingests and a transition")
        let after = try deadlocks()
        #expect(after == before, "\(after - before) deadlock(s) between a batch of ingests and a transition")
        #expect(try a.verifyChain().ok)
        #expect(try a.allEvents().count == 1 + 3 * rounds, "every ingest and every transition is one event")
    }

    @Test("a node that stops renewing its lease loses its job to another node once the lease ends (no pid check across hosts)")
    func deadNodesLeaseIsTaken() throws {
        let nodes = try nodes(2)
        _ = try nodes[0].enqueue(JobSpec(.verify(rule: "cam")), itemID: nil, dedupeKey: "v")
        let now = Date()
        let job = try #require(try nodes[0].claimJob(kinds: [.verify], owner: "archive@station-1:4242/ab", lease: 30, now: now))
        #expect(try nodes[0].renewLease(job.id, owner: "archive@station-1:4242/ab", lease: 30, now: now.addingTimeInterval(20)))
        #expect(try nodes[1].claimJob(kinds: [.verify], owner: "archive@station-2:77/cd", lease: 30, now: now.addingTimeInterval(45)) == nil,
                "taken while its holder was still renewing")
        let taken = try #require(try nodes[1].claimJob(kinds: [.verify], owner: "archive@station-2:77/cd", lease: 30,
                                                       now: now.addingTimeInterval(51)))
        #expect(taken.id == job.id && taken.attempts == 2)
        #expect(try !nodes[0].renewLease(job.id, owner: "archive@station-1:4242/ab", lease: 30, now: now.addingTimeInterval(52)),
                "the silent node still believes it holds the job")
    }

    @Test("the schema refuses updates, deletes and truncation of custody events")
    func appendOnly() throws {
        guard let server = PostgresServer.shared else { throw PostgresServer.Failure(description: PostgresServer.unavailable) }
        let db = try server.makeDatabase()
        let c = try PostgresCatalog(Backend.target(server, database: db), headPath: nil)
        _ = try c.recordIngest(record("a", path: "/a"))
        for sql in ["UPDATE custody_event SET kind = 'x'", "DELETE FROM custody_event", "TRUNCATE custody_event CASCADE"] {
            #expect(throws: PostgresServer.Failure.self, "\(sql) went through") { try server.psql(sql, database: db) }
        }
        #expect(try c.allEvents().count == 1)
    }

    @Test("an event rewritten by someone who dropped the triggers is caught by the chain")
    func rewrittenEventIsCaught() throws {
        guard let server = PostgresServer.shared else { throw PostgresServer.Failure(description: PostgresServer.unavailable) }
        let db = try server.makeDatabase()
        let c = try PostgresCatalog(Backend.target(server, database: db), headPath: nil)
        _ = try c.recordIngest(record("a", path: "/a"))
        _ = try c.recordIngest(record("b", path: "/b", inode: 2))
        try server.psql("""
            DROP TRIGGER custody_event_no_update ON custody_event;
            UPDATE custody_event SET details = replace(details, '/b', '/z') WHERE seq = 2
            """, database: db)
        let report = try c.verifyChain()
        #expect(report.problems.contains { $0.seq == 2 && $0.detail.contains("edited") }, "\(report.problems)")
    }

    @Test("nodes starting together on an empty database migrate it once; a restart finds it current")
    func concurrentMigration() async throws {
        guard let server = PostgresServer.shared else { throw PostgresServer.Failure(description: PostgresServer.unavailable) }
        let db = try server.makeDatabase()
        let target = Backend.target(server, database: db)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { _ = try PostgresCatalog(target, headPath: nil) } }
            try await group.waitForAll()
        }
        let applied = try server.psql("SELECT count(*) FROM evidence_migration", database: db)
        #expect(applied.trimmingCharacters(in: .whitespacesAndNewlines) == "10", "every migration applied once (v1 to v10)")
        let again = try PostgresCatalog(target, headPath: nil)
        #expect(try again.allEvents().isEmpty)
    }

    @Test("a wrong password is refused naming the catalog, never the password; a URL carrying one is refused")
    func secretsStayOut() throws {
        guard let server = PostgresServer.shared else { throw PostgresServer.Failure(description: PostgresServer.unavailable) }
        var target = Backend.target(server, database: "postgres")
        target.password = "not-the-password-91x"
        do {
            _ = try PostgresCatalog(target, headPath: nil)
            Issue.record("connected with a wrong password")
        } catch {
            #expect("\(error)".contains("postgres://evidence@127.0.0.1:\(server.port)/postgres"), "\(error)")
            #expect(!"\(error)".contains("not-the-password-91x"))
        }
        #expect(throws: CatalogError.self) { try PostgresTarget.parse("postgres://evidence:hunter2@db.example/evidence") }
        do { _ = try PostgresTarget.parse("postgres://evidence:hunter2@db.example/evidence") } catch {
            #expect(!"\(error)".contains("hunter2"))
        }
        let parsed = try PostgresTarget.parse("postgres://evidence@db.example:6543/cases")
        #expect(parsed == PostgresTarget(host: "db.example", port: 6543, database: "cases", user: "evidence"))
        #expect(!parsed.isLocal)
        #expect(try PostgresTarget.parse("postgresql://ev@127.0.0.1/cases").isLocal)
        #expect(throws: CatalogError.self) { try PostgresTarget.parse("postgres://db.example/cases") }
        #expect(throws: CatalogError.self) { try PostgresTarget.parse("mysql://ev@db.example/cases") }
    }

    @Test("a catalog off this host without tls_ca_file is refused before any connection is tried")
    func remoteNeedsTLS() throws {
        let target = PostgresTarget(host: "db.example", port: 5432, database: "cases", user: "evidence", password: "pw-secret-55")
        do {
            _ = try PostgresCatalog(target, headPath: nil)
            Issue.record("a remote catalog without a CA to verify it was accepted")
        } catch {
            #expect("\(error)".contains("tls_ca_file"), "\(error)")
            #expect(!"\(error)".contains("pw-secret-55"))
        }
    }
}
