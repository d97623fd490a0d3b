import EvidenceCore
import EvidenceStore
import Foundation
import GRDB

extension SQLiteCatalog {
    /// The item recorded for one exact version of one path (hot: every detected file asks).
    static let sourceLookupSQL = """
        SELECT item.* FROM source JOIN item ON item.id = source.item_id
        WHERE source.path = ? AND source.device = ? AND source.inode = ? AND source.size = ? AND source.mtime_nanos = ?
        """

    public func recordIngest(_ r: IngestRecord) throws(CatalogError) -> IngestOutcome {
        try write { db in try Self.recordIngest(db, r) }
    }

    public func recordIngests(_ records: [IngestRecord]) throws(CatalogError) -> [Result<IngestOutcome, CatalogError>] {
        guard !records.isEmpty else { return [] }
        let outcomes: [Result<IngestOutcome, DatabaseError>] = try write { db in
            try records.map { r in
                // One savepoint per record: a record the database refuses is rolled back alone.
                var outcome: IngestOutcome?
                do {
                    try db.inSavepoint {
                        outcome = try Self.recordIngest(db, r)
                        return .commit
                    }
                } catch let e as DatabaseError where e.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
                    return .failure(e)
                }
                return .success(outcome!)
            }
        }
        return outcomes.map { $0.mapError { self.mapError($0) } }
    }

    /// `recordIngest` inside the caller's transaction.
    static func recordIngest(_ db: Database, _ r: IngestRecord) throws -> IngestOutcome {
        let name = (r.path as NSString).lastPathComponent
        let mediaJSON = r.media.flatMap { try? String(decoding: CanonicalJSON.encode($0), as: UTF8.self) }
        let now = Date()
        if let known = try ItemRow.fetchOne(db.cachedStatement(sql: Self.sourceLookupSQL), arguments: [r.path, Int64(bitPattern: r.device), Int64(bitPattern: r.inode), r.size, r.mtimeNanos]),
           known.sha256 == r.sha256.hex {
            return .alreadyKnown(try known.model())
        }
        var row: ItemRow
        let created: Bool
        if let existing = try ItemRow.fetchOne(db.cachedStatement(sql: "SELECT * FROM item WHERE sha256 = ?"),
                                               arguments: [r.sha256.hex]) {
            row = existing
            created = false
        } else {
            let mtime = Date(timeIntervalSince1970: Double(r.mtimeNanos) / 1e9)
            row = ItemRow(id: nil, sha256: r.sha256.hex, size: r.size, state: .ingested,
                          stateReason: nil, mediaJson: mediaJSON, dateTaken: r.media?.creationTime ?? mtime,
                          createdAt: now, updatedAt: now, failedFrom: nil)
            try row.insertRow(db)
            row.id = db.lastInsertedRowID
            created = true
        }
        var source = SourceRow(id: nil, itemId: row.id!, path: r.path, name: name, rule: r.rule,
                               device: Int64(bitPattern: r.device), inode: Int64(bitPattern: r.inode),
                               size: r.size, mtimeNanos: r.mtimeNanos, seenAt: now)
        try source.insertRow(db)
        source.id = db.lastInsertedRowID
        let event = r.sightingEvent(created: created)
        _ = try Self.appendEvent(db, itemID: row.id, kind: event.kind, actor: r.actor, details: event.details)
        for job in r.sightingJobs(created: created, itemID: row.id!, itemIsDone: row.state == .done,
                                  source: SourceRef(id: source.id!, path: r.path)) {
            _ = try Self.insertJob(db, job.spec, itemID: row.id, dedupeKey: job.dedupeKey, now: now)
        }
        if created, r.rule != nil, r.supersedes != .none {
            // New content at a path taken before under the same rule: the earlier items are
            // earlier versions (a file still growing, or replaced).
            let earlier = try Int64.fetchAll(db.cachedStatement(sql: """
                SELECT DISTINCT i.id FROM item i JOIN source s ON s.item_id = i.id
                WHERE s.path = ? AND s.rule IS ? AND i.id <> ? AND i.superseded_by IS NULL AND (? OR i.state <> 'done')
                ORDER BY i.id
                """), arguments: [r.path, r.rule, row.id!, r.supersedes == .all])
            for id in earlier {
                try db.cachedStatement(sql: "UPDATE item SET superseded_by = ?, updated_at = ? WHERE id = ?")
                    .execute(arguments: [row.id!, now, id])
                _ = try Self.appendEvent(db, itemID: id, kind: .superseded, actor: r.actor, details: r.supersededEvent(successor: row.id!))
            }
        }
        // A path that was quarantined before and now came in fine is no longer a problem.
        try db.cachedStatement(sql: "UPDATE quarantine SET resolved = 1 WHERE path = ? AND resolved = 0")
            .execute(arguments: [r.path])
        return created ? .created(try row.model()) : .duplicate(try row.model())
    }

    public func recordQuarantine(path: String, rule: String?, reason: String) throws(CatalogError) -> QuarantineEntry {
        try write { db in
            var row = QuarantineRow(id: nil, path: path, rule: rule, reason: reason, at: Date(), resolved: false)
            try row.insert(db)
            var details = ["path": path, "reason": reason]
            if let rule { details["rule"] = rule }
            _ = try Self.appendEvent(db, itemID: nil, kind: .quarantined, actor: "evidence", details: details)
            return row.model()
        }
    }

    @discardableResult
    public func appendEvent(itemID: Int64?, kind: CustodyEventKind, details: [String: String]) throws(CatalogError) -> CustodyEvent {
        try appendEvent(itemID: itemID, kind: kind, actor: "evidence", details: details)
    }

    @discardableResult
    public func appendEvent(itemID: Int64?, kind: CustodyEventKind, actor: String, details: [String: String]) throws(CatalogError) -> CustodyEvent {
        try write { db in try Self.appendEvent(db, itemID: itemID, kind: kind, actor: actor, details: details) }
    }

    // MARK: Reads

    public func item(id: Int64) throws(CatalogError) -> Item? {
        try readStatement { db in try Self.itemRow(db, id)?.model() }
    }

    public func item(sha256: SHA256Digest) throws(CatalogError) -> Item? {
        try readStatement { db in try ItemRow.filter(ItemRow.Columns.sha256 == sha256.hex).fetchOne(db)?.model() }
    }

    public func items(matching reference: String) throws(CatalogError) -> [Item] {
        let absolute = reference.hasPrefix("/") ? reference
            : FileManager.default.currentDirectoryPath + "/" + reference
        let normalized = (absolute as NSString).standardizingPath
        return try read { db in
            var rows: [ItemRow] = []
            if let id = Int64(reference), let r = try Self.itemRow(db, id) { rows.append(r) }
            let hex = reference.lowercased()
            if hex.count >= 4, hex.count <= 64, hex.allSatisfy(\.isHexDigit) {
                rows += try ItemRow.fetchAll(db, sql: "SELECT * FROM item WHERE sha256 >= ? AND sha256 < ? ORDER BY id",
                                             arguments: [hex, hex + "g"])
            }
            rows += try ItemRow.fetchAll(db, sql: """
                SELECT * FROM item WHERE id IN (SELECT item_id FROM source WHERE path IN (?, ?, ?)) ORDER BY id
                """, arguments: [reference, absolute, normalized])
            var seen = Set<Int64>()
            return try rows.filter { seen.insert($0.id!).inserted }.map { try $0.model() }
        }
    }

    public func allItems() throws(CatalogError) -> [Item] {
        try read { db in try ItemRow.order(ItemRow.Columns.id).fetchAll(db).map { try $0.model() } }
    }

    public func itemForSource(path: String, device: UInt64, inode: UInt64, size: Int64,
                              mtimeNanos: Int64) throws(CatalogError) -> Item? {
        try readStatement { db in
            try ItemRow.fetchOne(db.cachedStatement(sql: Self.sourceLookupSQL), arguments: [path, Int64(bitPattern: device), Int64(bitPattern: inode), size, mtimeNanos])?.model()
        }
    }

    public func sources(itemID: Int64) throws(CatalogError) -> [SourceSighting] {
        try readStatement { db in
            try SourceRow.fetchAll(db.cachedStatement(sql: "SELECT * FROM source WHERE item_id = ? ORDER BY id"), arguments: [itemID]).map { $0.model() }
        }
    }

    public func allSources() throws(CatalogError) -> [SourceSighting] {
        try read { db in try SourceRow.order(SourceRow.Columns.id).fetchAll(db).map { $0.model() } }
    }

    public func events(itemID: Int64) throws(CatalogError) -> [CustodyEvent] {
        try readStatement { db in
            try CustodyRow.fetchAll(db.cachedStatement(sql: "SELECT * FROM custody_event WHERE item_id = ? ORDER BY seq"), arguments: [itemID]).map { $0.model() }
        }
    }

    /// The newest custody event (the chain's head); nil for an empty log.
    public func lastEvent() throws(CatalogError) -> CustodyEvent? {
        try read { db in try CustodyRow.order(CustodyRow.Columns.seq.desc).fetchOne(db)?.model() }
    }

    public func allEvents() throws(CatalogError) -> [CustodyEvent] {
        try read { db in try CustodyRow.order(CustodyRow.Columns.seq).fetchAll(db).map { $0.model() } }
    }

    public func eventHashes(through seq: Int64) throws(CatalogError) -> [(seq: Int64, hash: String)] {
        try read { db in
            var out: [(seq: Int64, hash: String)] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT seq, hash FROM custody_event WHERE seq <= ? ORDER BY seq", arguments: [seq])
            while let row = try rows.next() { out.append((row[0], row[1])) }
            return out
        }
    }

    public func events(kinds: [CustodyEventKind]) throws(CatalogError) -> [CustodyEvent] {
        try read { db in
            try CustodyRow.filter(kinds.map(\.rawValue).contains(CustodyRow.Columns.kind))
                .order(CustodyRow.Columns.seq).fetchAll(db).map { $0.model() }
        }
    }

    public func quarantine(includeResolved: Bool) throws(CatalogError) -> [QuarantineEntry] {
        try read { db in
            let q = includeResolved ? QuarantineRow.all() : QuarantineRow.filter(QuarantineRow.Columns.resolved == false)
            return try q.order(QuarantineRow.Columns.id).fetchAll(db).map { $0.model() }
        }
    }

    public func pendingItems(olderThan cutoff: Date?) throws(CatalogError) -> [Item] {
        try read { db in
            try ItemRow.fetchAll(db, sql: """
                SELECT * FROM item WHERE state NOT IN ('done', 'failed') AND superseded_by IS NULL AND created_at <= ?
                ORDER BY created_at
                """, arguments: [StoredDate.text(cutoff ?? Date.distantFuture)]).map { try $0.model() }
        }
    }

    /// SQLite's `PRAGMA quick_check` (b-tree and page structure, without the slower index
    /// cross-check): an empty array when the database file is sound, else what SQLite found.
    public func integrityProblems() throws(CatalogError) -> [String] { try quickCheck() }

    public var location: String { path }

    public func claimStoreID(_ id: String) throws(CatalogError) -> String {
        try write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', ?)", arguments: [id])
            return try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'store_id'") ?? id
        }
    }

    public func quickCheck() throws(CatalogError) -> [String] {
        try read { db in
            try String.fetchAll(db, sql: "PRAGMA quick_check").filter { $0 != "ok" }
        }
    }

    public func summary() throws(CatalogError) -> CatalogSummary {
        try read { db in
            var s = CatalogSummary()
            for row in try Row.fetchAll(db, sql: """
                SELECT CASE WHEN superseded_by IS NULL THEN state ELSE 'superseded' END AS state, COUNT(*) AS n,
                       COALESCE(SUM(size), 0) AS b, SUM(CASE WHEN size = 0 THEN 1 ELSE 0 END) AS e FROM item GROUP BY 1
                """) {
                let n: Int = row["n"]
                s.byState[row["state"]] = n
                s.items += n
                s.bytes += row["b"] as Int64
                s.empty += row["e"] as Int
            }
            s.quarantined = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM quarantine WHERE resolved = 0") ?? 0
            s.oldestPending = try Date.fetchOne(db, sql: "SELECT MIN(created_at) FROM item WHERE state NOT IN ('done', 'failed') AND superseded_by IS NULL")
            s.sources = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM source") ?? 0
            s.events = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM custody_event") ?? 0
            for row in try Row.fetchAll(db, sql: """
                SELECT COALESCE(s.rule, '(manual)') AS rule, CASE WHEN i.superseded_by IS NULL THEN i.state ELSE 'superseded' END AS state,
                       COUNT(DISTINCT i.id) AS n
                FROM source s JOIN item i ON i.id = s.item_id GROUP BY 1, 2
                """) {
                s.byRule[row["rule"], default: [:]][row["state"]] = row["n"]
            }
            for row in try Row.fetchAll(db, sql: "SELECT actor, COUNT(*) AS n FROM custody_event WHERE kind = 'ingested' GROUP BY actor") {
                s.takenInByNode[NodeName.of(actor: row["actor"]), default: 0] += row["n"] as Int
            }
            for row in try Row.fetchAll(db, sql: """
                SELECT lease_owner, COUNT(*) AS n FROM job WHERE state = 'running' AND lease_owner IS NOT NULL GROUP BY lease_owner
                """) {
                s.runningByNode[NodeName.of(leaseOwner: row["lease_owner"]) ?? row["lease_owner"], default: 0] += row["n"] as Int
            }
            return s
        }
    }

    public func verifyChain() throws(CatalogError) -> ChainReport {
        verifyChain(events: try allEvents())
    }

    /// `verifyChain()` over events already read (`allEvents()`), for a caller that checks them further.
    public func verifyChain(events: [CustodyEvent]) -> ChainReport {
        ChainCheck.verify(events: events, headPath: headPath)
    }
}
