import Dispatch
import EvidenceCore
import EvidenceStore
import Foundation
import GRDB
import Synchronization

/// The catalog on SQLite (WAL): the one type that owns the database.
public final class SQLiteCatalog: Catalog {
    let db: any DatabaseWriter
    /// Shown in errors: the database file, or ":memory:".
    let path: String
    /// Outside the database, the last event's seq and hash (`CustodyHead`); nil in memory.
    let headPath: String?
    private let head: CustodyHead?
    /// Writes waiting for the write connection, committed together (`write`).
    let commits = CommitGroup()
    /// Told the number of writes of every transaction committed or rolled back (metrics).
    let commitObserver = Mutex<CommitObserver?>(nil)
    /// The closure held in a struct: a closure stored directly in the Mutex's generic storage is
    /// re-abstracted at every `withLock { $0 }` and written back wrapped in two more thunks, a
    /// chain that grew with every commit (found by perf: a quarter of the pipeline's CPU).
    struct CommitObserver: Sendable {
        let call: @Sendable (_ writes: Int) -> Void
    }

    /// Opens (creating and migrating) the catalog at `path`, in WAL mode.
    public convenience init(path: String) throws(CatalogError) {
        var config = Configuration()
        config.busyMode = .timeout(15)
        config.prepareDatabase { db in
            // Evidence: every commit durable, not just consistent.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: config)
        } catch {
            if Self.isBusy(error) { throw .locked(path: path) }
            throw .open(path: path, detail: Self.describe(error))
        }
        try self.init(writer: pool, path: path,
                      headPath: (path as NSString).deletingLastPathComponent + "/custody.head")
    }

    /// An in-memory catalog (tests), same code as on disk.
    public static func inMemory() throws(CatalogError) -> SQLiteCatalog {
        do {
            return try SQLiteCatalog(writer: DatabaseQueue(), path: ":memory:", headPath: nil)
        } catch let e as CatalogError {
            throw e
        } catch {
            throw .open(path: ":memory:", detail: "\(error)")
        }
    }

    init(writer: any DatabaseWriter, path: String, headPath: String?) throws(CatalogError) {
        self.db = writer
        self.path = path
        self.headPath = headPath
        self.head = headPath.map { headPath in
            CustodyHead(path: headPath) { () throws(CatalogError) -> (Int64, String)? in
                do {
                    return try writer.read { db in
                        try Row.fetchOne(db, sql: "SELECT seq, hash FROM custody_event ORDER BY seq DESC LIMIT 1")
                            .map { ($0["seq"], $0["hash"]) }
                    }
                } catch {
                    throw .database(path: path, detail: Self.describe(error))
                }
            }
        }
        do {
            try Schema.migrator.migrate(writer)
        } catch {
            // Another process holding the write lock past the busy timeout is not a broken
            // catalog: say so, so the operator waits instead of repairing.
            if Self.isBusy(error) { throw .locked(path: path) }
            throw .open(path: path, detail: "migration failed: \(Self.describe(error))")
        }
    }

    // MARK: Transactions

    /// Runs `body` in an IMMEDIATE transaction (which takes the write lock up front, so two
    /// processes never deadlock upgrading read locks), committed before it returns; then the
    /// head anchor is refreshed if events were added.
    ///
    /// Group commit (`CommitGroup`): writes queued while another commits share the next
    /// transaction, each in a savepoint of its own, so one write's error rolls back that write
    /// alone. Every write still returns only once its transaction is committed (or has failed,
    /// and then nothing of it is).
    ///
    /// `durable: false` commits without waiting for the disk (WAL, synchronous=NORMAL): still
    /// atomic and safe against a process crash, but the commit may be lost on power failure.
    /// Only for bookkeeping whose loss is harmless (job leases: a lost claim re-runs an
    /// idempotent job). Everything that records evidence or custody is durable; a transaction
    /// holding any durable write is durable.
    func write<T>(durable: Bool = true, _ body: @escaping @Sendable (Database) throws -> T) throws(CatalogError) -> T {
        let pending = CommitGroup.Pending(durable: durable) { db in try body(db) }
        commits.add(pending)
        db.writeWithoutTransaction { db in
            // An earlier writer may have committed this one already; otherwise this thread
            // commits every write queued so far, its own among them.
            while !pending.isSettled {
                let batch = commits.take()
                if batch.isEmpty { break }
                Self.commit(batch, db)
                commitObserver.withLock { $0 }?.call(batch.count)
            }
        }
        guard let outcome = pending.settled else {
            throw .database(path: path, detail: "a write was left uncommitted (internal error)")
        }
        // Only transactions that appended custody events move the head anchor.
        if outcome.appended { head?.noteAppended() }
        switch outcome.result {
        case .success(let value): return value as! T
        case .failure(let error): throw mapError(error)
        }
    }

