import EvidenceCore
import Foundation
import GRDB
import Testing
@testable import EvidenceCatalog

/// The rows the hot paths write through `ColumnStatements` (values bound by position, not by
/// GRDB's record persistence): every column of the table is written, each value lands in its own
/// column (read back by name, through the rows' own `init(row:)`), an upsert of the same key
/// replaces every other column, and an update of a missing row fails as GRDB's `update` does.
@Suite("catalog rows written by position")
struct ColumnWrittenTests {
    /// Whole milliseconds: the catalog stores dates to the millisecond.
    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: 1_764_000_000 + seconds) }

    static func migrated() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try Schema.migrator.migrate(queue)
        return queue
    }

    static func tableColumns(_ db: Database, _ table: String) throws -> Set<String> {
        Set(try Row.fetchAll(db, sql: "PRAGMA table_info(\(table))").map { $0["name"] as String })
    }

    /// The row read back by its key's WHERE clause through the type's `init(row:)`.
    static func back<T: FetchableRecord>(_ type: T.Type, _ db: Database, _ sql: String) throws -> T? {
        try T.fetchOne(db, sql: sql)
    }

    /// Field for field (every field of these rows prints).
    static func same<T>(_ read: T?, _ written: T) -> Bool { String(describing: read) == String(describing: Optional(written)) }

    static func item(id: Int64) -> ItemRow {
        ItemRow(id: id, sha256: String(repeating: "a", count: 63) + String(id), size: 100 + id, state: .submitted,
                stateReason: "reason \(id)", mediaJson: "{\"n\":\(id)}", dateTaken: at(1.5), createdAt: at(2.25),
                updatedAt: at(3.125), failedFrom: .ingested, supersededBy: 40 + id)
    }

    @Test("every column of each table is in its statements, once")
    func everyColumnWritten() throws {
        let queue = try Self.migrated()
        try queue.read { db in
            let all: [(String, ColumnStatements)] = [
                (ItemRow.databaseTableName, ItemRow.statements), (CustodyRow.databaseTableName, CustodyRow.statements),
                (JobRow.databaseTableName, JobRow.statements), (ProofRow.databaseTableName, ProofRow.statements),
                (CertificateRow.databaseTableName, CertificateRow.statements),
                (ArchivedFileRow.databaseTableName, ArchivedFileRow.statements), (SourceRow.databaseTableName, SourceRow.statements),
            ]
            for (table, statements) in all {
                let inTable = try Self.tableColumns(db, table)
                #expect(Set(statements.columns) == inTable, "\(table)")
                #expect(Set(statements.columns).count == statements.columns.count, "\(table): a column twice")
            }
        }
    }

    @Test("item: inserted and updated by position, read back by name, field for field")
    func itemRoundTrip() throws {
        let queue = try Self.migrated()
        try queue.write { db in
            let row = Self.item(id: 7)
            try row.insertRow(db)
            let read = try #require(try Self.back(ItemRow.self, db, "SELECT * FROM item WHERE id = 7"))
            #expect(String(describing: read) == String(describing: row))
            var changed = read
            changed.state = .failed; changed.stateReason = "changed"; changed.mediaJson = nil; changed.dateTaken = nil
            changed.updatedAt = Self.at(9.5); changed.failedFrom = .confirmed; changed.supersededBy = nil
            try changed.updateRow(db)
            let again = try #require(try Self.back(ItemRow.self, db, "SELECT * FROM item WHERE id = 7"))
            #expect(String(describing: again) == String(describing: changed))
            var missing = changed
            missing.id = 8
            #expect(throws: RecordError.self) { try missing.updateRow(db) }
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") == 1)
        }
    }

    @Test("job: inserted by position (its id from SQLite), updated by id, read back by name")
    func jobRoundTrip() throws {
        let queue = try Self.migrated()
        try queue.write { db in
            try Self.item(id: 1).insertRow(db)
            var row = JobRow(id: nil, kind: .archive, itemId: 1, state: .running, attempts: 3, maxAttempts: 12,
                             nextRunAt: Self.at(4.5), leaseOwner: "host:1", leaseExpiresAt: Self.at(5.75), lastError: "e",
                             payload: "{\"p\":1}", dedupeKey: "archive:1", createdAt: Self.at(0.125), updatedAt: Self.at(6))
            try row.insertRow(db)
            row.id = db.lastInsertedRowID
            #expect(row.id != nil && row.id! > 0)
            let read = try #require(try Self.back(JobRow.self, db, "SELECT * FROM job WHERE id = \(row.id!)"))
            #expect(String(describing: read) == String(describing: row))
            row.state = .done; row.leaseOwner = nil; row.leaseExpiresAt = nil; row.lastError = nil; row.attempts = 4
            try row.updateRow(db)
            let again = try #require(try Self.back(JobRow.self, db, "SELECT * FROM job WHERE id = \(row.id!)"))
            #expect(String(describing: again) == String(describing: row))
        }
    }

    @Test("proof, certificate, archived file: an upsert inserts, a second of the same key replaces every other column")
    func upserts() throws {
        let queue = try Self.migrated()
        try queue.write { db in
            try Self.item(id: 1).insertRow(db)
            var proof = ProofRow(Proof(itemID: 1, notary: "tsa", kind: .rfc4998, state: .pending, remoteID: "r1",
                                       receipt: nil, txHash: "tx", blockHeight: 5, network: "n", link: "l",
                                       provenAt: Self.at(1), error: "err", submittedAt: Self.at(2), updatedAt: Self.at(3)))
            try proof.upsertRow(db)
            try #expect(Self.same(Self.back(ProofRow.self, db, "SELECT * FROM proof"), proof))
            proof.state = .confirmed; proof.receipt = String(repeating: "b", count: 64); proof.error = nil; proof.updatedAt = Self.at(8)
            proof.remoteId = "r2"; proof.blockHeight = nil
            try proof.upsertRow(db)
            try #expect(Self.same(Self.back(ProofRow.self, db, "SELECT * FROM proof"), proof))
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM proof") == 1)

            var cert = CertificateRow(itemId: 1, origin: "qed", sha256: String(repeating: "c", count: 64), size: 9, createdAt: Self.at(1))
            try cert.upsertRow(db)
            cert.size = 10; cert.sha256 = String(repeating: "d", count: 64); cert.createdAt = Self.at(2)
            try cert.upsertRow(db)
            try CertificateRow(itemId: 1, origin: "evidence", sha256: String(repeating: "e", count: 64), size: 1, createdAt: Self.at(3)).upsertRow(db)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM certificate") == 2)
            try #expect(Self.same(Self.back(CertificateRow.self, db, "SELECT * FROM certificate WHERE origin = 'qed'"), cert))

            var file = ArchivedFileRow(itemId: 1, account: "dav", remotePath: "/a/x.bin", role: .original,
                                       sha256: String(repeating: "f", count: 64), size: 11, verifiedBy: "sha1",
                                       remoteId: "id1", verifiedAt: Self.at(4))
            try file.upsertRow(db)
            file.role = .manifest; file.size = 12; file.verifiedBy = "read back"; file.remoteId = nil; file.verifiedAt = Self.at(5)
            try file.upsertRow(db)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM archived_file") == 1)
            try #expect(Self.same(Self.back(ArchivedFileRow.self, db, "SELECT * FROM archived_file"), file))
        }
    }

    @Test("a proof's kind, an archived file's role this version does not know (the schema checks a proof's state): refused naming the table, the row and the value")
    func unknownCodedValues() throws {
        let queue = try Self.migrated()
        try queue.write { db in
            try Self.item(id: 1).insertRow(db)
            try ProofRow(Proof(itemID: 1, notary: "tsa", kind: .rfc4998, state: .confirmed, updatedAt: Self.at(1))).upsertRow(db)
            try ArchivedFileRow(itemId: 1, account: "dav", remotePath: "/a/x.bin", role: .original, sha256: String(repeating: "f", count: 64),
                                size: 1, verifiedBy: "sha1", remoteId: nil, verifiedAt: Self.at(2)).upsertRow(db)
            func refusal<T: FetchableRecord>(_ type: T.Type, _ sql: String) -> String {
                do { _ = try T.fetchOne(db, sql: sql); return "read" } catch { return "\(error)" }
            }
            try db.execute(sql: "UPDATE proof SET kind = 'sealed'")
            let kind = refusal(ProofRow.self, "SELECT * FROM proof")
            #expect(kind.contains("proof of item 1 by tsa") && kind.contains("kind") && kind.contains("sealed"), "\(kind)")
            try db.execute(sql: "UPDATE archived_file SET role = 'sealed'")
            let role = refusal(ArchivedFileRow.self, "SELECT * FROM archived_file")
            #expect(role.contains("/a/x.bin of item 1") && role.contains("role") && role.contains("sealed"), "\(role)")
        }
    }

    @Test("source: inserted by position (its id from SQLite), read back by name")
    func sourceRoundTrip() throws {
        let queue = try Self.migrated()
        try queue.write { db in
            try Self.item(id: 1).insertRow(db)
            var source = SourceRow(id: nil, itemId: 1, path: "/drop/a.mp4", name: "a.mp4", rule: "cam", device: -3, inode: 77,
                                   size: 1234, mtimeNanos: 1_764_000_000_123_456_789, seenAt: Self.at(2.5))
            try source.insertRow(db)
            source.id = db.lastInsertedRowID
            try #expect(Self.same(Self.back(SourceRow.self, db, "SELECT * FROM source"), source))
        }
    }

    @Test("custody event: inserted by position, read back by name; the log stays append-only")
    func custodyRoundTrip() throws {
        let queue = try Self.migrated()
        try queue.write { db in
            try Self.item(id: 1).insertRow(db)
            let event = CustodyRow(CustodyEvent(seq: 1, itemID: 1, at: "2026-11-29T06:00:00.000Z", kind: "ingested", actor: "evidence",
                                                details: "{\"k\":\"v\"}", prevHash: String(repeating: "0", count: 64),
                                                hash: String(repeating: "9", count: 64)))
            try event.insertRow(db)
            try #expect(Self.same(Self.back(CustodyRow.self, db, "SELECT * FROM custody_event"), event))
            // the same seq again is refused (its primary key), not merged
            #expect(throws: DatabaseError.self) { try event.insertRow(db) }
        }
    }
}
