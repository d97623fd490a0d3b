import EvidenceCore
import Foundation
import GRDB

// One record per table, its columns named once in its `Columns` (snake_case, as in the schema).
// Public value types live in EvidenceCore; these map them to rows, for both catalogs (the
// PostgreSQL one builds the same records from its rows). Coded columns (states, kinds, roles)
// are their enums here: a value this version does not know (a catalog edited by hand or
// written by a newer version) is refused with the table, the row and the value, never taken
// for another one.

/// What every catalog record shares: snake_case columns, dates stored as `StoredDate` text.
protocol CatalogRecord: Codable, FetchableRecord, MutablePersistableRecord, Sendable {}

extension CatalogRecord {
    static var databaseColumnDecodingStrategy: DatabaseColumnDecodingStrategy { .convertFromSnakeCase }
    static var databaseColumnEncodingStrategy: DatabaseColumnEncodingStrategy { .convertToSnakeCase }
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }

    /// The stored text of a coded column as its enum; a value this version does not know is
    /// refused naming the table, the row and the value.
    static func coded<Value: RawRepresentable>(_ raw: String, _ column: some ColumnExpression, row: String)
        throws(CatalogError) -> Value where Value.RawValue == String
    {
        guard let value = Value(rawValue: raw) else {
            throw CatalogError.unknownValue(table: databaseTableName, row: row, column: column.name, value: raw)
        }
        return value
    }

    /// `coded` for a column that may be NULL.
    static func codedIfPresent<Value: RawRepresentable>(_ raw: String?, _ column: some ColumnExpression, row: String)
        throws(CatalogError) -> Value? where Value.RawValue == String
    {
        guard let raw else { return nil }
        return try coded(raw, column, row: row) as Value
    }

    /// A stored SHA-256 as a digest; anything but 64 hex digits is refused naming the row.
    static func digest(_ hex: String, _ column: some ColumnExpression, row: String) throws(CatalogError) -> SHA256Digest {
        guard let digest = SHA256Digest(hex: hex) else {
            throw CatalogError.database(path: "\(databaseTableName) \(row)",
                                        detail: "its \(column.name) \"\(hex.prefix(80))\" is not 64 hex digits")
        }
        return digest
    }
}

/// The SQL of a table's writes with every column bound by position, built once per table:
/// `insert`, `upsert` (insert, or on a conflict of the primary key update every other column,
/// which is what GRDB's `save` does with an UPDATE tried first) and `update` (by the key).
struct ColumnStatements: Sendable {
    let columns: [String]
    let insert: String
    let upsert: String
    let update: String
    /// For `update`: positions in `columns` of the columns set, then of the key.
    let updateOrder: [Int]

    init(table: String, columns: [String], key: [String]) {
        func quoted(_ name: String) -> String { "\"\(name)\"" }
        let names = columns.map(quoted).joined(separator: ", ")
        let marks = columns.map { _ in "?" }.joined(separator: ", ")
        let rest = columns.filter { !key.contains($0) }
        self.columns = columns
        insert = "INSERT INTO \(quoted(table)) (\(names)) VALUES (\(marks))"
        upsert = insert + " ON CONFLICT (\(key.map(quoted).joined(separator: ", "))) DO UPDATE SET "
            + rest.map { "\(quoted($0)) = excluded.\(quoted($0))" }.joined(separator: ", ")
        update = "UPDATE \(quoted(table)) SET " + rest.map { "\(quoted($0)) = ?" }.joined(separator: ", ")
            + " WHERE " + key.map { "\(quoted($0)) = ?" }.joined(separator: " AND ")
        updateOrder = (rest + key).map { columns.firstIndex(of: $0)! }
    }
}

