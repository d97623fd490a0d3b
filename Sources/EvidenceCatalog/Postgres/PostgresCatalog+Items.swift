import EvidenceCore
import Foundation

extension PostgresCatalog {
    static let itemForSourceSQL = """
        SELECT item.* FROM source JOIN item ON item.id = source.item_id
        WHERE source.path = $1 AND source.device = $2 AND source.inode = $3 AND source.size = $4 AND source.mtime_nanos = $5
        """

    public func recordIngest(_ r: IngestRecord) throws(CatalogError) -> IngestOutcome {
        try write(custody: true) { tx in try Self.recordIngest(tx, r) }
    }

    public func recordIngests(_ records: [IngestRecord]) throws(CatalogError) -> [Result<IngestOutcome, CatalogError>] {
        guard !records.isEmpty else { return [] }
        return try write(custody: true) { tx in
            // The custody lock is taken first (`write(custody:)`), outside every savepoint: the
            // batch's events go into the chain together, and a record rolled back alone cannot
            // give the lock up early.
            return try records.map { r in
                // One savepoint per record: a record the database refuses is rolled back alone.
                try tx.query("SAVEPOINT ingest_record")
                do {
                    let outcome = try Self.recordIngest(tx, r)
                    try tx.query("RELEASE SAVEPOINT ingest_record")
                    return .success(outcome)
                } catch let e as PGError where e.code?.hasPrefix("23") == true {
                    try tx.query("ROLLBACK TO SAVEPOINT ingest_record")
                    try tx.query("RELEASE SAVEPOINT ingest_record")
                    return .failure(map(e))
                }
            }
        }
    }

    /// `recordIngest` inside the caller's transaction.
    static func recordIngest(_ tx: Tx, _ r: IngestRecord) throws -> IngestOutcome {
        let name = (r.path as NSString).lastPathComponent
        let mediaJSON = r.media.flatMap { try? String(decoding: CanonicalJSON.encode($0), as: UTF8.self) }
        let now = Date()
        let sourceKey = [r.path, String(Int64(bitPattern: r.device)), String(Int64(bitPattern: r.inode)), String(r.size),
                         String(r.mtimeNanos)]
        if let known = try tx.query(Self.itemForSourceSQL, sourceKey).first, try known.text("sha256") == r.sha256.hex {
            return .alreadyKnown(try known.item())
        }
        // Two nodes taking in the same content at once: the unique sha256 decides, and the
        // loser reads the winner's row (ON CONFLICT DO NOTHING returns nothing then).
        let mtime = Date(timeIntervalSince1970: Double(r.mtimeNanos) / 1e9)
        let inserted = try tx.query("""
            INSERT INTO item (sha256, size, state, media_json, date_taken, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (sha256) DO NOTHING RETURNING *
            """, [r.sha256.hex, String(r.size), ItemState.ingested.rawValue, mediaJSON, pg(r.media?.creationTime ?? mtime),
                  pg(now)]).first
        let created = inserted != nil
        guard let itemRow = try inserted ?? tx.query("SELECT * FROM item WHERE sha256 = $1 FOR UPDATE", [r.sha256.hex]).first else {
            throw CatalogError.notFound("item \(r.sha256.hex)")
        }
        let item = try itemRow.item()
        guard let source = try tx.query("""
            INSERT INTO source (item_id, path, name, rule, device, inode, size, mtime_nanos, seen_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id
            """, [String(item.id), r.path, name, r.rule] + sourceKey.dropFirst().map(Optional.some) + [pg(now)]).first else {
            throw CatalogError.notFound("source row for \(r.path)")
        }
        let sourceID = try source.int64("id")
        let event = r.sightingEvent(created: created)
        _ = try Self.appendEvent(tx, itemID: item.id, kind: event.kind, actor: r.actor, details: event.details)
        for job in r.sightingJobs(created: created, itemID: item.id, itemIsDone: item.state == .done,
                                  source: SourceRef(id: sourceID, path: r.path)) {
            _ = try Self.insertJob(tx, job.spec, itemID: item.id, dedupeKey: job.dedupeKey, now: now)
        }
        if created, r.rule != nil, r.supersedes != .none {
            // New content at a path taken before under the same rule: the earlier items are
            // earlier versions (a file still growing, or replaced).
            let earlier = try tx.query("""
                UPDATE item SET superseded_by = $3, updated_at = $5 WHERE superseded_by IS NULL AND id <> $3 AND ($4 OR state <> 'done')
                  AND id IN (SELECT item_id FROM source WHERE path = $1 AND rule IS NOT DISTINCT FROM $2)
                RETURNING id
                """, [r.path, r.rule, String(item.id), pg(r.supersedes == .all), pg(now)]).all.map { try $0.int64("id") }.sorted()
            for id in earlier {
                _ = try Self.appendEvent(tx, itemID: id, kind: .superseded, actor: r.actor, details: r.supersededEvent(successor: item.id))
            }
        }
        try tx.query("UPDATE quarantine SET resolved = true WHERE path = $1 AND NOT resolved", [r.path])
        return created ? .created(item) : .duplicate(item)
    }

