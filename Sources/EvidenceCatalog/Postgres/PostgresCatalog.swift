import EvidenceCore
import Foundation
import Synchronization

/// The catalog on PostgreSQL, for several nodes sharing one catalog and one job queue.
///
/// Built on libpq, PostgreSQL's own client library, rather than postgres-nio: the `Catalog`
/// contract is synchronous (every caller already runs it off the cooperative pool, as it does
/// for SQLite), libpq's blocking calls fit it without a bridge from async code, and it does
/// TLS with full verification (`sslmode=verify-full`, `sslrootcert`) itself.
///
/// The same contract as `SQLiteCatalog`, with what several writers need:
/// - Custody events are appended by every node into one chain: each append takes a
///   transaction-scoped advisory lock before reading the head, so appends are serialized and
///   the chain never forks.
/// - Jobs are claimed with `FOR UPDATE SKIP LOCKED`: two nodes never take the same job and
///   never wait for each other. A node that stops renewing its leases (its heartbeat, every
///   third of the lease) has its jobs taken by the others once the lease ends: no pid check
///   across hosts.
/// - A transaction PostgreSQL aborts as a deadlock or serialization conflict runs again.
public final class PostgresCatalog: Catalog {
    let target: PostgresTarget
    private let pool: Pool
    private let head: CustodyHead?
    let headPath: String?
    /// Started by the first `jobSignal` read (a runner's), stopped with the catalog.
    private let listener = Mutex<JobListener?>(nil)
    /// The advisory lock key serializing custody appends (and migrations, under its own key).
    static let custodyLock = "7317140311"
    static let migrationLock = "7317140312"

    /// Connects, creates or migrates the schema, and keeps the head anchor at `headPath`.
    public init(_ target: PostgresTarget, headPath: String?) throws(CatalogError) {
        // Off this host, only TLS verified against the configured CA: libpq would otherwise
        // look for ~/.postgresql/root.crt, or an operator might be tempted by sslmode=disable.
        guard target.isLocal || target.tlsCAFile != nil else {
            throw .open(path: target.label, detail: "a catalog off this host needs [catalog] tls_ca_file (the CA that signed "
                        + "the server's certificate): the connection is always TLS, verified, and names the host")
        }
        self.target = target
        self.headPath = headPath
        let pool = Pool(target: target)
        self.pool = pool
        self.head = headPath.map { path in
            CustodyHead(path: path) { () throws(CatalogError) -> (Int64, String)? in
                let row: PGRow?
                do {
                    let c = try pool.checkout()
                    defer { pool.checkin(c) }
                    row = try c.query("SELECT seq, hash FROM custody_event ORDER BY seq DESC LIMIT 1").first
                } catch {
                    throw .database(path: target.label, detail: "\(error)")
                }
                guard let row else { return nil }
                do { return (try row.int64("seq"), try row.text("hash")) } catch { throw .database(path: target.label, detail: "\(error)") }
            }
        }
        try migrate()
    }

    deinit {
        try? head?.flush()
        listener.withLock { $0?.stop() }
    }

    public var jobSignal: JobSignal? {
        listener.withLock { l in
            if l == nil { l = JobListener(target: target) }
            return l?.signal
        }
    }

    // MARK: Transactions

    /// Per-transaction state: whether it appended custody events (the head anchor then moves).
    final class Tx {
        let c: PGConnection
        var appended = false
        init(_ c: PGConnection) { self.c = c }

        @discardableResult
        func query(_ sql: String, _ params: [String?] = []) throws(PGError) -> PGRows { try c.query(sql, params) }
    }