/// A row the hot paths write through `ColumnStatements` (a cached statement, its values bound by
/// position) rather than GRDB's record persistence, which builds a container of every column
/// keyed by name and the statement's SQL again for every write, and runs an UPDATE before every
/// INSERT of `save`: about 5% of the whole pipeline's CPU (perf), for rows of a few columns.
/// `encode(to:)` (GRDB's own writes, elsewhere) is derived from the same values.
protocol ColumnWritten: MutablePersistableRecord {
    static var statements: ColumnStatements { get }
    /// The values in `statements.columns` order.
    var columnValues: [(any DatabaseValueConvertible)?] { get }
}

extension ColumnWritten {
    func encodeColumns(to c: inout PersistenceContainer) {
        for (name, value) in zip(Self.statements.columns, columnValues) { c[name] = value }
    }

    func insertRow(_ db: Database) throws {
        try db.cachedStatement(sql: Self.statements.insert).execute(arguments: StatementArguments(columnValues))
    }

    func upsertRow(_ db: Database) throws {
        try db.cachedStatement(sql: Self.statements.upsert).execute(arguments: StatementArguments(columnValues))
    }

    /// Updates the row of this key; throws GRDB's `recordNotFound`, as `update` does, when there is none.
    func updateRow(_ db: Database) throws {
        let values = columnValues
        let ordered: [(any DatabaseValueConvertible)?] = Self.statements.updateOrder.map { values[$0] }
        try db.cachedStatement(sql: Self.statements.update).execute(arguments: StatementArguments(ordered))
        if db.changesCount == 0 {
            throw RecordError.recordNotFound(databaseTableName: Self.databaseTableName, key: [:])
        }
    }
}

struct ItemRow: CatalogRecord, ColumnWritten {
    static let databaseTableName = "item"
    enum Columns: String, ColumnExpression {
        case id, sha256, size, state
        case stateReason = "state_reason", mediaJson = "media_json", dateTaken = "date_taken"
        case createdAt = "created_at", updatedAt = "updated_at", failedFrom = "failed_from"
        case supersededBy = "superseded_by"
    }
    var id: Int64?
    var sha256: String
    var size: Int64
    var state: ItemState
    var stateReason: String?
    var mediaJson: String?
    var dateTaken: Date?
    var createdAt: Date
    var updatedAt: Date
    /// The state a retry returns a failed item to: the one it was in when it went to `failed`
    /// (set in the transaction of that move; nil while it is not failed).
    var failedFrom: ItemState?
    /// `Item.supersededBy`, set with the `superseded` event in the successor's ingest transaction.
    var supersededBy: Int64?

    init(id: Int64?, sha256: String, size: Int64, state: ItemState, stateReason: String?, mediaJson: String?,
         dateTaken: Date?, createdAt: Date, updatedAt: Date, failedFrom: ItemState?, supersededBy: Int64? = nil) {
        self.id = id; self.sha256 = sha256; self.size = size; self.state = state; self.stateReason = stateReason
        self.mediaJson = mediaJson; self.dateTaken = dateTaken; self.createdAt = createdAt; self.updatedAt = updatedAt
        self.failedFrom = failedFrom; self.supersededBy = supersededBy
    }

