import EvidenceCatalog
import EvidenceCore
import EvidenceStore
import Foundation
import EvidenceTesting
import GRDB
import Testing

@Suite("Job queue")
struct JobQueueTests {
    func catalogWithItem(_ backend: Backend) throws -> (any Catalog, Int64) {
        let c = try backend.make()
        let item = try c.recordIngest(record("a", path: "/drop/a.mp4")).item
        return (c, item.id)
    }

    @Test("ingest queues its jobs in the same transaction, once per item and per source", arguments: Backend.allCases)
    func queuedWithIngest(_ backend: Backend) throws {
        let c = try backend.make()
        var r = record("a", path: "/drop/a.mp4")
        r.jobsForNewItem = [JobSpec(.verify(rule: "cam"))]
        r.jobsForNewSource = [JobSpec(.afterAction(rule: "cam", action: .delete, source: nil))]
        let item = try c.recordIngest(r).item
        var again = record("a", path: "/drop/copy.mp4", inode: 9)
        again.jobsForNewItem = r.jobsForNewItem
        again.jobsForNewSource = r.jobsForNewSource
        _ = try c.recordIngest(again)
        let jobs = try c.jobs(itemID: item.id)
        #expect(jobs.map(\.kind.rawValue).sorted() == ["after-action", "after-action", "verify"])
        let sources = jobs.compactMap { job -> String? in
            if case .afterAction(_, .delete, let source?) = job.payload { return source.path }
            return nil
        }
        #expect(sources.sorted() == ["/drop/a.mp4", "/drop/copy.mp4"], "the catalog fills in each after-action's source")
    }

