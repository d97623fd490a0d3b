import EvidenceCore
import Foundation
import GRDB

extension SQLiteCatalog {
    static func insertJob(_ db: Database, _ spec: JobSpec, itemID: Int64?, dedupeKey: String, now: Date) throws -> QueuedJob {
        if let existing = try jobRow(db, dedupeKey: dedupeKey) { return try existing.model() }
        var row = JobRow(id: nil, kind: spec.kind, itemId: itemID, state: .queued, attempts: 0,
                         maxAttempts: spec.maxAttempts, nextRunAt: spec.runAt ?? now, leaseOwner: nil,
                         leaseExpiresAt: nil, lastError: nil,
                         payload: String(decoding: try CanonicalJSON.encode(spec.payload.fields), as: UTF8.self),
                         dedupeKey: dedupeKey, createdAt: now, updatedAt: now)
        try row.insertRow(db)
        row.id = db.lastInsertedRowID
        return try row.model()
    }

    public func enqueue(_ spec: JobSpec, itemID: Int64?, dedupeKey: String) throws(CatalogError) -> QueuedJob {
        // A job already there (every member of a time-stamp window enqueues the window's one
        // job) is read, not written: no transaction. Jobs are never deleted, so what a read
        // finds stays; a miss is checked again inside the write.
        if let existing = try readStatement({ db in try Self.jobRow(db, dedupeKey: dedupeKey)?.model() }) { return existing }
        return try write { db in try Self.insertJob(db, spec, itemID: itemID, dedupeKey: dedupeKey, now: Date()) }
    }

    public func claimJob(kinds: [JobKind], owner: String, lease: Double, now: Date) throws(CatalogError) -> QueuedJob? {
        guard !kinds.isEmpty else { return nil }
        return try write(durable: false) { db in try Self.claimNext(db, kinds: kinds, owner: owner, lease: lease, now: now) }
    }

    /// `claimJob(kinds:…)` inside the caller's transaction.
    static func claimNext(_ db: Database, kinds: [JobKind], owner: String, lease: Double, now: Date) throws -> QueuedJob? {
        guard !kinds.isEmpty else { return nil }
        let marks = kinds.map { _ in "?" }.joined(separator: ",")
        let args = StatementArguments(kinds.map(\.rawValue) + [StoredDate.text(now)])
        // Two queries, each walking the (state, next_run_at) index in order and stopping at the
        // first row, rather than one with an OR whose matches (every due job: thousands in a
        // burst) were gathered and sorted at every claim. The earlier of the two is taken, as
        // one ordered query (and PostgreSQL's) would.
        let expired = try db.cachedStatement(sql: """
            SELECT * FROM job WHERE kind IN (\(marks)) AND state = 'running' AND lease_expires_at < ?
            ORDER BY next_run_at, id LIMIT 1
            """)
        let due = try db.cachedStatement(sql: """
            SELECT * FROM job WHERE kind IN (\(marks)) AND state = 'queued' AND next_run_at <= ?
            ORDER BY next_run_at, id LIMIT 1
            """)
        func next() throws -> JobRow? {
            let (a, b) = (try JobRow.fetchOne(expired, arguments: args), try JobRow.fetchOne(due, arguments: args))
            guard let a else { return b }
            guard let b else { return a }
            return (a.nextRunAt, a.id ?? 0) <= (b.nextRunAt, b.id ?? 0) ? a : b
        }
        while var row = try next() {
            let job: QueuedJob
            do {
                job = try row.model()
            } catch {
                // Unreadable parameters: fail it for good, visibly, and take the next one.
                row.state = .failed
                row.lastError = "\(error)"
                row.updatedAt = now
                try row.updateRow(db)
                continue
            }
            let expires = now.addingTimeInterval(lease)
            try db.cachedStatement(sql: """
                UPDATE job SET state = 'running', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1,
                  updated_at = ? WHERE id = ?
                """).execute(arguments: [owner, StoredDate.text(expires), StoredDate.text(now), row.id])
            var claimed = job
            claimed.state = .running
            claimed.leaseOwner = owner
            claimed.leaseExpiresAt = expires
            claimed.attempts = row.attempts + 1
            claimed.updatedAt = now
            return claimed
        }
        return nil
    }

