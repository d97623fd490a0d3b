import EvidenceCore
import EvidenceStore
import Foundation
import GRDB

extension SQLiteCatalog {
    public func archivedFiles(itemID: Int64) throws(CatalogError) -> [ArchivedFile] {
        try readStatement { db in
            try ArchivedFileRow.fetchAll(db.cachedStatement(sql: "SELECT * FROM archived_file WHERE item_id = ? ORDER BY remote_path"), arguments: [itemID]).map { try $0.model() }
        }
    }

    /// Every archive copy recorded, for `log verify`'s cross-check against the custody events.
    public func allArchivedFiles() throws(CatalogError) -> [ArchivedFile] {
        try read { db in
            try ArchivedFileRow.order(ArchivedFileRow.Columns.itemId, ArchivedFileRow.Columns.remotePath).fetchAll(db).map { try $0.model() }
        }
    }

    public func saveArchivedFiles(_ files: [ArchivedFile]) throws(CatalogError) {
        try write { db in try Self.insertArchivedFiles(db, files) }
    }

    /// The rows and their `archived_file` events, in the caller's transaction.
    static func insertArchivedFiles(_ db: Database, _ files: [ArchivedFile]) throws {
        for file in files {
            try ArchivedFileRow(file).upsertRow(db)
            _ = try Self.appendEvent(db, itemID: file.itemID, kind: .archivedFile, actor: "evidence", details: [
                "account": file.account, "remote_path": file.remotePath, "role": file.role.rawValue, "sha256": file.sha256.hex,
                "size": String(file.size), "verified_by": file.verifiedBy,
            ])
        }
    }

    public func sharedLinks(itemID: Int64) throws(CatalogError) -> [SharedLink] {
        try read { db in try SharedLinkRow.filter(SharedLinkRow.Columns.itemId == itemID).fetchAll(db).map { $0.model() } }
    }

    public func allSharedLinks() throws(CatalogError) -> [SharedLink] {
        try read { db in try SharedLinkRow.order(SharedLinkRow.Columns.itemId).fetchAll(db).map { $0.model() } }
    }

    /// Records the link (the URL stays in the `shared_link` table) with a custody event that
    /// names it by `link_id`, the first 16 hex digits of its URL's SHA-256: a share URL is a
    /// bearer capability, and the custody log goes into every bundle an auditor takes away.
    public func saveSharedLink(_ link: SharedLink) throws(CatalogError) {
        try write { db in
            try SharedLinkRow(link).save(db)
            var details = ["account": link.account, "remote_path": link.remotePath, "link_id": SharedLink.id(of: link.url),
                           "password": link.passwordProtected ? "yes" : "no"]
            if let e = link.expires { details["expires"] = Timestamp.string(e) }
            if let f = link.fallback { details["fallback"] = f }
            _ = try Self.appendEvent(db, itemID: link.itemID, kind: .shareLink, actor: "evidence", details: details)
        }
    }
}