    /// Read by column, not through Decodable: GRDB's keyed decoder (a snake-case conversion of
    /// each key, per row) was most of reading an item, which every job does.
    init(row: Row) throws {
        let id = try row.decode(Int64.self, forColumn: Columns.id)
        let name = String(id)
        self.id = id
        sha256 = try row.decode(String.self, forColumn: Columns.sha256)
        size = try row.decode(Int64.self, forColumn: Columns.size)
        state = try Self.coded(try row.decode(String.self, forColumn: Columns.state), Columns.state, row: name)
        stateReason = try row.decode(String?.self, forColumn: Columns.stateReason)
        mediaJson = try row.decode(String?.self, forColumn: Columns.mediaJson)
        dateTaken = try row.decode(Date?.self, forColumn: Columns.dateTaken)
        createdAt = try row.decode(Date.self, forColumn: Columns.createdAt)
        updatedAt = try row.decode(Date.self, forColumn: Columns.updatedAt)
        failedFrom = try Self.codedIfPresent(try row.decode(String?.self, forColumn: Columns.failedFrom), Columns.failedFrom, row: name)
        supersededBy = try row.decode(Int64?.self, forColumn: Columns.supersededBy)
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// Written by column (`ColumnWritten`), not through Encodable: every state change updates the item.
    func encode(to c: inout PersistenceContainer) { encodeColumns(to: &c) }

    static let statements = ColumnStatements(table: databaseTableName, columns: [
        Columns.id, .sha256, .size, .state, .stateReason, .mediaJson, .dateTaken, .createdAt, .updatedAt, .failedFrom,
        .supersededBy].map(\.rawValue), key: [Columns.id.rawValue])
    var columnValues: [(any DatabaseValueConvertible)?] {
        [id, sha256, size, state.rawValue, stateReason, mediaJson, dateTaken.map(StoredDate.text), StoredDate.text(createdAt),
         StoredDate.text(updatedAt), failedFrom?.rawValue, supersededBy]
    }

    /// The item; a row whose hash this version cannot read is an error naming the item.
    func model() throws(CatalogError) -> Item {
        let media = mediaJson.flatMap { try? CanonicalJSON.decoder().decode(MediaInfo.self, from: Data($0.utf8)) }
        return Item(id: id ?? 0, sha256: try Self.digest(sha256, Columns.sha256, row: String(id ?? 0)), size: size,
                    state: state, stateReason: stateReason, media: media, dateTaken: dateTaken, createdAt: createdAt,
                    updatedAt: updatedAt, supersededBy: supersededBy)
    }
}

struct SourceRow: CatalogRecord, ColumnWritten {
    static let databaseTableName = "source"
    enum Columns: String, ColumnExpression {
        case id, itemId = "item_id", path, name, rule, device, inode, size, mtimeNanos = "mtime_nanos", seenAt = "seen_at"
    }
    var id: Int64?
    var itemId: Int64
    var path: String
    var name: String
    var rule: String?
    var device: Int64
    var inode: Int64
    var size: Int64
    var mtimeNanos: Int64
    var seenAt: Date

    init(id: Int64?, itemId: Int64, path: String, name: String, rule: String?, device: Int64, inode: Int64,
         size: Int64, mtimeNanos: Int64, seenAt: Date) {
        self.id = id; self.itemId = itemId; self.path = path; self.name = name; self.rule = rule
        self.device = device; self.inode = inode; self.size = size; self.mtimeNanos = mtimeNanos; self.seenAt = seenAt
    }

    /// Written by column (`ColumnWritten`), not through Encodable: one per file taken.
    func encode(to c: inout PersistenceContainer) { encodeColumns(to: &c) }

    static let statements = ColumnStatements(table: databaseTableName, columns: [
        Columns.id, .itemId, .path, .name, .rule, .device, .inode, .size, .mtimeNanos, .seenAt].map(\.rawValue),
        key: [Columns.id.rawValue])
    var columnValues: [(any DatabaseValueConvertible)?] {
        [id, itemId, path, name, rule, device, inode, size, mtimeNanos, StoredDate.text(seenAt)]
    }