    public func recordQuarantine(path: String, rule: String?, reason: String) throws(CatalogError) -> QuarantineEntry {
        try write(custody: true) { tx in
            guard let row = try tx.query("""
                INSERT INTO quarantine (path, rule, reason, at, resolved) VALUES ($1, $2, $3, $4, false) RETURNING *
                """, [path, rule, reason, pg(Date())]).first else { throw CatalogError.notFound("quarantine row") }
            var details = ["path": path, "reason": reason]
            if let rule { details["rule"] = rule }
            _ = try Self.appendEvent(tx, itemID: nil, kind: .quarantined, actor: "evidence", details: details)
            return try row.quarantine()
        }
    }

    @discardableResult
    public func appendEvent(itemID: Int64?, kind: CustodyEventKind, details: [String: String]) throws(CatalogError) -> CustodyEvent {
        try appendEvent(itemID: itemID, kind: kind, actor: "evidence", details: details)
    }

    @discardableResult
    public func appendEvent(itemID: Int64?, kind: CustodyEventKind, actor: String, details: [String: String]) throws(CatalogError) -> CustodyEvent {
        try write(custody: true) { tx in try Self.appendEvent(tx, itemID: itemID, kind: kind, actor: actor, details: details) }
    }

    static func item(_ tx: Tx, _ id: Int64, forUpdate: Bool = false) throws -> Item {
        guard let row = try tx.query("SELECT * FROM item WHERE id = $1" + (forUpdate ? " FOR UPDATE" : ""), [String(id)]).first else {
            throw CatalogError.notFound("item \(id)")
        }
        return try row.item()
    }

    // MARK: Reads

    public func item(id: Int64) throws(CatalogError) -> Item? {
        try read { c in try c.query("SELECT * FROM item WHERE id = $1", [String(id)]).first?.item() }
    }

    public func item(sha256: SHA256Digest) throws(CatalogError) -> Item? {
        try read { c in try c.query("SELECT * FROM item WHERE sha256 = $1", [sha256.hex]).first?.item() }
    }

    public func items(matching reference: String) throws(CatalogError) -> [Item] {
        let absolute = reference.hasPrefix("/") ? reference : FileManager.default.currentDirectoryPath + "/" + reference
        let normalized = (absolute as NSString).standardizingPath
        return try read { c in
            var rows: [PGRow] = []
            if let id = Int64(reference), let r = try c.query("SELECT * FROM item WHERE id = $1", [String(id)]).first { rows.append(r) }
            let hex = reference.lowercased()
            if hex.count >= 4, hex.count <= 64, hex.allSatisfy(\.isHexDigit) {
                rows += try c.query("SELECT * FROM item WHERE sha256 COLLATE \"C\" >= $1 AND sha256 COLLATE \"C\" < $2 ORDER BY id",
                                    [hex, hex + "g"]).all
            }
            rows += try c.query("""
                SELECT * FROM item WHERE id IN (SELECT item_id FROM source WHERE path IN ($1, $2, $3)) ORDER BY id
                """, [reference, absolute, normalized]).all
            var seen = Set<Int64>()
            return try rows.map { try $0.item() }.filter { seen.insert($0.id).inserted }
        }
    }

