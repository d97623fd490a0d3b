@testable import EvidenceCatalog
import EvidenceCore
import EvidenceTesting
import Foundation
import GRDB
import Synchronization
import Testing

/// A worker done with a job takes its next one in the completion's transaction
/// (`completeJob(_:owner:transition:thenClaim:)`): one transaction where there were two.
@Suite("Job queue: a completion claims the worker's next job")
struct CompleteAndClaimTests {
    func verifyJobs(_ c: any Catalog, _ itemID: Int64, _ keys: [String]) throws -> [QueuedJob] {
        try keys.map { try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: itemID, dedupeKey: $0) }
    }

    @Test("the next due job is leased to the same owner in the completion's one transaction, its attempt counted; a lost lease neither completes nor claims", arguments: Backend.allCases)
    func claimsInTheCompletionsTransaction(_ backend: Backend) throws {
        let c = try backend.make()
        let item = try c.recordIngest(record("a", path: "/drop/a.mp4")).item
        let (first, second) = try { () throws -> (QueuedJob, QueuedJob) in
            let jobs = try verifyJobs(c, item.id, ["v1", "v2"])
            return (jobs[0], jobs[1])
        }()
        let now = Date()
        let claimed = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now))
        #expect(claimed.id == first.id)
        let transactions = Mutex(0)
        (c as? SQLiteCatalog)?.observeCommits { _ in transactions.withLock { $0 += 1 } }
        let next = NextClaim(kinds: [.verify], lease: 60, now: now)

        // Another owner's completion is refused whole: the job is not done, nothing is claimed.
        #expect(throws: CatalogError.self) { _ = try c.completeJob(first.id, owner: "B", transition: nil, thenClaim: next) }
        #expect(try c.jobs(itemID: item.id).first { $0.id == second.id }?.state == .queued)

        transactions.withLock { $0 = 0 }
        let taken = try #require(try c.completeJob(first.id, owner: "A", transition: JobTransition(state: .done, event: .verified),
                                                   thenClaim: next))
        #expect(taken.id == second.id && taken.state == .running && taken.leaseOwner == "A" && taken.attempts == 1)
        if backend == .sqlite { #expect(transactions.withLock { $0 } == 1, "the completion and the claim are one transaction") }
        let stored = Dictionary(uniqueKeysWithValues: try c.jobs(itemID: item.id).map { ($0.id, $0) })
        #expect(stored[first.id]?.state == .done)
        #expect(stored[second.id]?.state == .running && stored[second.id]?.leaseOwner == "A" && stored[second.id]?.attempts == 1)
        #expect(try c.item(id: item.id)?.state == .done)
        #expect(try c.events(itemID: item.id).map(\.kind) == ["ingested", "verified"])
        // The claimed job is the owner's: another cannot take it, and it completes as any other.
        #expect(try c.claimJob(kinds: [.verify], owner: "B", lease: 60, now: now) == nil)
        #expect(try c.completeJob(second.id, owner: "A", transition: nil, thenClaim: next) == nil, "nothing left to claim")
        #expect(try c.jobCounts() == ["done": 2])
        #expect(try c.verifyChain().ok)
    }

    @Test("a claim that fails inside a completion leaves the completion committed and claims nothing", arguments: Backend.allCases)
    func aFailedClaimKeepsTheCompletion(_ backend: Backend) throws {
        // Claims refused by a trigger, installed after the first job is claimed: the completion's
        // claim fails inside its transaction (SQLite's savepoint, PostgreSQL's aborted statement).
        let c: any Catalog
        let refuseClaims: () throws -> Void
        let allowClaims: () throws -> Void
        switch backend {
        case .sqlite:
            let s = try SQLiteCatalog.inMemory()
            c = s
            refuseClaims = {
                try s.db.write { db in
                    try db.execute(sql: """
                        CREATE TRIGGER no_claims BEFORE UPDATE OF lease_owner ON job WHEN NEW.state = 'running'
                        BEGIN SELECT RAISE(ABORT, 'claims refused'); END
                        """)
                }
            }
            allowClaims = { try s.db.write { db in try db.execute(sql: "DROP TRIGGER no_claims") } }
        case .postgres:
            let (server, database, catalogs) = try Backend.nodes(1)
            c = catalogs[0]
            refuseClaims = {
                _ = try server.psql("""
                    CREATE FUNCTION no_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claims refused'; END $$;
                    CREATE TRIGGER no_claims BEFORE UPDATE ON job FOR EACH ROW WHEN (NEW.state = 'running') EXECUTE FUNCTION no_claims();
                    """, database: database)
            }
            allowClaims = { _ = try server.psql("DROP TRIGGER no_claims ON job", database: database) }
        }
        let item = try c.recordIngest(record("a", path: "/drop/a.mp4")).item
        let jobs = try verifyJobs(c, item.id, ["v1", "v2"])
        let now = Date()
        #expect(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now)?.id == jobs[0].id)
        try refuseClaims()
        #expect(throws: CatalogError.self, "the trigger refuses a claim of its own") {
            _ = try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now)
        }

        let taken = try c.completeJob(jobs[0].id, owner: "A", transition: JobTransition(state: .done, event: .verified),
                                      thenClaim: NextClaim(kinds: [.verify], lease: 60, now: now))
        #expect(taken == nil)
        let stored = Dictionary(uniqueKeysWithValues: try c.jobs(itemID: item.id).map { ($0.id, $0) })
        #expect(stored[jobs[0].id]?.state == .done, "the completion committed")
        #expect(stored[jobs[1].id]?.state == .queued && stored[jobs[1].id]?.attempts == 0 && stored[jobs[1].id]?.leaseOwner == nil)
        #expect(try c.item(id: item.id)?.state == .done)
        #expect(try c.events(itemID: item.id).map(\.kind) == ["ingested", "verified"])

        try allowClaims()
        #expect(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now)?.id == jobs[1].id)
        #expect(try c.verifyChain().ok)
    }
}
