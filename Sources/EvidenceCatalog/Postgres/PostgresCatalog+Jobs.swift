import EvidenceCore
import Foundation

extension PostgresCatalog {
    static func insertJob(_ tx: Tx, _ spec: JobSpec, itemID: Int64?, dedupeKey: String, now: Date) throws -> QueuedJob {
        let payload = String(decoding: try CanonicalJSON.encode(spec.payload.fields), as: UTF8.self)
        if let row = try tx.query("""
            INSERT INTO job (kind, item_id, state, attempts, max_attempts, next_run_at, payload, dedupe_key, created_at, updated_at)
            VALUES ($1, $2, 'queued', 0, $3, $4, $5, $6, $7, $7) ON CONFLICT (dedupe_key) DO NOTHING RETURNING *
            """, [spec.kind.rawValue, pg(itemID), pg(spec.maxAttempts), pg(spec.runAt ?? now), payload, dedupeKey, pg(now)]).first {
            return try row.jobRow().model()
        }
        guard let existing = try tx.query("SELECT * FROM job WHERE dedupe_key = $1", [dedupeKey]).first else {
            throw CatalogError.notFound("job \(dedupeKey)")
        }
        return try existing.jobRow().model()
    }

    public func enqueue(_ spec: JobSpec, itemID: Int64?, dedupeKey: String) throws(CatalogError) -> QueuedJob {
        try write { tx in try Self.insertJob(tx, spec, itemID: itemID, dedupeKey: dedupeKey, now: Date()) }
    }

    /// Takes the most overdue runnable job with `FOR UPDATE SKIP LOCKED`: rows another node is
    /// claiming at this moment are passed over, never waited for, never taken twice.
    public func claimJob(kinds: [JobKind], owner: String, lease: Double, now: Date) throws(CatalogError) -> QueuedJob? {
        guard !kinds.isEmpty else { return nil }
        return try write(durable: false) { tx in try Self.claimNext(tx, kinds: kinds, owner: owner, lease: lease, now: now) }
    }

    /// `claimJob(kinds:…)` inside the caller's transaction.
    static func claimNext(_ tx: Tx, kinds: [JobKind], owner: String, lease: Double, now: Date) throws -> QueuedJob? {
        guard !kinds.isEmpty else { return nil }
        while let row = try tx.query("""
            UPDATE job SET state = 'running', lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1, updated_at = $3
            WHERE id IN (
              SELECT id FROM job WHERE kind = ANY($4::text[]) AND
                ((state = 'queued' AND next_run_at <= $3) OR (state = 'running' AND lease_expires_at < $3))
              ORDER BY next_run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING *
            """, [owner, pg(now.addingTimeInterval(lease)), pg(now), pgArray(kinds.map(\.rawValue))]).first {
            let jobRow = try row.jobRow()
            do {
                return try jobRow.model()
            } catch {
                // Unreadable parameters: fail it for good, visibly, and take the next one.
                try tx.query("UPDATE job SET state = 'failed', lease_owner = NULL, lease_expires_at = NULL, last_error = $2 WHERE id = $1",
                             [pg(jobRow.id), "\(error)"])
            }
        }
        return nil
    }

    public func claimJob(id: Int64, owner: String, lease: Double, now: Date) throws(CatalogError) -> QueuedJob? {
        try write(durable: false) { tx in
            try tx.query("""
                UPDATE job SET state = 'running', lease_owner = $2, lease_expires_at = $3, attempts = attempts + 1,
                  max_attempts = GREATEST(max_attempts, attempts + 1), updated_at = $4
                WHERE id = $1 AND (state IN ('queued', 'failed') OR (state = 'running' AND lease_expires_at < $4))
                RETURNING *
                """, [pg(id), owner, pg(now.addingTimeInterval(lease)), pg(now)]).first?.jobRow().model()
        }
    }

    public func completeJob(_ id: Int64, owner: String, transition: JobTransition?) throws(CatalogError) {
        try write(custody: transition != nil) { tx in try Self.complete(tx, id, owner: owner, transition: transition) }
    }