    /// One READ COMMITTED transaction; run again (up to five times) when PostgreSQL aborts it as
    /// a deadlock or serialization conflict. `durable: false` commits without waiting for the
    /// WAL flush (job leases only, as in SQLite).
    ///
    /// `custody: true` for every transaction that may append a custody event: the custody lock
    /// is then its first statement, before any row lock. One lock order everywhere: a batch of
    /// ingests (custody lock, then item rows) and a job's transition (item row, then custody
    /// lock) could otherwise deadlock, each holding what the other waits for.
    func write<T>(durable: Bool = true, custody: Bool = false, _ body: (Tx) throws -> T) throws(CatalogError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            let c = try checkout()
            let tx = Tx(c)
            do {
                try c.query("BEGIN")
                if !durable { try c.query("SET LOCAL synchronous_commit = off") }
                if custody { try c.query("SELECT pg_advisory_xact_lock(\(Self.custodyLock))") }
                let out = try body(tx)
                try c.query("COMMIT")
                pool.checkin(c)
                // After the connection is back in the pool and outside this catch: nothing
                // after the commit may roll back (or check in again) a connection another
                // thread may hold by now, nor report a committed write failed.
                if tx.appended { head?.noteAppended() }
                return out
            } catch {
                _ = try? c.query("ROLLBACK")
                pool.checkin(c)
                if let e = error as? PGError, e.isRetryable, attempt < 5 { continue }
                throw map(error)
            }
        }
    }

    func read<T>(_ body: (PGConnection) throws -> T) throws(CatalogError) -> T {
        let c = try checkout()
        defer { pool.checkin(c) }
        do { return try body(c) } catch { throw map(error) }
    }

    private func checkout() throws(CatalogError) -> PGConnection {
        do { return try pool.checkout() } catch { throw .open(path: target.label, detail: error.message) }
    }

    func map(_ error: any Error) -> CatalogError {
        if let e = error as? CatalogError { return e }
        if let e = error as? PGError {
            if e.message.contains("append-only") { return .appendOnly(path: target.label) }
            return .database(path: target.label, detail: e.message)
        }
        return .database(path: target.label, detail: "\(error)")
    }

    private func migrate() throws(CatalogError) {
        do {
            let c = try pool.checkout()
            defer { pool.checkin(c) }
            try c.query("BEGIN")
            do {
                try c.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
                try c.query("CREATE TABLE IF NOT EXISTS evidence_migration (name text PRIMARY KEY, applied_at timestamptz NOT NULL)")
                let done = Set(try c.query("SELECT name FROM evidence_migration").all.compactMap { $0.string("name") })
                for m in PostgresSchema.migrations where !done.contains(m.name) {
                    try c.execute(script: m.sql)
                    try c.query("INSERT INTO evidence_migration (name, applied_at) VALUES ($1, now())", [m.name])
                }
                try c.query("COMMIT")
            } catch {
                _ = try? c.query("ROLLBACK")
                throw error
            }
        } catch {
            throw .open(path: target.label, detail: "migration failed: \(error)")
        }
    }

    // MARK: Custody log

    /// Appends one event inside the transaction, after taking the custody lock (taken already
    /// when the transaction began with `write(custody: true)`; taking it again is a no-op):
    /// every node's events go into the one chain, one at a time.
    static func appendEvent(_ tx: Tx, itemID: Int64?, kind: CustodyEventKind, actor: String,
                            details: [String: String]) throws -> CustodyEvent {
        try tx.query("SELECT pg_advisory_xact_lock(\(custodyLock))")
        let last = try tx.query("SELECT seq, hash FROM custody_event ORDER BY seq DESC LIMIT 1").first
        let event = try ChainCheck.next(after: try last.map { (seq: try $0.int64("seq"), hash: try $0.text("hash")) },
                                        itemID: itemID, kind: kind, actor: actor, details: details)
        try tx.query("""
            INSERT INTO custody_event (seq, item_id, at, kind, actor, details, prev_hash, hash)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """, [String(event.seq), event.itemID.map(String.init), event.at, event.kind, event.actor, event.details,
                  event.prevHash, event.hash])
        tx.appended = true
        return event
    }

    public func flushHead() throws(CatalogError) { try head?.flush() }

    public var location: String { target.label }

    public func claimStoreID(_ id: String) throws(CatalogError) -> String {
        try write { tx in
            try tx.query("INSERT INTO meta (key, value) VALUES ('store_id', $1) ON CONFLICT (key) DO NOTHING", [id])
            return try tx.query("SELECT value FROM meta WHERE key = 'store_id'").first?.text("value") ?? id
        }
    }

    /// PostgreSQL's own count of data-page checksum failures in this database (zero where the
    /// cluster was made without checksums), as `quickCheck` reports SQLite's.
    public func integrityProblems() throws(CatalogError) -> [String] {
        try read { c in
            let n = try c.query("SELECT COALESCE(checksum_failures, 0) AS n FROM pg_stat_database WHERE datname = current_database()")
                .first?.optionalInt64("n") ?? 0
            return n == 0 ? [] : ["\(n) data page checksum failure(s) reported by PostgreSQL"]
        }
    }

    /// A small set of idle connections; a new one is opened when none is idle.
    final class Pool: Sendable {
        // Connections are handed to one thread at a time; the list itself is behind the lock.
        private let idle = Mutex<[PGConnection]>([])
        let target: PostgresTarget
        let keep = 8
        init(target: PostgresTarget) { self.target = target }

        func checkout() throws(PGError) -> PGConnection {
            while let c = idle.withLock({ $0.popLast() }) {
                if !c.isBroken { return c }
            }
            let c = try PGConnection(target)
            try c.query("SET TIME ZONE 'UTC'")
            try c.query("SET DateStyle = 'ISO, YMD'")
            return c
        }

        func checkin(_ c: PGConnection) {
            guard !c.isBroken else { return }
            idle.withLock { if $0.count < keep { $0.append(c) } }
        }
    }
}