    /// Claims one given job, whatever its due time, when it is queued, failed (a manual retry)
    /// or held by an expired lease; nil when another runner holds it or it is done.
    public func claimJob(id: Int64, owner: String, lease: Double, now: Date) throws(CatalogError) -> QueuedJob? {
        try write(durable: false) { db in
            guard var row = try Self.jobRow(db, id) else { return nil }
            let free = row.state == .queued || row.state == .failed
                || (row.state == .running && (row.leaseExpiresAt ?? .distantPast) < now)
            guard free else { return nil }
            row.state = .running
            row.leaseOwner = owner
            row.leaseExpiresAt = now.addingTimeInterval(lease)
            row.attempts += 1
            row.maxAttempts = max(row.maxAttempts, row.attempts)
            row.updatedAt = now
            try row.updateRow(db)
            return try row.model()
        }
    }

    /// Marks the job done; optionally moves its item to `transition.state` with an event, in
    /// the same transaction. Refused (notFound) when the lease was lost to another runner.
    public func completeJob(_ id: Int64, owner: String, transition: JobTransition?) throws(CatalogError) {
        try write { db in try Self.complete(db, id, owner: owner, transition: transition) }
    }

    public func completeJob(_ id: Int64, owner: String, transition: JobTransition?, thenClaim next: NextClaim) throws(CatalogError) -> QueuedJob? {
        try write { db in
            try Self.complete(db, id, owner: owner, transition: transition)
            // In a savepoint of its own: a claim that fails leaves the completion to commit,
            // unless SQLite ended the whole transaction (disk full, I/O error): that error is
            // the write's, and nothing of it is committed.
            do {
                return try Self.inSavepoint(db) { try Self.claimNext(db, kinds: next.kinds, owner: owner, lease: next.lease, now: next.now) }
            } catch {
                if !db.isInsideTransaction { throw error }
                return nil
            }
        }
    }