    public func completeJob(_ id: Int64, owner: String, transition: JobTransition?, thenClaim next: NextClaim) throws(CatalogError) -> QueuedJob? {
        try write(custody: transition != nil) { tx in
            try Self.complete(tx, id, owner: owner, transition: transition)
            // In a savepoint of its own: a claim that fails leaves the completion to commit
            // (PostgreSQL aborts the whole transaction at an error otherwise).
            try tx.query("SAVEPOINT claim")
            do {
                let claimed = try Self.claimNext(tx, kinds: next.kinds, owner: owner, lease: next.lease, now: next.now)
                try tx.query("RELEASE SAVEPOINT claim")
                return claimed
            } catch {
                try tx.query("ROLLBACK TO SAVEPOINT claim")
                return nil
            }
        }
    }

    static func complete(_ tx: Tx, _ id: Int64, owner: String, transition: JobTransition?) throws {
        let row = try Self.leasedJob(tx, id, owner)
        try tx.query("""
            UPDATE job SET state = 'done', lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = $2 WHERE id = $1
            """, [pg(id), pg(Date())])
        if let t = transition, let itemID = row.itemId { try Self.applyTransition(tx, itemID: itemID, t) }
    }

    @discardableResult
    public func failJob(_ id: Int64, owner: String, error: String, retryAt: Date?, onGiveUp: JobTransition?) throws(CatalogError) -> QueuedJob {
        try write(custody: onGiveUp != nil) { tx in
            let row = try Self.leasedJob(tx, id, owner)
            let retry = retryAt != nil && row.attempts < row.maxAttempts
            let updated = try tx.query("""
                UPDATE job SET last_error = $2, lease_owner = NULL, lease_expires_at = NULL, updated_at = $3,
                  state = $4, next_run_at = COALESCE($5, next_run_at)
                WHERE id = $1 RETURNING *
                """, [pg(id), error, pg(Date()), retry ? "queued" : "failed", retry ? pg(retryAt) : nil]).first
            if !retry, let t = onGiveUp, let itemID = row.itemId { try Self.applyTransition(tx, itemID: itemID, t) }
            guard let updated else { throw CatalogError.notFound("job \(id)") }
            return try updated.jobRow().model()
        }
    }

    public func releaseJob(_ id: Int64, owner: String, runAt: Date) throws(CatalogError) {
        try write(durable: false) { tx in
            _ = try Self.leasedJob(tx, id, owner)
            try tx.query("""
                UPDATE job SET state = 'queued', attempts = GREATEST(0, attempts - 1), lease_owner = NULL, lease_expires_at = NULL,
                  next_run_at = $2, updated_at = $3 WHERE id = $1
                """, [pg(id), pg(runAt), pg(Date())])
        }
    }

    public func holdJob(_ id: Int64, owner: String, runAt: Date, note: String) throws(CatalogError) {
        try write(durable: false) { tx in
            _ = try Self.leasedJob(tx, id, owner)
            try tx.query("""
                UPDATE job SET state = 'queued', attempts = GREATEST(0, attempts - 1), lease_owner = NULL, lease_expires_at = NULL,
                  next_run_at = $2, updated_at = $3, last_error = $4 WHERE id = $1
                """, [pg(id), pg(runAt), pg(Date()), note])
        }
    }

    @discardableResult
    public func wakeQueuedJobs(kinds: [JobKind], now: Date) throws(CatalogError) -> Int {
        guard !kinds.isEmpty else { return 0 }
        return try write(durable: false) { tx in
            try tx.query("""
                UPDATE job SET next_run_at = $1 WHERE state = 'queued' AND next_run_at > $1 AND kind = ANY(string_to_array($2, ','))
                RETURNING id
                """, [pg(now), kinds.map(\.rawValue).joined(separator: ",")]).all.count
        }
    }

    public func wakeQueuedJobs(itemID: Int64, now: Date) throws(CatalogError) -> Int {
        try write(durable: false) { tx in
            try tx.query("UPDATE job SET next_run_at = $1 WHERE state = 'queued' AND next_run_at > $1 AND item_id = $2 RETURNING id",
                         [pg(now), String(itemID)]).all.count
        }
    }