    public func allItems() throws(CatalogError) -> [Item] {
        try read { c in try c.query("SELECT * FROM item ORDER BY id").all.map { try $0.item() } }
    }

    public func itemForSource(path: String, device: UInt64, inode: UInt64, size: Int64, mtimeNanos: Int64) throws(CatalogError) -> Item? {
        try read { c in
            try c.query(Self.itemForSourceSQL, [path, String(Int64(bitPattern: device)), String(Int64(bitPattern: inode)),
                                                String(size), String(mtimeNanos)]).first?.item()
        }
    }

    public func sources(itemID: Int64) throws(CatalogError) -> [SourceSighting] {
        try read { c in try c.query("SELECT * FROM source WHERE item_id = $1 ORDER BY id", [String(itemID)]).all.map { try $0.source() } }
    }

    public func allSources() throws(CatalogError) -> [SourceSighting] {
        try read { c in try c.query("SELECT * FROM source ORDER BY id").all.map { try $0.source() } }
    }

    public func events(itemID: Int64) throws(CatalogError) -> [CustodyEvent] {
        try read { c in try c.query("SELECT * FROM custody_event WHERE item_id = $1 ORDER BY seq", [String(itemID)]).all.map { try $0.event() } }
    }

    public func lastEvent() throws(CatalogError) -> CustodyEvent? {
        try read { c in try c.query("SELECT * FROM custody_event ORDER BY seq DESC LIMIT 1").first?.event() }
    }

    public func allEvents() throws(CatalogError) -> [CustodyEvent] {
        try read { c in try c.query("SELECT * FROM custody_event ORDER BY seq").all.map { try $0.event() } }
    }

    public func eventHashes(through seq: Int64) throws(CatalogError) -> [(seq: Int64, hash: String)] {
        try read { c in
            try c.query("SELECT seq, hash FROM custody_event WHERE seq <= $1 ORDER BY seq", [String(seq)]).all
                .map { row throws(PGError) in (try row.int64("seq"), try row.text("hash")) }
        }
    }

    public func events(kinds: [CustodyEventKind]) throws(CatalogError) -> [CustodyEvent] {
        try read { c in
            try c.query("SELECT * FROM custody_event WHERE kind = ANY($1::text[]) ORDER BY seq",
                        ["{" + kinds.map(\.rawValue).joined(separator: ",") + "}"]).all.map { try $0.event() }
        }
    }

    public func quarantine(includeResolved: Bool) throws(CatalogError) -> [QuarantineEntry] {
        try read { c in
            try c.query("SELECT * FROM quarantine" + (includeResolved ? "" : " WHERE NOT resolved") + " ORDER BY id").all
                .map { try $0.quarantine() }
        }
    }

    public func pendingItems(olderThan cutoff: Date?) throws(CatalogError) -> [Item] {
        try read { c in
            try c.query("""
                SELECT * FROM item WHERE state NOT IN ('done', 'failed') AND superseded_by IS NULL AND created_at <= $1 ORDER BY created_at
                """, [pg(cutoff ?? .distantFuture)]).all.map { try $0.item() }
        }
    }

