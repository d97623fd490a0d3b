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

    @Test("a claim that fails inside a completion leaves the completion committed, claims nothing and changes no other job", arguments: Backend.allCases)
    func aFailedClaimKeepsTheCompletion(_ backend: Backend) throws {
        // Claims refused by a trigger, installed after the first job is claimed: the completion's
        // claim fails inside its transaction. Before it reaches the job it would take, it has
        // failed an unreadable job (a write of its own): that write is undone with the claim
        // (SQLite's savepoint, PostgreSQL's), the completion is not.
        let c: any Catalog
        let refuseClaims: () throws -> Void
        let allowClaims: () throws -> Void
        let unreadable: (Int64) throws -> Void
        switch backend {
        case .sqlite:
            let s = try SQLiteCatalog.inMemory()
            c = s
            unreadable = { id in
                try s.db.write { db in try db.execute(sql: "UPDATE job SET payload = '{\"rule\":\"cam\"}' WHERE id = ?", arguments: [id]) }
            }
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
            unreadable = { id in _ = try server.psql("UPDATE job SET payload = '{\"rule\":\"cam\"}' WHERE id = \(id)", database: database) }
            refuseClaims = {
                _ = try server.psql("""
                    CREATE FUNCTION no_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claims refused'; END $$;
                    CREATE TRIGGER no_claims BEFORE UPDATE ON job FOR EACH ROW WHEN (NEW.state = 'running') EXECUTE FUNCTION no_claims();
                    """, database: database)
            }
            allowClaims = { _ = try server.psql("DROP TRIGGER no_claims ON job", database: database) }
        }
        let item = try c.recordIngest(record("a", path: "/drop/a.mp4")).item
        let first = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: item.id, dedupeKey: "v1")
        let bad = try c.enqueue(JobSpec(.notarize(rule: "cam", notary: "qed")), itemID: item.id, dedupeKey: "bad")
        let last = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: item.id, dedupeKey: "v2")
        let kinds: [JobKind] = [.verify, .notarize]
        let now = Date().addingTimeInterval(1)
        #expect(try c.claimJob(kinds: kinds, owner: "A", lease: 60, now: now)?.id == first.id)
        try unreadable(bad.id)  // a hand-edited catalog: the notarize job lost its notary
        try refuseClaims()
        #expect(throws: CatalogError.self, "the trigger refuses a claim of its own") {
            _ = try c.claimJob(kinds: kinds, owner: "A", lease: 60, now: now)
        }

        let taken = try c.completeJob(first.id, owner: "A", transition: JobTransition(state: .done, event: .verified),
                                      thenClaim: NextClaim(kinds: kinds, lease: 60, now: now))
        #expect(taken == nil)
        let stored = Dictionary(uniqueKeysWithValues: try c.jobs(itemID: item.id).map { ($0.id, $0) })
        #expect(stored[first.id]?.state == .done, "the completion committed")
        #expect(try c.jobCountsByKind()["notarize"] == ["queued": 1], "the failed claim's own write was not undone")
        #expect(stored[last.id]?.state == .queued && stored[last.id]?.attempts == 0 && stored[last.id]?.leaseOwner == nil)
        #expect(try c.item(id: item.id)?.state == .done)
        #expect(try c.events(itemID: item.id).map(\.kind) == ["ingested", "verified"])

        try allowClaims()
        #expect(try c.claimJob(kinds: kinds, owner: "A", lease: 60, now: now)?.id == last.id)
        #expect(try c.jobCountsByKind()["notarize"] == ["failed": 1], "claimed at last, the unreadable job is failed")
        #expect(try c.verifyChain().ok)
    }

    @Test("a custody head anchor that cannot be written does not fail the committed write it follows; flushHead says why, and writes it once it can")
    func anchorFailureAfterTheCommit() throws {
        // A completion that claimed its worker's next job and were then told it failed would
        // leave that job leased and unrun: what is committed is reported committed.
        let dir = TempDirectory("catalog")
        let c = try SQLiteCatalog(path: dir.path + "/catalog.sqlite")
        let anchor = dir.path + "/custody.head"
        try FileManager.default.createDirectory(atPath: anchor, withIntermediateDirectories: true)  // the anchor's name taken
        let event = try c.appendEvent(itemID: nil, kind: .retry, details: ["n": "1"])
        #expect(try c.lastEvent()?.seq == event.seq)
        #expect(CustodyHead.read(anchor) == nil)
        #expect(throws: CatalogError.self, "still due, and its error shown to whoever flushes") { try c.flushHead() }
        try FileManager.default.removeItem(atPath: anchor)
        try c.flushHead()
        #expect(CustodyHead.read(anchor)?.seq == event.seq)
        #expect(CustodyHead.read(anchor)?.hash == event.hash)
    }
}
