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

    /// One IMMEDIATE transaction (takes the write lock up front, so two processes never
    /// deadlock upgrading read locks), then the head anchor is refreshed if events were added.
    ///
    /// `durable: false` commits without waiting for the disk (WAL, synchronous=NORMAL): still
    /// atomic and safe against a process crash, but the commit may be lost on power failure.
    /// Only for bookkeeping whose loss is harmless (job leases: a lost claim re-runs an
    /// idempotent job). Everything that records evidence or custody is durable.
    func write<T>(durable: Bool = true, _ body: @escaping @Sendable (Database) throws -> T) throws(CatalogError) -> T {
        let result: (T, Bool)
        do {
            result = try db.writeWithoutTransaction { db in
                var out: T?
                var appended = false
                if !durable { try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute() }
                defer { if !durable { try? db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute() } }
                try db.inTransaction(.immediate) {
                    let before = try Self.lastSeq(db)
                    out = try body(db)
                    appended = try Self.lastSeq(db) != before
                    return .commit
                }
                return (out!, appended)
            }
        } catch {
            throw mapError(error)
        }
        // Only transactions that appended custody events move the head anchor.
        if result.1 { try head?.noteAppended() }
        return result.0
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
        try CustodyRow(event).insert(db)
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