    /// Read by column, not through Decodable (see ProofRow): every job reads its item's sources.
    init(row: Row) throws {
        id = try row.decode(Int64?.self, forColumn: Columns.id)
        itemId = try row.decode(Int64.self, forColumn: Columns.itemId)
        path = try row.decode(String.self, forColumn: Columns.path)
        name = try row.decode(String.self, forColumn: Columns.name)
        rule = try row.decode(String?.self, forColumn: Columns.rule)
        device = try row.decode(Int64.self, forColumn: Columns.device)
        inode = try row.decode(Int64.self, forColumn: Columns.inode)
        size = try row.decode(Int64.self, forColumn: Columns.size)
        mtimeNanos = try row.decode(Int64.self, forColumn: Columns.mtimeNanos)
        seenAt = try row.decode(Date.self, forColumn: Columns.seenAt)
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    func model() -> SourceSighting {
        SourceSighting(id: id ?? 0, itemID: itemId, path: path, name: name, rule: rule,
                       device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode), size: size,
                       mtime: Date(timeIntervalSince1970: Double(mtimeNanos) / 1e9), mtimeNanos: mtimeNanos,
                       seenAt: seenAt)
    }
}

struct QuarantineRow: CatalogRecord {
    static let databaseTableName = "quarantine"
    enum Columns: String, ColumnExpression {
        case id, path, rule, reason, at, resolved
    }
    var id: Int64?
    var path: String
    var rule: String?
    var reason: String
    var at: Date
    var resolved: Bool

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    func model() -> QuarantineEntry {
        QuarantineEntry(id: id ?? 0, path: path, rule: rule, reason: reason, at: at, resolved: resolved)
    }
}

/// A custody event. Its `kind` stays text: reading the log accepts any kind, so that a log
/// written by another version stays verifiable (`CustodyEventKind`).
struct CustodyRow: CatalogRecord, PersistableRecord, ColumnWritten {
    static let databaseTableName = "custody_event"
    enum Columns: String, ColumnExpression {
        case seq, itemId = "item_id", at, kind, actor, details, prevHash = "prev_hash", hash
    }
    var seq: Int64
    var itemId: Int64?
    var at: String
    var kind: String
    var actor: String
    var details: String
    var prevHash: String
    var hash: String

    init(_ e: CustodyEvent) {
        seq = e.seq; itemId = e.itemID; at = e.at; kind = e.kind; actor = e.actor
        details = e.details; prevHash = e.prevHash; hash = e.hash
    }

    /// Written by column, not through Encodable: GRDB's encoder (a keyed container and a
    /// snake-case conversion of each key, per row) was the largest part of saving a row.
    func encode(to c: inout PersistenceContainer) { encodeColumns(to: &c) }

    static let statements = ColumnStatements(table: databaseTableName, columns: [
        Columns.seq, .itemId, .at, .kind, .actor, .details, .prevHash, .hash].map(\.rawValue), key: [Columns.seq.rawValue])
    var columnValues: [(any DatabaseValueConvertible)?] { [seq, itemId, at, kind, actor, details, prevHash, hash] }

    /// Read by column, not through Decodable: `log verify` reads every event, and GRDB's decoder
    /// (a keyed container and a snake-case conversion of each key, per row) was 40% of its time.
    init(row: Row) throws {
        seq = row[Columns.seq]; itemId = row[Columns.itemId]; at = row[Columns.at]; kind = row[Columns.kind]
        actor = row[Columns.actor]; details = row[Columns.details]; prevHash = row[Columns.prevHash]; hash = row[Columns.hash]
    }

    func model() -> CustodyEvent {
        CustodyEvent(seq: seq, itemID: itemId, at: at, kind: kind, actor: actor, details: details,
                     prevHash: prevHash, hash: hash)
    }
}

struct JobRow: CatalogRecord, ColumnWritten {
    static let databaseTableName = "job"
    enum Columns: String, ColumnExpression {
        case id, kind, itemId = "item_id", state, attempts, maxAttempts = "max_attempts", nextRunAt = "next_run_at"
        case leaseOwner = "lease_owner", leaseExpiresAt = "lease_expires_at", lastError = "last_error", payload
        case dedupeKey = "dedupe_key", createdAt = "created_at", updatedAt = "updated_at"
    }
    var id: Int64?
    var kind: JobKind
    var itemId: Int64?
    var state: QueuedJob.State
    var attempts: Int
    var maxAttempts: Int
    var nextRunAt: Date
    var leaseOwner: String?
    var leaseExpiresAt: Date?
    var lastError: String?
    var payload: String
    var dedupeKey: String
    var createdAt: Date
    var updatedAt: Date