    /// Commits `batch` in one IMMEDIATE transaction, each write in a savepoint of its own: a write
    /// that throws is rolled back alone and gets its error; the others are committed together
    /// (one WAL sync for all). Never throws: every write's outcome is settled. Durable when any
    /// of them asks it (`synchronous = NORMAL` only when none does).
    static func commit(_ batch: [CommitGroup.Pending], _ db: Database) {
        let durable = batch.contains { $0.durable }
        if !durable { try? db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute() }
        defer { if !durable { try? db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute() } }
        var outcomes: [Result<Any, any Error>] = []
        var appended = false
        do {
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            let before = try lastSeq(db)
            // Set when SQLite itself rolled the transaction back (disk full, I/O error): then
            // nothing of the batch is committed, and every write gets that error.
            var aborted: (any Error)?
            for p in batch {
                if let aborted { outcomes.append(.failure(aborted)); continue }
                if batch.count == 1 {
                    // Alone: no savepoint needed; its error rolls the transaction back below.
                    outcomes.append(Result { try p.body(db) })
                    if case .failure(let error) = outcomes.last! { throw error }
                    continue
                }
                do {
                    outcomes.append(.success(try inSavepoint(db) { try p.body(db) }))
                } catch {
                    outcomes.append(.failure(error))
                    if !db.isInsideTransaction { aborted = error }
                }
            }
            if let aborted { throw aborted }
            appended = try lastSeq(db) != before
            try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
        } catch {
            if db.isInsideTransaction { try? db.rollback() }
            // Nothing was committed: a write that succeeded inside the batch fails with the
            // batch's error; one that failed keeps its own.
            outcomes = batch.indices.map { i in
                if i < outcomes.count, case .failure = outcomes[i] { return outcomes[i] }
                return .failure(error)
            }
            appended = false
        }
        for (p, outcome) in zip(batch, outcomes) { p.settle(outcome, appended: appended) }
    }

    /// `body` in a savepoint of the open transaction: released when it returns, rolled back to
    /// (and released) when it throws, and the error rethrown. What GRDB's `inSavepoint` does inside
    /// a transaction, with the four statements prepared once per connection instead of parsed
    /// again for every write of a group commit (a few percent of the pipeline's CPU).
    static func inSavepoint<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try db.cachedStatement(sql: "SAVEPOINT write").execute()
        do {
            let value = try body()
            try db.cachedStatement(sql: "RELEASE SAVEPOINT write").execute()
            return value
        } catch {
            // SQLite may have rolled the whole transaction back itself (disk full, I/O error):
            // then there is no savepoint left to return to, and the caller sees it.
            if db.isInsideTransaction {
                try? db.cachedStatement(sql: "ROLLBACK TRANSACTION TO SAVEPOINT write").execute()
                try? db.cachedStatement(sql: "RELEASE SAVEPOINT write").execute()
            }
            throw error
        }
    }

    /// `observer` is told the number of writes of every catalog transaction (for metrics).
    public func observeCommits(_ observer: @escaping @Sendable (_ writes: Int) -> Void) {
        commitObserver.withLock { $0 = CommitObserver(call: observer) }
    }

    static func lastSeq(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(seq) FROM custody_event")) ?? 0
    }

    func read<T>(_ body: @escaping @Sendable (Database) throws -> T) throws(CatalogError) -> T {
        do {
            return try db.read(body)
        } catch {
            throw mapError(error)
        }
    }

    /// A read of ONE statement: SQLite gives a single statement its own snapshot, so it needs no
    /// transaction around it. `read` opens one (BEGIN, parsed anew each time, and COMMIT): 2% of
    /// the pipeline's CPU went to that for the per-item reads (an item, its proofs, sources, jobs,
    /// archived files). A body of more than one statement must use `read`.
    func readStatement<T>(_ body: @escaping @Sendable (Database) throws -> T) throws(CatalogError) -> T {
        do {
            return try db.unsafeRead(body)
        } catch {
            throw mapError(error)
        }
    }

    static func isBusy(_ error: any Error) -> Bool {
        guard let e = error as? DatabaseError else { return false }
        return e.resultCode == .SQLITE_BUSY || e.resultCode == .SQLITE_LOCKED
    }

    func mapError(_ error: any Error) -> CatalogError {
        if let e = error as? CatalogError { return e }
        if let e = error as? DatabaseError {
            if e.resultCode == .SQLITE_BUSY || e.resultCode == .SQLITE_LOCKED { return .locked(path: path) }
            if e.message?.contains("append-only") == true { return .appendOnly(path: path) }
        }
        return .database(path: path, detail: Self.describe(error))
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? DatabaseError { return e.message ?? "\(e.resultCode)" }
        return "\(error)"
    }

    // MARK: Custody log

    /// Appends one event inside the caller's transaction.
    static func appendEvent(_ db: Database, itemID: Int64?, kind: CustodyEventKind, actor: String,
                            details: [String: String]) throws -> CustodyEvent {
        let last = try Row.fetchOne(db.cachedStatement(sql: "SELECT seq, hash FROM custody_event ORDER BY seq DESC LIMIT 1"))
            .map { (seq: $0["seq"] as Int64, hash: $0["hash"] as String) }
        let event = try ChainCheck.next(after: last, itemID: itemID, kind: kind, actor: actor, details: details)
        try CustodyRow(event).insertRow(db)
        return event
    }

    deinit { try? head?.flush() }

    /// Writes the head anchor now if events were appended since it was last written.
    public func flushHead() throws(CatalogError) {
        try head?.flush()
    }

    func readHead() -> (seq: Int64, hash: String)? {
        head?.read()
    }
}
