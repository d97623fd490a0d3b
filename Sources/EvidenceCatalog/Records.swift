import EvidenceCore
import Foundation
import GRDB

// One Codable record per table; columns in snake_case. Public value types live in
// EvidenceCore; these map them to rows.

struct ItemRow: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "item"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
    var id: Int64?
    var sha256: String
    var size: Int64
    var state: String
    var stateReason: String?
    var mediaJson: String?
    var dateTaken: Date?
    var createdAt: Date
    var updatedAt: Date

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// The item; a row whose state or hash this version cannot read (a catalog edited by hand or
    /// written by a newer version) is an error naming the item, never shown as another state.
    func model() throws -> Item {
        let media = mediaJson.flatMap { try? CanonicalJSON.decoder().decode(MediaInfo.self, from: Data($0.utf8)) }
        guard let digest = SHA256Digest(hex: sha256) else {
            throw CatalogError.database(path: "item \(id ?? 0)", detail: "its sha256 \"\(sha256.prefix(80))\" is not 64 hex digits")
        }
        return Item(id: id ?? 0, sha256: digest, size: size,
                    state: try ItemState.stored(state, item: id ?? 0), stateReason: stateReason, media: media,
                    dateTaken: dateTaken, createdAt: createdAt, updatedAt: updatedAt)
    }
}

struct SourceRow: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "source"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
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

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    func model() -> SourceSighting {
        SourceSighting(id: id ?? 0, itemID: itemId, path: path, name: name, rule: rule,
                       device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode), size: size,
                       mtime: Date(timeIntervalSince1970: Double(mtimeNanos) / 1e9), mtimeNanos: mtimeNanos,
                       seenAt: seenAt)
    }
}

struct QuarantineRow: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "quarantine"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
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

struct CustodyRow: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "custody_event"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
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

    func model() -> CustodyEvent {
        CustodyEvent(seq: seq, itemID: itemId, at: at, kind: kind, actor: actor, details: details,
                     prevHash: prevHash, hash: hash)
    }
}

struct JobRow: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "job"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
    var id: Int64?
    var kind: String
    var itemId: Int64?
    var state: String
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

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// The job, or an error naming it when its kind or parameters cannot be read (a catalog
    /// written by hand or by a newer version).
    func model() throws -> QueuedJob {
        guard let jobKind = JobKind(rawValue: kind) else {
            throw CatalogError.notFound("job \(id ?? 0): unknown kind \"\(kind)\"")
        }
        let fields = (try? CanonicalJSON.decoder().decode([String: String].self, from: Data(payload.utf8))) ?? [:]
        let typed: JobPayload
        do { typed = try JobPayload(kind: jobKind, fields: fields) } catch {
            throw CatalogError.notFound("job \(id ?? 0): \(error)")
        }
        return QueuedJob(id: id ?? 0, itemID: itemId, state: QueuedJob.State(rawValue: state) ?? .failed,
                         attempts: attempts, maxAttempts: maxAttempts, nextRunAt: nextRunAt, leaseOwner: leaseOwner,
                         leaseExpiresAt: leaseExpiresAt, lastError: lastError, payload: typed, createdAt: createdAt,
                         updatedAt: updatedAt)
    }
}

struct ProofRow: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "proof"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
    var itemId: Int64
    var notary: String
    var kind: String
    var state: String
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
        itemId = p.itemID; notary = p.notary; kind = p.kind.rawValue; state = p.state.rawValue; remoteId = p.remoteID
        receipt = p.receipt?.hex; txHash = p.txHash; blockHeight = p.blockHeight; network = p.network; link = p.link
        provenAt = p.provenAt; error = p.error; submittedAt = p.submittedAt; updatedAt = p.updatedAt
    }

    func model() throws -> Proof {
        guard let proofKind = ProofKind(rawValue: kind) else {
            throw CatalogError.notFound("proof of item \(itemId) by \(notary): unknown kind \"\(kind)\"")
        }
        return Proof(itemID: itemId, notary: notary, kind: proofKind, state: Proof.State(rawValue: state) ?? .failed,
              remoteID: remoteId, receipt: receipt.flatMap { SHA256Digest(hex: $0) }, txHash: txHash,
              blockHeight: blockHeight, network: network, link: link, provenAt: provenAt, error: error,
              submittedAt: submittedAt, updatedAt: updatedAt)
    }
}

struct CertificateRow: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "certificate"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
    var itemId: Int64
    var origin: String
    var sha256: String
    var size: Int64
    var createdAt: Date

    init(_ c: Certificate) {
        itemId = c.itemID; origin = c.origin; sha256 = c.sha256.hex; size = c.size; createdAt = c.createdAt
    }

    func model() -> Certificate {
        Certificate(itemID: itemId, origin: origin, sha256: SHA256Digest(hex: sha256)!, size: size, createdAt: createdAt)
    }
}

struct ArchivedFileRow: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "archived_file"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
    var itemId: Int64
    var account: String
    var remotePath: String
    var role: String
    var sha256: String
    var size: Int64
    var verifiedBy: String
    var remoteId: String?
    var verifiedAt: Date

    init(_ f: ArchivedFile) {
        itemId = f.itemID; account = f.account; remotePath = f.remotePath; role = f.role.rawValue; sha256 = f.sha256.hex
        size = f.size; verifiedBy = f.verifiedBy; remoteId = f.remoteID; verifiedAt = f.verifiedAt
    }

    func model() throws -> ArchivedFile {
        guard let archiveRole = ArchiveRole(rawValue: role) else {
            throw CatalogError.notFound("archived file \(remotePath) of item \(itemId): unknown role \"\(role)\"")
        }
        return ArchivedFile(itemID: itemId, account: account, remotePath: remotePath, role: archiveRole, sha256: SHA256Digest(hex: sha256)!,
                     size: size, verifiedBy: verifiedBy, remoteID: remoteId, verifiedAt: verifiedAt)
    }
}

struct SharedLinkRow: Codable, FetchableRecord, PersistableRecord, Sendable {
    static let databaseTableName = "shared_link"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { StoredDate.encoding }
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

    func model() -> SharedLink {
        SharedLink(itemID: itemId, account: account, remotePath: remotePath, url: url, expires: expires,
                   passwordProtected: passwordProtected, fallback: fallback, createdAt: createdAt)
    }
}
