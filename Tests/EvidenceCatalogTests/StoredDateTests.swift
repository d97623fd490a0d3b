import Foundation
import GRDB
import Testing
@testable import EvidenceCatalog

@Suite("catalog dates")
struct StoredDateTests {
    /// GRDB's own text for a date (its DateFormatter): the reference StoredDate must match.
    static func grdb(_ date: Date) -> String? { String.fromDatabaseValue(date.databaseValue) }

    @Test("dates are written as GRDB's DateFormatter writes them, byte for byte, for 20,000 dates and the edges")
    func sameTextAsGRDB() throws {
        var rng = SystemRandomNumberGenerator()
        var dates: [Date] = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 0.0009), Date(timeIntervalSince1970: 0.999),
            Date(timeIntervalSince1970: 951_782_400.5),  // 2000-02-29
            Date(timeIntervalSince1970: 4_107_542_399.999),  // 2100-02-28 23:59:59.999
            Date(timeIntervalSince1970: 1_798_761_599.9995), Date.distantFuture, Date(),
        ]
        for _ in 0..<20_000 {
            // 1970 to 2200, with sub-millisecond parts: GRDB's formatter rounds them
            dates.append(Date(timeIntervalSince1970: Double.random(in: 0..<7_258_118_400, using: &rng)))
        }
        var differing: [String] = []
        for d in dates where StoredDate.text(d) != Self.grdb(d) {
            differing.append("\(d.timeIntervalSince1970): ours \(StoredDate.text(d)), GRDB \(Self.grdb(d) ?? "nil")")
        }
        let examples = differing.prefix(5).joined(separator: "; ")
        #expect(differing.count == 0, "e.g. \(examples)")
    }

    @Test("a record's dates are stored as that text (nearest millisecond) and read back as that millisecond")
    func recordsRoundTrip() throws {
        let db = try DatabaseQueue()
        try db.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, at TEXT NOT NULL)")
            struct Row: Codable, FetchableRecord, PersistableRecord {
                static let databaseTableName = "t"
                static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
                var id: Int64
                var at: Date
            }
            let at = Date(timeIntervalSince1970: 1_764_000_000.123_9)
            try Row(id: 1, at: at).insert(db)
            #expect(try String.fetchOne(db, sql: "SELECT at FROM t") == "2025-11-24 16:00:00.124")
            let back = try #require(try Row.fetchOne(db, key: 1))
            #expect(abs(back.at.timeIntervalSince1970 - 1_764_000_000.124) < 0.000_001)
        }
    }

    @Test("every catalog record writes its dates with StoredDate, not GRDB's formatter")
    func everyRecordUsesStoredDate() {
        func custom(_ s: DatabaseDateEncodingStrategy) -> Bool { if case .custom = s { return true } else { return false } }
        #expect(custom(ItemRow.databaseDateEncodingStrategy(for: "created_at")))
        #expect(custom(SourceRow.databaseDateEncodingStrategy(for: "seen_at")))
        #expect(custom(QuarantineRow.databaseDateEncodingStrategy(for: "at")))
        #expect(custom(CustodyRow.databaseDateEncodingStrategy(for: "at")))
        #expect(custom(JobRow.databaseDateEncodingStrategy(for: "next_run_at")))
        #expect(custom(ProofRow.databaseDateEncodingStrategy(for: "updated_at")))
        #expect(custom(CertificateRow.databaseDateEncodingStrategy(for: "created_at")))
        #expect(custom(ArchivedFileRow.databaseDateEncodingStrategy(for: "verified_at")))
        #expect(custom(SharedLinkRow.databaseDateEncodingStrategy(for: "created_at")))
    }
}