    init(id: Int64?, kind: JobKind, itemId: Int64?, state: QueuedJob.State, attempts: Int, maxAttempts: Int, nextRunAt: Date,
         leaseOwner: String?, leaseExpiresAt: Date?, lastError: String?, payload: String, dedupeKey: String,
         createdAt: Date, updatedAt: Date) {
        self.id = id; self.kind = kind; self.itemId = itemId; self.state = state; self.attempts = attempts
        self.maxAttempts = maxAttempts; self.nextRunAt = nextRunAt; self.leaseOwner = leaseOwner
        self.leaseExpiresAt = leaseExpiresAt; self.lastError = lastError; self.payload = payload; self.dedupeKey = dedupeKey
        self.createdAt = createdAt; self.updatedAt = updatedAt
    }

    /// Written by column, not through Encodable: GRDB's encoder (a keyed container and a
    /// snake-case conversion of each key, per row) was the largest part of saving a row.
    func encode(to c: inout PersistenceContainer) { encodeColumns(to: &c) }

    static let statements = ColumnStatements(table: databaseTableName, columns: [
        Columns.id, .kind, .itemId, .state, .attempts, .maxAttempts, .nextRunAt, .leaseOwner, .leaseExpiresAt, .lastError,
        .payload, .dedupeKey, .createdAt, .updatedAt].map(\.rawValue), key: [Columns.id.rawValue])
    var columnValues: [(any DatabaseValueConvertible)?] {
        [id, kind.rawValue, itemId, state.rawValue, attempts, maxAttempts, StoredDate.text(nextRunAt), leaseOwner,
         leaseExpiresAt.map(StoredDate.text), lastError, payload, dedupeKey, StoredDate.text(createdAt), StoredDate.text(updatedAt)]
    }

    /// Read by column, not through Decodable (as `ItemRow`): every claim reads a job row.
    init(row: Row) throws {
        let id = try row.decode(Int64.self, forColumn: Columns.id)
        let name = String(id)
        self.id = id
        kind = try Self.coded(try row.decode(String.self, forColumn: Columns.kind), Columns.kind, row: name)
        itemId = try row.decode(Int64?.self, forColumn: Columns.itemId)
        state = try Self.coded(try row.decode(String.self, forColumn: Columns.state), Columns.state, row: name)
        attempts = try row.decode(Int.self, forColumn: Columns.attempts)
        maxAttempts = try row.decode(Int.self, forColumn: Columns.maxAttempts)
        nextRunAt = try row.decode(Date.self, forColumn: Columns.nextRunAt)
        leaseOwner = try row.decode(String?.self, forColumn: Columns.leaseOwner)
        leaseExpiresAt = try row.decode(Date?.self, forColumn: Columns.leaseExpiresAt)
        lastError = try row.decode(String?.self, forColumn: Columns.lastError)
        payload = try row.decode(String.self, forColumn: Columns.payload)
        dedupeKey = try row.decode(String.self, forColumn: Columns.dedupeKey)
        createdAt = try row.decode(Date.self, forColumn: Columns.createdAt)
        updatedAt = try row.decode(Date.self, forColumn: Columns.updatedAt)
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// The job, or an error naming it when its parameters cannot be read (a catalog written by
    /// hand or by a newer version).
    func model() throws(CatalogError) -> QueuedJob {
        // Read by `FlatStringJSON` (every claim reads one); JSONDecoder where it is not sure.
        let fields = FlatStringJSON.parse(payload)
            ?? (try? CanonicalJSON.decoder().decode([String: String].self, from: Data(payload.utf8))) ?? [:]
        let typed: JobPayload
        do { typed = try JobPayload(kind: kind, fields: fields) } catch {
            throw CatalogError.notFound("job \(id ?? 0): \(error)")
        }
        return QueuedJob(id: id ?? 0, itemID: itemId, state: state, attempts: attempts, maxAttempts: maxAttempts,
                         nextRunAt: nextRunAt, leaseOwner: leaseOwner, leaseExpiresAt: leaseExpiresAt, lastError: lastError,
                         payload: typed, createdAt: createdAt, updatedAt: updatedAt)
    }
}

struct ProofRow: CatalogRecord, PersistableRecord, ColumnWritten {
    static let databaseTableName = "proof"
    enum Columns: String, ColumnExpression {
        case itemId = "item_id", notary, kind, state, remoteId = "remote_id", receipt, txHash = "tx_hash"
        case blockHeight = "block_height", network, link, provenAt = "proven_at", error, submittedAt = "submitted_at"
        case updatedAt = "updated_at"
    }
    var itemId: Int64
    var notary: String
    var kind: ProofKind
    var state: Proof.State
    var remoteId: String?
    var receipt: String?
    var txHash: String?
    var blockHeight: Int64?
    var network: String?
    var link: String?
    var provenAt: Date?
    var error: String?
    var submittedAt: Date?
    var updatedAt: Date