    @Test("retry ITEM: the item's jobs waiting in back-off become due now, other items' stay", arguments: Backend.allCases)
    func wakeOneItem(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        let later = Date().addingTimeInterval(3600)
        var spec = JobSpec(.verify(rule: "cam"))
        spec.runAt = later
        _ = try c.enqueue(spec, itemID: id, dedupeKey: "v")
        _ = try c.enqueue(spec, itemID: nil, dedupeKey: "other")
        let now = Date()
        #expect(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now) == nil)
        #expect(try c.wakeQueuedJobs(itemID: id, now: now) == 1)
        #expect(try c.wakeQueuedJobs(itemID: id, now: now) == 0, "already due")
        let job = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now))
        #expect(job.itemID == id)
        #expect(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now) == nil, "the other job still waits")
    }

    @Test("finishQueuedJobs marks queued jobs done, in one call; a running, failed or unnamed job is left as it is", arguments: Backend.allCases)
    func finishQueued(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        var spec = JobSpec(.verify(rule: "cam"))
        spec.runAt = Date().addingTimeInterval(3600)
        let queued = try c.enqueue(spec, itemID: id, dedupeKey: "queued")
        let untouched = try c.enqueue(spec, itemID: id, dedupeKey: "not named")
        let running = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "running")
        let now = Date()
        #expect(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now)?.id == running.id)
        let failed = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "failed")
        let claimed = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now.addingTimeInterval(1)))
        #expect(claimed.id == failed.id)
        _ = try c.failJob(failed.id, owner: "A", error: "no", retryAt: nil, onGiveUp: nil)

        #expect(try c.finishQueuedJobs(ids: [queued.id, running.id, failed.id, 999_999]) == 1)
        let states = Dictionary(uniqueKeysWithValues: try c.jobs(itemID: id).map { ($0.id, $0.state) })
        #expect(states == [queued.id: .done, untouched.id: .queued, running.id: .running, failed.id: .failed])
        // The running job's owner still completes it; a finished job is not claimed again.
        try c.completeJob(running.id, owner: "A", transition: nil)
        #expect(try c.claimJob(id: queued.id, owner: "B", lease: 60, now: now) == nil, "done")
        #expect(try c.finishQueuedJobs(ids: []) == 0)
    }

    @Test("a completion's certificates are recorded in its transaction, each with its event before the transition's; a lost lease records none", arguments: Backend.allCases)
    func certificatesWithCompletion(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        _ = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "c")
        let now = Date()
        let job = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now))
        let pdf = Certificate(itemID: id, origin: "evidence", sha256: SHA256Digest(hex: String(repeating: "c", count: 64))!, size: 1234)
        var t = JobTransition(state: .certified, event: .certified)
        t.certificates = [pdf]
        // Another runner took the job over: its completion is refused, and nothing of it recorded.
        #expect(throws: CatalogError.self) { try c.completeJob(job.id, owner: "B", transition: t) }
        #expect(try c.certificates(itemID: id).isEmpty)
        try c.completeJob(job.id, owner: "A", transition: t)
        let saved = try c.certificates(itemID: id)
        #expect(saved.map(\.origin) == ["evidence"] && saved.first?.sha256 == pdf.sha256 && saved.first?.size == 1234)
        #expect(try c.events(itemID: id).map(\.kind) == ["ingested", "certificate", "certified"])
        #expect(try c.item(id: id)?.state == .certified)
        #expect(try c.verifyChain().ok)
    }

    @Test("enqueue is idempotent by dedupe key", arguments: Backend.allCases)
    func dedupe(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        let a = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "verify:item:\(id)")
        let b = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "verify:item:\(id)")
        #expect(a.id == b.id)
        #expect(try c.jobs(itemID: id).count == 1)
    }

    @Test("a claimed job is leased to one owner; others cannot claim it until the lease expires", arguments: Backend.allCases)
    func leasing(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        _ = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "v")
        let now = Date()
        let job = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now))
        #expect(job.state == .running && job.attempts == 1 && job.leaseOwner == "A")
        #expect(try c.claimJob(kinds: [.verify], owner: "B", lease: 60, now: now) == nil)
        // A crashed owner's lease runs out: B takes the job over, and A can no longer complete it.
        let later = now.addingTimeInterval(61)
        let taken = try #require(try c.claimJob(kinds: [.verify], owner: "B", lease: 60, now: later))
        #expect(taken.id == job.id && taken.attempts == 2)
        #expect(throws: CatalogError.self) { try c.completeJob(job.id, owner: "A", transition: nil) }
        try c.completeJob(job.id, owner: "B", transition: JobTransition(state: .done, event: .verified))
        #expect(try c.item(id: id)?.state == .done)
        #expect(try c.events(itemID: id).map(\.kind) == ["ingested", "verified"])
    }

    @Test("a completion records the archived files it carries, their events before the transition's, in its transaction; a lost lease records none", arguments: Backend.allCases)
    func completionRecordsArchivedFiles(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        _ = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "v")
        let now = Date()
        let job = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now))
        let files = ["a.mp4.qed.json", "a.mp4.manifest.json"].map {
            ArchivedFile(itemID: id, account: "dav", remotePath: $0, role: $0.hasSuffix("manifest.json") ? .manifest : .receipt,
                         sha256: SHA256Digest(hex: String(repeating: "c", count: 64))!, size: 10, verifiedBy: "sha1:x")
        }
        var transition = JobTransition(state: .archived, event: .archived)
        transition.archivedFiles = files
        // Taken over first: the old owner's completion is refused whole, its files with it.
        let taken = try #require(try c.claimJob(kinds: [.verify], owner: "B", lease: 60, now: now.addingTimeInterval(61)))
        #expect(throws: CatalogError.self) { try c.completeJob(job.id, owner: "A", transition: transition) }
        #expect(try c.archivedFiles(itemID: id).isEmpty)
        try c.completeJob(taken.id, owner: "B", transition: transition)
        #expect(try c.archivedFiles(itemID: id).map(\.remotePath).sorted() == ["a.mp4.manifest.json", "a.mp4.qed.json"])
        #expect(try c.events(itemID: id).map(\.kind) == ["ingested", "archived-file", "archived-file", "archived"])
        #expect(try c.item(id: id)?.state == .archived)
    }

    @Test("failures retry at the given time until attempts run out, then fail the item", arguments: Backend.allCases)
    func failAndGiveUp(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        _ = try c.enqueue(JobSpec(.verify(rule: "cam"), maxAttempts: 2), itemID: id, dedupeKey: "v")
        var now = Date()
        var job = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now))
        let retryAt = now.addingTimeInterval(30)
        let after1 = try c.failJob(job.id, owner: "A", error: "disk busy", retryAt: retryAt,
                                   onGiveUp: JobTransition(state: .failed, event: .verifyFailed, reason: "gave up"))
        #expect(after1.state == .queued && after1.lastError == "disk busy")
        #expect(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now) == nil, "not before retryAt")
        #expect(try c.nextJobDue(kinds: [.verify]).map { abs($0.timeIntervalSince(retryAt)) < 0.01 } == true)
        now = retryAt.addingTimeInterval(1)
        job = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: now))
        let after2 = try c.failJob(job.id, owner: "A", error: "still busy", retryAt: now.addingTimeInterval(30),
                                   onGiveUp: JobTransition(state: .failed, event: .verifyFailed, reason: "gave up"))
        #expect(after2.state == .failed)
        #expect(try c.item(id: id)?.state == .failed)
        #expect(try c.troubledJobs(limit: 10).map(\.id) == [job.id])
        // retry re-queues with fresh attempts and puts the item back where it failed from.
        #expect(try c.retryFailed(itemID: nil, then: lifecycleRetry) == 1)
        #expect(try c.item(id: id)?.state == .ingested)
        let again = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 60, now: Date().addingTimeInterval(1)))
        #expect(again.attempts == 1)
    }

    @Test("release returns a job without spending an attempt; start-up releases every lease", arguments: Backend.allCases)
    func release(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        _ = try c.enqueue(JobSpec(.afterAction(rule: "cam", action: .delete, source: nil)), itemID: id, dedupeKey: "x")
        _ = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "y")
        let now = Date()
        let a = try #require(try c.claimJob(kinds: [.afterAction], owner: "A", lease: 600, now: now))
        try c.releaseJob(a.id, owner: "A", runAt: now)
        let again = try #require(try c.claimJob(kinds: [.afterAction], owner: "A", lease: 600, now: now))
        #expect(again.attempts == 1)
        _ = try #require(try c.claimJob(kinds: [.verify], owner: "A", lease: 600, now: now))
        #expect(try c.leaseOwners() == ["A"])
        #expect(try c.releaseLeases(owners: ["A"]) == 2)
        #expect(try c.jobCounts() == ["queued": 2])
    }

    @Test("a stored job whose parameters cannot be read is failed with the reason, and the next one is claimed")
    func unreadableJobIsFailedVisibly() throws {
        let dir = TempDirectory("catalog")
        let c = try SQLiteCatalog(path: dir.path + "/catalog.sqlite")
        let bad = try c.enqueue(JobSpec(.notarize(rule: "cam", notary: "qed")), itemID: nil, dedupeKey: "bad")
        let good = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: nil, dedupeKey: "good")
        // A hand-edited catalog: the notarize job lost its notary.
        let raw = try DatabaseQueue(path: dir.path + "/catalog.sqlite")
        try raw.write { try $0.execute(sql: "UPDATE job SET payload = '{\"rule\":\"cam\"}' WHERE id = ?", arguments: [bad.id]) }
        let claimed = try #require(try c.claimJob(kinds: [.notarize, .verify], owner: "A", lease: 60, now: Date()))
        #expect(claimed.id == good.id)
        #expect(try c.jobCountsByKind()["notarize"] == ["failed": 1])
        let reason = try raw.read { try String.fetchOne($0, sql: "SELECT last_error FROM job WHERE id = ?", arguments: [bad.id]) }
        #expect(reason?.contains("notarize job parameters: no \"notary\"") == true, "\(reason ?? "")")
        #expect(try c.claimJob(kinds: [.notarize], owner: "A", lease: 60, now: Date()) == nil, "never handed out")
    }

    @Test("a share link's custody event names it by link_id, never its URL (a bearer capability that bundles would carry)", arguments: Backend.allCases)
    func shareLinkEventHasNoURL(_ backend: Backend) throws {
        let (c, id) = try catalogWithItem(backend)
        let url = "https://share.example/s/SECRET-CAPABILITY-123"
        try c.saveSharedLink(SharedLink(itemID: id, account: "vault", remotePath: "cam/a.mp4", url: url, expires: nil,
                                        passwordProtected: false, fallback: nil))
        let event = try #require(try c.events(itemID: id).last)
        #expect(event.is(.shareLink))
        #expect(!event.details.contains("SECRET-CAPABILITY"), "\(event.details)")
        #expect(event.details.contains("\"link_id\":\"\(SharedLink.id(of: url))\""))
        #expect(try c.sharedLinks(itemID: id).first?.url == url, "the link itself stays in the catalog")
    }

    @Test("backoff doubles up to its cap, with jitter between 0.5x and 1.5x")
    func backoff() {
        let b = Backoff(base: 2, cap: 60)
        #expect(b.delay(afterAttempt: 1, jitter: 1) == 2)
        #expect(b.delay(afterAttempt: 3, jitter: 1) == 8)
        #expect(b.delay(afterAttempt: 20, jitter: 1) == 60)
        for _ in 0..<100 {
            let d = b.delay(afterAttempt: 2)
            #expect(d >= 2 && d < 6)
        }
    }
}