    static func complete(_ db: Database, _ id: Int64, owner: String, transition: JobTransition?) throws {
        guard let leased = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT item_id FROM job WHERE id = ? AND state = 'running' AND lease_owner = ?
            """), arguments: [id, owner]) else {
            throw CatalogError.notFound("job \(id) leased by \(owner) (the lease expired and was taken over)")
        }
        let itemID: Int64? = leased["item_id"]
        try db.cachedStatement(sql: """
            UPDATE job SET state = 'done', lease_owner = NULL, lease_expires_at = NULL, last_error = NULL,
              updated_at = ? WHERE id = ?
            """).execute(arguments: [StoredDate.text(Date()), id])
        if let t = transition, let itemID {
            try Self.applyTransition(db, itemID: itemID, t)
        }
    }

    /// Records a failed attempt. With `retryAt`, the job waits until then; without, or when
    /// attempts are used up, it is failed for good (and `onGiveUp` is applied to its item).
    @discardableResult
    public func failJob(_ id: Int64, owner: String, error: String, retryAt: Date?,
                        onGiveUp: JobTransition?) throws(CatalogError) -> QueuedJob {
        try write { db in
            var row = try Self.leasedJob(db, id, owner)
            row.lastError = error
            row.leaseOwner = nil
            row.leaseExpiresAt = nil
            row.updatedAt = Date()
            if let retryAt, row.attempts < row.maxAttempts {
                row.state = .queued
                row.nextRunAt = retryAt
            } else {
                row.state = .failed
                if let t = onGiveUp, let itemID = row.itemId { try Self.applyTransition(db, itemID: itemID, t) }
            }
            try row.updateRow(db)
            return try row.model()
        }
    }

    /// Puts a job back without counting the attempt (its precondition is not met yet, or the
    /// runner is shutting down).
    public func releaseJob(_ id: Int64, owner: String, runAt: Date) throws(CatalogError) {
        try requeue(id, owner: owner, runAt: runAt, note: nil)
    }

    public func holdJob(_ id: Int64, owner: String, runAt: Date, note: String) throws(CatalogError) {
        try requeue(id, owner: owner, runAt: runAt, note: note)
    }

    /// Back to the queue, the attempt not counted; `note` (when given) as its last error.
    private func requeue(_ id: Int64, owner: String, runAt: Date, note: String?) throws(CatalogError) {
        try write(durable: false) { db in
            var row = try Self.leasedJob(db, id, owner)
            row.state = .queued
            row.attempts = max(0, row.attempts - 1)
            row.leaseOwner = nil
            row.leaseExpiresAt = nil
            row.nextRunAt = runAt
            if let note { row.lastError = note }
            row.updatedAt = Date()
            try row.updateRow(db)
        }
    }

    @discardableResult
    public func wakeQueuedJobs(kinds: [JobKind], now: Date) throws(CatalogError) -> Int {
        guard !kinds.isEmpty else { return 0 }
        return try write(durable: false) { db in
            let marks = Array(repeating: "?", count: kinds.count).joined(separator: ", ")
            try db.execute(sql: "UPDATE job SET next_run_at = ? WHERE state = 'queued' AND next_run_at > ? AND kind IN (\(marks))",
                           arguments: StatementArguments([StoredDate.text(now), StoredDate.text(now)] + kinds.map(\.rawValue)))
            return db.changesCount
        }
    }

    public func wakeQueuedJobs(itemID: Int64, now: Date) throws(CatalogError) -> Int {
        try write(durable: false) { db in
            try db.execute(sql: "UPDATE job SET next_run_at = ? WHERE state = 'queued' AND next_run_at > ? AND item_id = ?",
                           arguments: [StoredDate.text(now), StoredDate.text(now), itemID])
            return db.changesCount
        }
    }

    public func wakeQueuedJobs(itemID: Int64, kinds: [JobKind], now: Date) throws(CatalogError) -> Int {
        guard !kinds.isEmpty else { return 0 }
        return try write(durable: false) { db in
            let marks = kinds.map { _ in "?" }.joined(separator: ",")
            var args: [any DatabaseValueConvertible] = [StoredDate.text(now), StoredDate.text(now), itemID]
            args += kinds.map(\.rawValue)
            try db.execute(sql: "UPDATE job SET next_run_at = ? WHERE state = 'queued' AND next_run_at > ? AND item_id = ? AND kind IN (\(marks))",
                           arguments: StatementArguments(args))
            return db.changesCount
        }
    }

    @discardableResult
    public func finishQueuedJobs(ids: [Int64]) throws(CatalogError) -> Int {
        guard !ids.isEmpty else { return 0 }
        return try write { db in
            var finished = 0
            let now = StoredDate.text(Date())
            // In slices: SQLite limits a statement's parameters.
            for start in stride(from: 0, to: ids.count, by: 500) {
                let slice = ids[start..<min(ids.count, start + 500)]
                let marks = slice.map { _ in "?" }.joined(separator: ",")
                try db.execute(sql: """
                    UPDATE job SET state = 'done', lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = ?
                    WHERE state = 'queued' AND id IN (\(marks))
                    """, arguments: StatementArguments([now as any DatabaseValueConvertible] + slice.map { $0 as any DatabaseValueConvertible }))
                finished += db.changesCount
            }
            return finished
        }
    }

    public func metaEntries(prefix: String) throws(CatalogError) -> [String: String] {
        try readStatement { db in
            let rows = try Row.fetchAll(db, sql: "SELECT key, value FROM meta WHERE substr(key, 1, length(?)) = ?", arguments: [prefix, prefix])
            return Dictionary(rows.map { ($0["key"] as String, $0["value"] as String) }, uniquingKeysWith: { a, _ in a })
        }
    }

    public func setMeta(_ key: String, _ value: String?) throws(CatalogError) {
        try write { db in
            if let value {
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                               arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
            }
        }
    }

    public func leaseOwners() throws(CatalogError) -> [String] {
        try read { db in
            try String.fetchAll(db.cachedStatement(sql: """
                SELECT DISTINCT lease_owner FROM job WHERE state = 'running' AND lease_owner IS NOT NULL ORDER BY lease_owner
                """))
        }
    }

    public func releaseLeases(owners: [String]) throws(CatalogError) -> Int {
        guard !owners.isEmpty else { return 0 }
        return try write { db in
            let marks = owners.map { _ in "?" }.joined(separator: ",")
            var args: [any DatabaseValueConvertible] = [StoredDate.text(Date())]
            args += owners
            try db.execute(sql: """
                UPDATE job SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
                WHERE state = 'running' AND lease_owner IN (\(marks))
                """, arguments: StatementArguments(args))
            return db.changesCount
        }
    }

    public func renewLease(_ id: Int64, owner: String, lease: Double, now: Date) throws(CatalogError) -> Bool {
        try write(durable: false) { db in
            try db.execute(sql: """
                UPDATE job SET lease_expires_at = ?, updated_at = ? WHERE id = ? AND state = 'running' AND lease_owner = ?
                """, arguments: [StoredDate.text(now.addingTimeInterval(lease)), StoredDate.text(now), id, owner])
            return db.changesCount == 1
        }
    }

    /// When the next queued job of these kinds is due (nil: none queued).
    public func nextJobDue(kinds: [JobKind]) throws(CatalogError) -> Date? {
        try read { db in
            let marks = kinds.map { _ in "?" }.joined(separator: ",")
            return try Date.fetchOne(db.cachedStatement(sql: "SELECT MIN(next_run_at) FROM job WHERE state = 'queued' AND kind IN (\(marks))"),
                                     arguments: StatementArguments(kinds.map(\.rawValue)))
        }
    }

    public func jobs(itemID: Int64) throws(CatalogError) -> [QueuedJob] {
        // A job whose parameters cannot be read was failed when it was claimed; it still counts
        // in `jobCounts`, but cannot be shown as a job.
        try readStatement { db in
            try JobRow.filter(JobRow.Columns.itemId == itemID).order(JobRow.Columns.id).fetchAll(db).compactMap { try? $0.model() }
        }
    }

    /// Jobs that failed for good, or are retrying after an error; newest first.
    public func troubledJobs(limit: Int = 100) throws(CatalogError) -> [QueuedJob] {
        try read { db in
            try JobRow.fetchAll(db, sql: """
                SELECT * FROM job WHERE state = 'failed' OR (state IN ('queued', 'running') AND last_error IS NOT NULL)
                ORDER BY updated_at DESC LIMIT ?
                """, arguments: [limit]).compactMap { try? $0.model() }
        }
    }

    public func jobCounts() throws(CatalogError) -> [String: Int] {
        try read { db in
            var out: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM job GROUP BY state") {
                out[row["state"]] = row["n"]
            }
            return out
        }
    }

    public func jobCountsByKind() throws(CatalogError) -> [String: [String: Int]] {
        try read { db in
            var out: [String: [String: Int]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT kind, state, COUNT(*) AS n FROM job GROUP BY kind, state") {
                out[row["kind"], default: [:]][row["state"]] = row["n"]
            }
            return out
        }
    }

    /// Re-queues failed jobs (all, or one item's) with fresh attempts, then applies what the
    /// lifecycle (`decide`) says of each of their items. Returns the number of jobs re-queued.
    public func retryFailed(itemID: Int64?,
                            then decide: @escaping @Sendable (_ state: ItemState, _ failedFrom: ItemState?) -> JobTransition?)
        throws(CatalogError) -> Int
    {
        try write { db in
            let now = Date()
            var failed = JobRow.filter(JobRow.Columns.state == QueuedJob.State.failed.rawValue)
            if let itemID { failed = failed.filter(JobRow.Columns.itemId == itemID) }
            let rows = try failed.order(JobRow.Columns.id).fetchAll(db)
            for var row in rows {
                row.state = .queued
                row.attempts = 0
                row.nextRunAt = now
                row.updatedAt = now
                try row.updateRow(db)
                if let item = row.itemId {
                    _ = try Self.appendEvent(db, itemID: item, kind: .retry, actor: "operator",
                                             details: ["job": row.kind.rawValue, "last_error": row.lastError ?? ""])
                }
            }
            for id in Set(rows.compactMap(\.itemId)).sorted() {
                guard let item = try Self.itemRow(db, id) else { continue }
                if let transition = decide(item.state, item.failedFrom) { try Self.applyTransition(db, itemID: id, transition) }
            }
            return rows.count
        }
    }

    /// One row by its id, through a cached statement (GRDB's `fetchOne(db, key:)` builds and
    /// parses its SQL at every call: 7% of the pipeline's CPU went to parsing such queries).
    static func itemRow(_ db: Database, _ id: Int64) throws -> ItemRow? {
        try ItemRow.fetchOne(db.cachedStatement(sql: "SELECT * FROM item WHERE id = ?"), arguments: [id])
    }

    static func jobRow(_ db: Database, _ id: Int64) throws -> JobRow? {
        try JobRow.fetchOne(db.cachedStatement(sql: "SELECT * FROM job WHERE id = ?"), arguments: [id])
    }

    static func jobRow(_ db: Database, dedupeKey: String) throws -> JobRow? {
        try JobRow.fetchOne(db.cachedStatement(sql: "SELECT * FROM job WHERE dedupe_key = ?"), arguments: [dedupeKey])
    }

    static func leasedJob(_ db: Database, _ id: Int64, _ owner: String) throws -> JobRow {
        guard let row = try Self.jobRow(db, id), row.state == .running, row.leaseOwner == owner else {
            throw CatalogError.notFound("job \(id) leased by \(owner) (the lease expired and was taken over)")
        }
        return row
    }

    static func applyTransition(_ db: Database, itemID: Int64, _ t: JobTransition) throws {
        guard var item = try Self.itemRow(db, itemID) else { throw CatalogError.notFound("item \(itemID)") }
        try insertArchivedFiles(db, t.archivedFiles)
        for certificate in t.certificates { try insertCertificate(db, certificate) }
        var d = t.details
        if let r = t.reason { d["reason"] = r }
        if let state = t.state, state != item.state {
            d["from"] = item.state.rawValue
            d["to"] = state.rawValue
            // Kept with the item in the same transaction: where a retry takes it back to.
            item.failedFrom = state == .failed ? item.state : nil
            item.state = state
            item.stateReason = t.reason
            item.updatedAt = Date()
            try item.updateRow(db)
        }
        _ = try appendEvent(db, itemID: itemID, kind: t.event, actor: "evidence", details: d)
        for spec in t.jobs {
            _ = try insertJob(db, spec, itemID: itemID, dedupeKey: spec.itemKey(itemID), now: Date())
        }
        if !t.wake.isEmpty {
            let now = Date()
            let marks = t.wake.map { _ in "?" }.joined(separator: ",")
            var args: [any DatabaseValueConvertible] = [StoredDate.text(now), StoredDate.text(now), itemID]
            args += t.wake.map(\.rawValue)
            args.append(StoredDate.text(now))
            try db.execute(sql: """
                UPDATE job SET next_run_at = ?, updated_at = ?
                WHERE item_id = ? AND kind IN (\(marks)) AND state = 'queued' AND next_run_at > ?
                """, arguments: StatementArguments(args))
        }
    }
}

/// A custody event, and optionally an item state change, made together with a job's
/// completion or failure. `state: nil` records the event only.
public struct JobTransition: Sendable, Equatable {
    public var state: ItemState?
    public var event: CustodyEventKind
    public var reason: String?
    public var details: [String: String]
    /// The next stage's jobs, created in the same transaction (once per item and kind/scope).
    public var jobs: [JobSpec]
    /// Jobs of these kinds for this item that wait, parked, for this transition (created with
    /// `JobSpec.parked`): they are due at once.
    public var wake: [JobKind]
    /// Archived copies, verified, recorded (with their `archived_file` events, before the
    /// transition's own) in the same transaction: an archive job's small files cost no
    /// transaction of their own.
    public var archivedFiles: [ArchivedFile]
    /// Certificates made, recorded (each with its `certificate` event, before the transition's
    /// own) in the same transaction: a certificate job's own PDF costs no transaction of its own.
    public var certificates: [Certificate]

    public init(state: ItemState?, event: CustodyEventKind, reason: String? = nil, details: [String: String] = [:],
                jobs: [JobSpec] = [], wake: [JobKind] = [], archivedFiles: [ArchivedFile] = [], certificates: [Certificate] = []) {
        self.state = state; self.event = event; self.reason = reason; self.details = details; self.jobs = jobs
        self.wake = wake; self.archivedFiles = archivedFiles; self.certificates = certificates
    }
}