    init(_ p: Proof) {
        itemId = p.itemID; notary = p.notary; kind = p.kind; state = p.state; remoteId = p.remoteID
        receipt = p.receipt?.hex; txHash = p.txHash; blockHeight = p.blockHeight; network = p.network; link = p.link
        provenAt = p.provenAt; error = p.error; submittedAt = p.submittedAt; updatedAt = p.updatedAt
    }

    /// Written by column, not through Encodable: GRDB's encoder (a keyed container and a
    /// snake-case conversion of each key, per row) was the largest part of saving a row.
    func encode(to c: inout PersistenceContainer) { encodeColumns(to: &c) }

    static let statements = ColumnStatements(table: databaseTableName, columns: [
        Columns.itemId, .notary, .kind, .state, .remoteId, .receipt, .txHash, .blockHeight, .network, .link, .provenAt, .error,
        .submittedAt, .updatedAt].map(\.rawValue), key: [Columns.itemId.rawValue, Columns.notary.rawValue])
    var columnValues: [(any DatabaseValueConvertible)?] {
        [itemId, notary, kind.rawValue, state.rawValue, remoteId, receipt, txHash, blockHeight, network, link,
         provenAt.map(StoredDate.text), error, submittedAt.map(StoredDate.text), StoredDate.text(updatedAt)]
    }

    /// How a proof row is named in errors: its item and notary (the key).
    static func name(itemID: Int64, notary: String) -> String { "of item \(itemID) by \(notary)" }

    init(row: Row) throws {
        // By column, not through Decodable: GRDB's keyed decoder converts every key from snake
        // case, per row; `evidence status` reads every proof, and spent most of its time there.
        itemId = try row.decode(Int64.self, forColumn: Columns.itemId)
        notary = try row.decode(String.self, forColumn: Columns.notary)
        let name = Self.name(itemID: itemId, notary: notary)
        kind = try Self.coded(try row.decode(String.self, forColumn: Columns.kind), Columns.kind, row: name)
        state = try Self.coded(try row.decode(String.self, forColumn: Columns.state), Columns.state, row: name)
        remoteId = try row.decode(String?.self, forColumn: Columns.remoteId)
        receipt = try row.decode(String?.self, forColumn: Columns.receipt)
        txHash = try row.decode(String?.self, forColumn: Columns.txHash)
        blockHeight = try row.decode(Int64?.self, forColumn: Columns.blockHeight)
        network = try row.decode(String?.self, forColumn: Columns.network)
        link = try row.decode(String?.self, forColumn: Columns.link)
        provenAt = try row.decode(Date?.self, forColumn: Columns.provenAt)
        error = try row.decode(String?.self, forColumn: Columns.error)
        submittedAt = try row.decode(Date?.self, forColumn: Columns.submittedAt)
        updatedAt = try row.decode(Date.self, forColumn: Columns.updatedAt)
    }

