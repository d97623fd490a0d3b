import EvidenceCore
import Foundation
import GRDB

/// What `importCatalog` copied.
public struct CatalogImport: Sendable, Codable, Equatable {
    public var items = 0, sources = 0, quarantine = 0, events = 0, jobs = 0, proofs = 0, certificates = 0
    public var archivedFiles = 0, sharedLinks = 0
    /// The custody head both catalogs end at (seq and hash), after both chains verified.
    public var headSeq: Int64 = 0
    public var headHash = CustodyEvent.genesis
}

extension PostgresCatalog {
    /// Copies a SQLite catalog into this one, which must be empty, row for row (ids, custody
    /// events with their hashes, jobs with their leases and due times), in one transaction.
    /// The source chain must verify before anything is written, and this catalog's chain must
    /// verify after, ending at the same head; otherwise nothing is kept.
    public func importCatalog(from source: SQLiteCatalog,
                              progress: (@Sendable (_ table: String, _ rows: Int) -> Void)? = nil) throws(CatalogError) -> CatalogImport {
        let before = try source.verifyChain()
        guard before.ok else {
            throw .database(path: source.location, detail: "its custody chain does not verify, so it is not copied: "
                            + before.problems.prefix(3).map(\.description).joined(separator: "; "))
        }
        let rows: Snapshot = try source.read { db in
            Snapshot(items: try ItemRow.order(ItemRow.Columns.id).fetchAll(db),
                     sources: try SourceRow.order(SourceRow.Columns.id).fetchAll(db),
                     quarantine: try QuarantineRow.order(QuarantineRow.Columns.id).fetchAll(db),
                     events: try CustodyRow.order(CustodyRow.Columns.seq).fetchAll(db), jobs: try JobRow.order(JobRow.Columns.id).fetchAll(db),
                     proofs: try ProofRow.fetchAll(db), certificates: try CertificateRow.fetchAll(db),
                     archived: try ArchivedFileRow.fetchAll(db), links: try SharedLinkRow.fetchAll(db))
        }
        var report = CatalogImport()
        try write(custody: true) { tx in
            let present = try tx.query("SELECT (SELECT count(*) FROM item) + (SELECT count(*) FROM custody_event) + (SELECT count(*) FROM job) AS n")
                .first?.int("n") ?? 0
            guard present == 0 else {
                throw CatalogError.database(path: target.label, detail: "it already holds items, events or jobs: a catalog is copied only into an empty database")
            }
            // The custody lock, as every append takes it (`custody: true`): no node can add an
            // event while the log is copied.
            for r in rows.items {
                try tx.query("""
                    INSERT INTO item (id, sha256, size, state, state_reason, media_json, date_taken, created_at, updated_at, failed_from,
                                      superseded_by)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                    """, [pg(r.id), r.sha256, String(r.size), r.state.rawValue, r.stateReason, r.mediaJson, pg(r.dateTaken),
                          pg(r.createdAt), pg(r.updatedAt), r.failedFrom?.rawValue, pg(r.supersededBy)])
            }
            progress?("item", rows.items.count)
            for r in rows.sources {
                try tx.query("""
                    INSERT INTO source (id, item_id, path, name, rule, device, inode, size, mtime_nanos, seen_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                    """, [pg(r.id), String(r.itemId), r.path, r.name, r.rule, String(r.device), String(r.inode), String(r.size),
                          String(r.mtimeNanos), pg(r.seenAt)])
            }
            progress?("source", rows.sources.count)
            for r in rows.quarantine {
                try tx.query("INSERT INTO quarantine (id, path, rule, reason, at, resolved) VALUES ($1, $2, $3, $4, $5, $6)",
                             [pg(r.id), r.path, r.rule, r.reason, pg(r.at), pg(r.resolved)])
            }
            for r in rows.events {
                try tx.query("""
                    INSERT INTO custody_event (seq, item_id, at, kind, actor, details, prev_hash, hash)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                    """, [String(r.seq), pg(r.itemId), r.at, r.kind, r.actor, r.details, r.prevHash, r.hash])
            }
            progress?("custody_event", rows.events.count)
            for r in rows.jobs {
                try tx.query("""
                    INSERT INTO job (id, kind, item_id, state, attempts, max_attempts, next_run_at, lease_owner, lease_expires_at,
                                     last_error, payload, dedupe_key, created_at, updated_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                    """, [pg(r.id), r.kind.rawValue, pg(r.itemId), r.state.rawValue, pg(r.attempts), pg(r.maxAttempts), pg(r.nextRunAt), r.leaseOwner,
                          pg(r.leaseExpiresAt), r.lastError, r.payload, r.dedupeKey, pg(r.createdAt), pg(r.updatedAt)])
            }
            progress?("job", rows.jobs.count)
            for r in rows.proofs {
                try tx.query("""
                    INSERT INTO proof (item_id, notary, kind, state, remote_id, receipt, tx_hash, block_height, network, link,
                                       proven_at, error, submitted_at, updated_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                    """, [String(r.itemId), r.notary, r.kind.rawValue, r.state.rawValue, r.remoteId, r.receipt, r.txHash, pg(r.blockHeight), r.network,
                          r.link, pg(r.provenAt), r.error, pg(r.submittedAt), pg(r.updatedAt)])
            }
            for r in rows.certificates {
                try tx.query("INSERT INTO certificate (item_id, origin, sha256, size, created_at) VALUES ($1, $2, $3, $4, $5)",
                             [String(r.itemId), r.origin, r.sha256, String(r.size), pg(r.createdAt)])
            }
            for r in rows.archived {
                try tx.query("""
                    INSERT INTO archived_file (item_id, account, remote_path, role, sha256, size, verified_by, remote_id, verified_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                    """, [String(r.itemId), r.account, r.remotePath, r.role.rawValue, r.sha256, String(r.size), r.verifiedBy, r.remoteId,
                          pg(r.verifiedAt)])
            }
            for r in rows.links {
                try tx.query("""
                    INSERT INTO shared_link (item_id, account, remote_path, url, expires, password_protected, fallback, created_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                    """, [String(r.itemId), r.account, r.remotePath, r.url, pg(r.expires), pg(r.passwordProtected), r.fallback,
                          pg(r.createdAt)])
            }
            // New rows continue after the copied ids.
            for table in ["item", "source", "quarantine", "job"] {
                try tx.query("SELECT setval(pg_get_serial_sequence('\(table)', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM \(table)")
            }
            // The copy must be the same chain before it is kept.
            let copied = try tx.query("SELECT * FROM custody_event ORDER BY seq").all.map { try $0.event() }
            let check = ChainCheck.verify(events: copied, headPath: nil)
            guard check.ok, copied.count == rows.events.count, check.headHash == before.headHash else {
                throw CatalogError.database(path: target.label, detail: "the copied custody chain does not verify or ends elsewhere: "
                                            + check.problems.prefix(3).map(\.description).joined(separator: "; "))
            }
            report = CatalogImport(items: rows.items.count, sources: rows.sources.count, quarantine: rows.quarantine.count,
                                   events: rows.events.count, jobs: rows.jobs.count, proofs: rows.proofs.count,
                                   certificates: rows.certificates.count, archivedFiles: rows.archived.count,
                                   sharedLinks: rows.links.count, headSeq: copied.last?.seq ?? 0, headHash: check.headHash)
        }
        let after = try verifyChain()
        guard after.ok, after.headHash == before.headHash else {
            throw .database(path: target.label, detail: "after the copy the custody chain does not verify: "
                            + after.problems.prefix(3).map(\.description).joined(separator: "; "))
        }
        return report
    }

    private struct Snapshot: Sendable {
        var items: [ItemRow], sources: [SourceRow], quarantine: [QuarantineRow], events: [CustodyRow], jobs: [JobRow]
        var proofs: [ProofRow], certificates: [CertificateRow], archived: [ArchivedFileRow], links: [SharedLinkRow]
    }
}