    public func wakeQueuedJobs(itemID: Int64, kinds: [JobKind], now: Date) throws(CatalogError) -> Int {
        guard !kinds.isEmpty else { return 0 }
        return try write(durable: false) { tx in
            try tx.query("""
                UPDATE job SET next_run_at = $1 WHERE state = 'queued' AND next_run_at > $1 AND item_id = $2
                  AND kind = ANY(string_to_array($3, ',')) RETURNING id
                """, [pg(now), String(itemID), kinds.map(\.rawValue).joined(separator: ",")]).all.count
        }
    }

    @discardableResult
    public func finishQueuedJobs(ids: [Int64]) throws(CatalogError) -> Int {
        guard !ids.isEmpty else { return 0 }
        return try write { tx in
            try tx.query("""
                UPDATE job SET state = 'done', lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = $1
                WHERE state = 'queued' AND id = ANY(string_to_array($2, ',')::bigint[]) RETURNING id
                """, [pg(Date()), ids.map(String.init).joined(separator: ",")]).all.count
        }
    }

    public func metaEntries(prefix: String) throws(CatalogError) -> [String: String] {
        try read { c in
            let rows = try c.query("SELECT key, value FROM meta WHERE left(key, length($1)) = $1", [prefix]).all
            return Dictionary(try rows.map { (try $0.text("key"), try $0.text("value")) }, uniquingKeysWith: { a, _ in a })
        }
    }

    public func setMeta(_ key: String, _ value: String?) throws(CatalogError) {
        try write { tx in
            if let value {
                _ = try tx.query("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", [key, value])
            } else {
                _ = try tx.query("DELETE FROM meta WHERE key = $1", [key])
            }
        }
    }

    public func leaseOwners() throws(CatalogError) -> [String] {
        try read { c in
            try c.query("SELECT DISTINCT lease_owner FROM job WHERE state = 'running' AND lease_owner IS NOT NULL ORDER BY lease_owner")
                .all.map { try $0.text("lease_owner") }
        }
    }

    public func releaseLeases(owners: [String]) throws(CatalogError) -> Int {
        guard !owners.isEmpty else { return 0 }
        return try write { tx in
            try tx.query("""
                UPDATE job SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = $1
                WHERE state = 'running' AND lease_owner = ANY($2::text[]) RETURNING id
                """, [pg(Date()), pgArray(owners)]).count
        }
    }

    public func renewLease(_ id: Int64, owner: String, lease: Double, now: Date) throws(CatalogError) -> Bool {
        try write(durable: false) { tx in
            try tx.query("""
                UPDATE job SET lease_expires_at = $1, updated_at = $2 WHERE id = $3 AND state = 'running' AND lease_owner = $4 RETURNING id
                """, [pg(now.addingTimeInterval(lease)), pg(now), pg(id), owner]).count == 1
        }
    }

    public func nextJobDue(kinds: [JobKind]) throws(CatalogError) -> Date? {
        try read { c in
            // A running job's lease end counts: a node that stopped renewing is taken over then.
            try c.query("""
                SELECT MIN(CASE WHEN state = 'queued' THEN next_run_at ELSE lease_expires_at END) AS m
                FROM job WHERE state IN ('queued', 'running') AND kind = ANY($1::text[])
                """, [pgArray(kinds.map(\.rawValue))]).first?.optionalDate("m")
        }
    }

    public func jobs(itemID: Int64) throws(CatalogError) -> [QueuedJob] {
        try read { c in
            // As in SQLite: an unknown state or kind is refused; a job whose parameters cannot be
            // read (failed when claimed) is left out.
            try c.query("SELECT * FROM job WHERE item_id = $1 ORDER BY id", [pg(itemID)]).all.map { try $0.jobRow() }
                .compactMap { try? $0.model() }
        }
    }

    public func troubledJobs(limit: Int) throws(CatalogError) -> [QueuedJob] {
        try read { c in
            try c.query("""
                SELECT * FROM job WHERE state = 'failed' OR (state IN ('queued', 'running') AND last_error IS NOT NULL)
                ORDER BY updated_at DESC LIMIT $1
                """, [pg(limit)]).all.map { try $0.jobRow() }.compactMap { try? $0.model() }
        }
    }