    func model() throws(CatalogError) -> Proof {
        let name = Self.name(itemID: itemId, notary: notary)
        return Proof(itemID: itemId, notary: notary, kind: kind, state: state, remoteID: remoteId,
                     receipt: try receipt.map { (hex) throws(CatalogError) in try Self.digest(hex, Columns.receipt, row: name) },
                     txHash: txHash, blockHeight: blockHeight, network: network, link: link, provenAt: provenAt, error: error,
                     submittedAt: submittedAt, updatedAt: updatedAt)
    }
}

struct CertificateRow: CatalogRecord, PersistableRecord, ColumnWritten {
    static let databaseTableName = "certificate"
    enum Columns: String, ColumnExpression {
        case itemId = "item_id", origin, sha256, size, createdAt = "created_at"
    }
    var itemId: Int64
    var origin: String
    var sha256: String
    var size: Int64
    var createdAt: Date

    init(_ c: Certificate) {
        itemId = c.itemID; origin = c.origin; sha256 = c.sha256.hex; size = c.size; createdAt = c.createdAt
    }

    /// Written by column, not through Encodable: GRDB's encoder (a keyed container and a
    /// snake-case conversion of each key, per row) was the largest part of saving a row.
    func encode(to c: inout PersistenceContainer) { encodeColumns(to: &c) }

    static let statements = ColumnStatements(table: databaseTableName, columns: [
        Columns.itemId, .origin, .sha256, .size, .createdAt].map(\.rawValue), key: [Columns.itemId.rawValue, Columns.origin.rawValue])
    var columnValues: [(any DatabaseValueConvertible)?] { [itemId, origin, sha256, size, StoredDate.text(createdAt)] }

    init(itemId: Int64, origin: String, sha256: String, size: Int64, createdAt: Date) {
        self.itemId = itemId; self.origin = origin; self.sha256 = sha256; self.size = size; self.createdAt = createdAt
    }

    /// Read by column, not through Decodable (see ProofRow).
    init(row: Row) throws {
        itemId = try row.decode(Int64.self, forColumn: Columns.itemId)
        origin = try row.decode(String.self, forColumn: Columns.origin)
        sha256 = try row.decode(String.self, forColumn: Columns.sha256)
        size = try row.decode(Int64.self, forColumn: Columns.size)
        createdAt = try row.decode(Date.self, forColumn: Columns.createdAt)
    }

    func model() throws(CatalogError) -> Certificate {
        Certificate(itemID: itemId, origin: origin, sha256: try Self.digest(sha256, Columns.sha256, row: "of item \(itemId) from \(origin)"),
                    size: size, createdAt: createdAt)
    }
}

struct ArchivedFileRow: CatalogRecord, PersistableRecord, ColumnWritten {
    static let databaseTableName = "archived_file"
    enum Columns: String, ColumnExpression {
        case itemId = "item_id", account, remotePath = "remote_path", role, sha256, size, verifiedBy = "verified_by"
        case remoteId = "remote_id", verifiedAt = "verified_at"
    }
    var itemId: Int64
    var account: String
    var remotePath: String
    var role: ArchiveRole
    var sha256: String
    var size: Int64
    var verifiedBy: String
    var remoteId: String?
    var verifiedAt: Date

    init(_ f: ArchivedFile) {
        itemId = f.itemID; account = f.account; remotePath = f.remotePath; role = f.role; sha256 = f.sha256.hex
        size = f.size; verifiedBy = f.verifiedBy; remoteId = f.remoteID; verifiedAt = f.verifiedAt
    }

    /// Written by column, not through Encodable: GRDB's encoder (a keyed container and a
    /// snake-case conversion of each key, per row) was the largest part of saving a row.
    func encode(to c: inout PersistenceContainer) { encodeColumns(to: &c) }