    public func summary() throws(CatalogError) -> CatalogSummary {
        try read { c in
            var s = CatalogSummary()
            for row in try c.query("""
                SELECT CASE WHEN superseded_by IS NULL THEN state ELSE 'superseded' END AS state, COUNT(*) AS n,
                       COALESCE(SUM(size), 0) AS b, COUNT(*) FILTER (WHERE size = 0) AS e FROM item GROUP BY 1
                """).all {
                let n = try row.int("n")
                s.empty += try row.int("e")
                s.byState[try row.text("state")] = n
                s.items += n
                s.bytes += try row.int64("b")
            }
            s.quarantined = try c.query("SELECT COUNT(*) AS n FROM quarantine WHERE NOT resolved").first?.int("n") ?? 0
            s.oldestPending = try c.query("SELECT MIN(created_at) AS m FROM item WHERE state NOT IN ('done', 'failed') AND superseded_by IS NULL")
                .first?.optionalDate("m")
            s.sources = try c.query("SELECT COUNT(*) AS n FROM source").first?.int("n") ?? 0
            s.events = try c.query("SELECT COUNT(*) AS n FROM custody_event").first?.int("n") ?? 0
            for row in try c.query("""
                SELECT COALESCE(s.rule, '(manual)') AS rule, CASE WHEN i.superseded_by IS NULL THEN i.state ELSE 'superseded' END AS state,
                       COUNT(DISTINCT i.id) AS n
                FROM source s JOIN item i ON i.id = s.item_id GROUP BY 1, 2
                """).all {
                s.byRule[try row.text("rule"), default: [:]][try row.text("state")] = try row.int("n")
            }
            for row in try c.query("SELECT actor, COUNT(*) AS n FROM custody_event WHERE kind = 'ingested' GROUP BY actor").all {
                s.takenInByNode[NodeName.of(actor: try row.text("actor")), default: 0] += try row.int("n")
            }
            for row in try c.query("""
                SELECT lease_owner, COUNT(*) AS n FROM job WHERE state = 'running' AND lease_owner IS NOT NULL GROUP BY lease_owner
                """).all {
                let owner = try row.text("lease_owner")
                s.runningByNode[NodeName.of(leaseOwner: owner) ?? owner, default: 0] += try row.int("n")
            }
            return s
        }
    }

    public func verifyChain() throws(CatalogError) -> ChainReport {
        verifyChain(events: try allEvents())
    }

    public func verifyChain(events: [CustodyEvent]) -> ChainReport {
        ChainCheck.verify(events: events, headPath: headPath)
    }
}

extension PostgresCatalog {
    public func items(sha256Prefix: String, limit: Int) throws(CatalogError) -> [Item] {
        let hex = sha256Prefix.lowercased()
        guard (4...64).contains(hex.count), hex.allSatisfy(\.isHexDigit) else { return [] }
        return try read { c in
            try c.query("SELECT * FROM item WHERE sha256 COLLATE \"C\" >= $1 AND sha256 COLLATE \"C\" < $2 ORDER BY id DESC LIMIT $3",
                        [hex, hex + "g", pg(limit)]).all.map { try $0.item() }
        }
    }

    public func items(nameContaining text: String, limit: Int) throws(CatalogError) -> [Item] {
        guard !text.isEmpty else { return [] }
        // strpos() rather than LIKE, so `%` and `_` in what an auditor types match themselves.
        return try read { c in
            try c.query("""
                SELECT * FROM item WHERE id IN (SELECT item_id FROM source WHERE strpos(lower(name), lower($1)) > 0)
                ORDER BY id DESC LIMIT $2
                """, [text, pg(limit)]).all.map { try $0.item() }
        }
    }

    public func items(ingestedFrom from: Date, to: Date, limit: Int) throws(CatalogError) -> [Item] {
        try read { c in
            try c.query("SELECT * FROM item WHERE created_at >= $1 AND created_at < $2 ORDER BY id DESC LIMIT $3",
                        [pg(from), pg(to), pg(limit)]).all.map { try $0.item() }
        }
    }

    public func recentItems(limit: Int) throws(CatalogError) -> [Item] {
        try read { c in try c.query("SELECT * FROM item ORDER BY id DESC LIMIT $1", [pg(limit)]).all.map { try $0.item() } }
    }

    public func items(state: ItemState, limit: Int) throws(CatalogError) -> [Item] {
        try read { c in
            try c.query("SELECT * FROM item WHERE state = $1 ORDER BY updated_at LIMIT $2", [state.rawValue, pg(limit)]).all
                .map { try $0.item() }
        }
    }
}