    public func jobCounts() throws(CatalogError) -> [String: Int] {
        try read { c in
            var out: [String: Int] = [:]
            for row in try c.query("SELECT state, COUNT(*) AS n FROM job GROUP BY state").all { out[try row.text("state")] = try row.int("n") }
            return out
        }
    }

    public func jobCountsByKind() throws(CatalogError) -> [String: [String: Int]] {
        try read { c in
            var out: [String: [String: Int]] = [:]
            for row in try c.query("SELECT kind, state, COUNT(*) AS n FROM job GROUP BY kind, state").all {
                out[try row.text("kind"), default: [:]][try row.text("state")] = try row.int("n")
            }
            return out
        }
    }

    public func retryFailed(itemID: Int64?,
                            then decide: @escaping @Sendable (_ state: ItemState, _ failedFrom: ItemState?) -> JobTransition?)
        throws(CatalogError) -> Int
    {
        try write(custody: true) { tx in
            let now = Date()
            let rows = try tx.query("""
                UPDATE job SET state = 'queued', attempts = 0, next_run_at = $1, updated_at = $1
                WHERE state = 'failed' AND ($2::bigint IS NULL OR item_id = $2) RETURNING *
                """, [pg(now), pg(itemID)]).all.map { try $0.jobRow() }
            for row in rows.sorted(by: { ($0.id ?? 0) < ($1.id ?? 0) }) {
                if let item = row.itemId {
                    _ = try Self.appendEvent(tx, itemID: item, kind: .retry, actor: "operator",
                                             details: ["job": row.kind.rawValue, "last_error": row.lastError ?? ""])
                }
            }
            for id in Set(rows.compactMap(\.itemId)).sorted() {
                guard let item = try tx.query("SELECT * FROM item WHERE id = $1 FOR UPDATE", [pg(id)]).first?.itemRow() else { continue }
                if let transition = decide(item.state, item.failedFrom) { try Self.applyTransition(tx, itemID: id, transition) }
            }
            return rows.count
        }
    }

    static func leasedJob(_ tx: Tx, _ id: Int64, _ owner: String) throws -> JobRow {
        guard let row = try tx.query("SELECT * FROM job WHERE id = $1 FOR UPDATE", [pg(id)]).first.map({ try $0.jobRow() }),
              row.state == .running, row.leaseOwner == owner else {
            throw CatalogError.notFound("job \(id) leased by \(owner) (the lease expired and was taken over)")
        }
        return row
    }

    static func applyTransition(_ tx: Tx, itemID: Int64, _ t: JobTransition) throws {
        let item = try Self.item(tx, itemID, forUpdate: true)
        try insertArchivedFiles(tx, t.archivedFiles)
        for certificate in t.certificates { try insertCertificate(tx, certificate) }
        var d = t.details
        if let r = t.reason { d["reason"] = r }
        let now = Date()
        if let state = t.state, state != item.state {
            d["from"] = item.state.rawValue
            d["to"] = state.rawValue
            // Kept with the item in the same transaction: where a retry takes it back to.
            try tx.query("UPDATE item SET state = $2, state_reason = $3, updated_at = $4, failed_from = $5 WHERE id = $1",
                         [pg(itemID), state.rawValue, t.reason, pg(now), state == .failed ? item.state.rawValue : nil])
        }
        _ = try appendEvent(tx, itemID: itemID, kind: t.event, actor: "evidence", details: d)
        for spec in t.jobs {
            _ = try insertJob(tx, spec, itemID: itemID, dedupeKey: spec.itemKey(itemID), now: now)
        }
        if !t.wake.isEmpty {
            try tx.query("""
                UPDATE job SET next_run_at = $1, updated_at = $1
                WHERE item_id = $2 AND kind = ANY($3::text[]) AND state = 'queued' AND next_run_at > $1
                """, [pg(now), pg(itemID), pgArray(t.wake.map(\.rawValue))])
        }
    }
}