    static let statements = ColumnStatements(table: databaseTableName, columns: [
        Columns.itemId, .account, .remotePath, .role, .sha256, .size, .verifiedBy, .remoteId, .verifiedAt].map(\.rawValue),
        key: [Columns.itemId.rawValue, Columns.account.rawValue, Columns.remotePath.rawValue])
    var columnValues: [(any DatabaseValueConvertible)?] {
        [itemId, account, remotePath, role.rawValue, sha256, size, verifiedBy, remoteId, StoredDate.text(verifiedAt)]
    }

    init(itemId: Int64, account: String, remotePath: String, role: ArchiveRole, sha256: String, size: Int64,
         verifiedBy: String, remoteId: String?, verifiedAt: Date) {
        self.itemId = itemId; self.account = account; self.remotePath = remotePath; self.role = role; self.sha256 = sha256
        self.size = size; self.verifiedBy = verifiedBy; self.remoteId = remoteId; self.verifiedAt = verifiedAt
    }

    /// How an archive copy is named in errors: its remote path and item.
    static func name(itemID: Int64, remotePath: String) -> String { "\(remotePath) of item \(itemID)" }

    init(row: Row) throws {
        // By column, not through Decodable (see ProofRow).
        itemId = try row.decode(Int64.self, forColumn: Columns.itemId)
        account = try row.decode(String.self, forColumn: Columns.account)
        remotePath = try row.decode(String.self, forColumn: Columns.remotePath)
        role = try Self.coded(try row.decode(String.self, forColumn: Columns.role), Columns.role,
                              row: Self.name(itemID: itemId, remotePath: remotePath))
        sha256 = try row.decode(String.self, forColumn: Columns.sha256)
        size = try row.decode(Int64.self, forColumn: Columns.size)
        verifiedBy = try row.decode(String.self, forColumn: Columns.verifiedBy)
        remoteId = try row.decode(String?.self, forColumn: Columns.remoteId)
        verifiedAt = try row.decode(Date.self, forColumn: Columns.verifiedAt)
    }

    func model() throws(CatalogError) -> ArchivedFile {
        ArchivedFile(itemID: itemId, account: account, remotePath: remotePath, role: role,
                     sha256: try Self.digest(sha256, Columns.sha256, row: Self.name(itemID: itemId, remotePath: remotePath)),
                     size: size, verifiedBy: verifiedBy, remoteID: remoteId, verifiedAt: verifiedAt)
    }
}

struct SharedLinkRow: CatalogRecord, PersistableRecord {
    static let databaseTableName = "shared_link"
    enum Columns: String, ColumnExpression {
        case itemId = "item_id", account, remotePath = "remote_path", url, expires, passwordProtected = "password_protected"
        case fallback, createdAt = "created_at"
    }
    var itemId: Int64
    var account: String
    var remotePath: String
    var url: String
    var expires: Date?
    var passwordProtected: Bool
    var fallback: String?
    var createdAt: Date

    init(_ l: SharedLink) {
        itemId = l.itemID; account = l.account; remotePath = l.remotePath; url = l.url; expires = l.expires
        passwordProtected = l.passwordProtected; fallback = l.fallback; createdAt = l.createdAt
    }

    init(itemId: Int64, account: String, remotePath: String, url: String, expires: Date?, passwordProtected: Bool,
         fallback: String?, createdAt: Date) {
        self.itemId = itemId; self.account = account; self.remotePath = remotePath; self.url = url; self.expires = expires
        self.passwordProtected = passwordProtected; self.fallback = fallback; self.createdAt = createdAt
    }

    func model() -> SharedLink {
        SharedLink(itemID: itemId, account: account, remotePath: remotePath, url: url, expires: expires,
                   passwordProtected: passwordProtected, fallback: fallback, createdAt: createdAt)
    }
}
