import EvidenceCatalog
import EvidenceCore
import EvidenceTesting
import Foundation
import GRDB
import Synchronization
import Testing

/// A catalog of either backend with a way around it: `edit` runs SQL straight on its database,
/// as a hand edit or a newer version of evidence would write it; `reopen` opens the same
/// database again, running any migration not applied yet.
struct RawCatalog {
    var catalog: any Catalog
    var edit: (String) throws -> Void
    var reopen: () throws -> any Catalog
    /// Keeps the SQLite catalog's folder until the test ends.
    var dir: TempDirectory?

    init(_ backend: Backend) throws {
        switch backend {
        case .sqlite:
            let dir = TempDirectory("catalog")
            let path = dir.path + "/catalog.sqlite"
            catalog = try SQLiteCatalog(path: path)
            let raw = try DatabaseQueue(path: path)
            // A hand edit need not respect the schema's CHECKs either.
            edit = { sql in try raw.writeWithoutTransaction { try $0.execute(sql: "PRAGMA ignore_check_constraints = ON; " + sql) } }
            reopen = { try SQLiteCatalog(path: path) }
            self.dir = dir
        case .postgres:
            let (server, database, catalogs) = try Backend.nodes(1)
            catalog = catalogs[0]
            edit = { sql in _ = try server.psql(sql, database: database) }
            reopen = { try PostgresCatalog(Backend.target(server, database: database), headPath: nil) }
            dir = nil
        }
    }
}

@Suite("Failed items and unreadable rows")
struct FailedItemTests {
    /// An item that went `ingested` → `submitted` → `failed`, with the job that gave up.
    func failedFromSubmitted(_ c: any Catalog) throws -> Int64 {
        let id = try c.recordIngest(record("a", path: "/drop/a.mp4")).item.id
        try apply(JobTransition(state: .submitted, event: .submitted), to: id, in: c)
        try apply(JobTransition(state: .failed, event: .failed, reason: "qed: Transaction reverted"), to: id, in: c,
                  failing: "qed: Transaction reverted")
        #expect(try c.item(id: id)?.state == .failed)
        return id
    }

    @Test("retry asks the lifecycle with the item's state and the state it failed from, and applies its answer",
          arguments: Backend.allCases)
    func retryAsksTheLifecycle(_ backend: Backend) throws {
        let c = try backend.make()
        let id = try failedFromSubmitted(c)
        final class Asked: Sendable { let list = Mutex<[String]>([]) }
        let asked = Asked()
        #expect(try c.retryFailed(itemID: id) { state, failedFrom in
            asked.list.withLock { $0.append("\(state) from \(failedFrom.map(\.rawValue) ?? "nil")") }
            return lifecycleRetry(state, failedFrom)
        } == 1)
        #expect(asked.list.withLock { $0 } == ["failed from submitted"])
        let item = try #require(try c.item(id: id))
        #expect(item.state == .submitted && item.stateReason == nil)
        let last = try #require(try c.events(itemID: id).last)
        #expect(last.is(.retry) && last.details.contains("\"from\":\"failed\"") && last.details.contains("\"to\":\"submitted\""),
                "\(last.details)")
    }

    @Test("retry changes no state the lifecycle does not return: the catalog decides nothing", arguments: Backend.allCases)
    func retryDecidesNothingItself(_ backend: Backend) throws {
        let c = try backend.make()
        let id = try failedFromSubmitted(c)
        #expect(try c.retryFailed(itemID: id) { _, _ in nil } == 1)
        #expect(try c.item(id: id)?.state == .failed)
        #expect(try c.jobs(itemID: id).filter { $0.state == .failed }.isEmpty, "the jobs are re-queued all the same")
    }

    @Test("a home made before items kept failed_from still retries a failed item to the state it failed from",
          arguments: Backend.allCases)
    func migratedHomeRetriesToTheRightState(_ backend: Backend) throws {
        let raw = try RawCatalog(backend)
        let id = try failedFromSubmitted(raw.catalog)
        // The previous schema: no failed_from column, and its migration not applied yet.
        switch backend {
        case .sqlite:
            try raw.edit("ALTER TABLE item DROP COLUMN failed_from; DELETE FROM grdb_migrations WHERE identifier = 'v7-item-failed-from'")
        case .postgres:
            try raw.edit("ALTER TABLE item DROP COLUMN failed_from; DELETE FROM evidence_migration WHERE name = 'v7-item-failed-from'")
        }
        let migrated = try raw.reopen()
        #expect(try migrated.retryFailed(itemID: id, then: lifecycleRetry) == 1)
        #expect(try migrated.item(id: id)?.state == .submitted, "from the custody event of its move to failed, not ingested")
    }

    @Test("a job row with a state this version does not know is refused naming the table, the row and the value",
          arguments: Backend.allCases)
    func unknownJobStateIsRefused(_ backend: Backend) throws {
        let raw = try RawCatalog(backend)
        let id = try raw.catalog.recordIngest(record("a", path: "/drop/a.mp4")).item.id
        let job = try raw.catalog.enqueue(JobSpec(.verify(rule: "cam")), itemID: id, dedupeKey: "v")
        if backend == .postgres { try raw.edit("ALTER TABLE job DROP CONSTRAINT job_state_check") }
        try raw.edit("UPDATE job SET state = 'paused' WHERE id = \(job.id)")
        do {
            let jobs = try raw.catalog.jobs(itemID: id)
            Issue.record("read as \(jobs.map(\.state))")
        } catch {
            #expect("\(error)".contains("job \(job.id) has the unknown state \"paused\""), "\(error)")
        }
    }

    @Test("an item row with a state this version does not know is refused naming the row", arguments: Backend.allCases)
    func unknownItemStateIsRefused(_ backend: Backend) throws {
        let raw = try RawCatalog(backend)
        let id = try raw.catalog.recordIngest(record("a", path: "/drop/a.mp4")).item.id
        try raw.edit("UPDATE item SET state = 'quarantined' WHERE id = \(id)")
        do {
            let item = try raw.catalog.item(id: id)
            Issue.record("read as \(String(describing: item?.state))")
        } catch {
            #expect("\(error)".contains("item \(id) has the unknown state \"quarantined\""), "\(error)")
        }
    }
}
