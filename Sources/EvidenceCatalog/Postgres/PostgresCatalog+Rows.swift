import EvidenceCore
import Foundation

// PostgreSQL rows into the same row types (and so the same checks) as SQLite's.

extension PGRow {
    func itemRow() throws -> ItemRow {
        let id = try int64("id"), name = String(id)
        return ItemRow(id: id, sha256: try text("sha256"), size: try int64("size"),
                       state: try ItemRow.coded(try text("state"), ItemRow.Columns.state, row: name),
                       stateReason: string("state_reason"), mediaJson: string("media_json"), dateTaken: optionalDate("date_taken"),
                       createdAt: try date("created_at"), updatedAt: try date("updated_at"),
                       failedFrom: try ItemRow.codedIfPresent(string("failed_from"), ItemRow.Columns.failedFrom, row: name),
                       supersededBy: optionalInt64("superseded_by"))
    }
    func item() throws -> Item { try itemRow().model() }

    func source() throws -> SourceSighting {
        SourceRow(id: try int64("id"), itemId: try int64("item_id"), path: try text("path"), name: try text("name"),
                  rule: string("rule"), device: try int64("device"), inode: try int64("inode"), size: try int64("size"),
                  mtimeNanos: try int64("mtime_nanos"), seenAt: try date("seen_at")).model()
    }

    func quarantine() throws -> QuarantineEntry {
        QuarantineRow(id: try int64("id"), path: try text("path"), rule: string("rule"), reason: try text("reason"),
                      at: try date("at"), resolved: bool("resolved")).model()
    }

    func event() throws -> CustodyEvent {
        CustodyEvent(seq: try int64("seq"), itemID: optionalInt64("item_id"), at: try text("at"), kind: try text("kind"),
                     actor: try text("actor"), details: try text("details"), prevHash: try text("prev_hash"), hash: try text("hash"))
    }

    func jobRow() throws -> JobRow {
        let id = try int64("id"), name = String(id)
        return JobRow(id: id, kind: try JobRow.coded(try text("kind"), JobRow.Columns.kind, row: name), itemId: optionalInt64("item_id"),
                      state: try JobRow.coded(try text("state"), JobRow.Columns.state, row: name),
                      attempts: try int("attempts"), maxAttempts: try int("max_attempts"), nextRunAt: try date("next_run_at"),
                      leaseOwner: string("lease_owner"), leaseExpiresAt: optionalDate("lease_expires_at"), lastError: string("last_error"),
                      payload: try text("payload"), dedupeKey: try text("dedupe_key"), createdAt: try date("created_at"),
                      updatedAt: try date("updated_at"))
    }

    func proof() throws -> Proof {
        let itemID = try int64("item_id"), notary = try text("notary")
        let name = ProofRow.name(itemID: itemID, notary: notary)
        var row = ProofRow(Proof(itemID: itemID, notary: notary, kind: .rfc3161, state: .pending, updatedAt: try date("updated_at")))
        row.kind = try ProofRow.coded(try text("kind"), ProofRow.Columns.kind, row: name)
        row.state = try ProofRow.coded(try text("state"), ProofRow.Columns.state, row: name)
        row.remoteId = string("remote_id")
        row.receipt = string("receipt"); row.txHash = string("tx_hash"); row.blockHeight = optionalInt64("block_height")
        row.network = string("network"); row.link = string("link"); row.provenAt = optionalDate("proven_at")
        row.error = string("error"); row.submittedAt = optionalDate("submitted_at")
        return try row.model()
    }

    func certificate() throws -> Certificate {
        try CertificateRow(itemId: try int64("item_id"), origin: try text("origin"), sha256: try text("sha256"), size: try int64("size"),
                           createdAt: try date("created_at")).model()
    }

    func archivedFile() throws -> ArchivedFile {
        let itemID = try int64("item_id"), remotePath = try text("remote_path")
        return try ArchivedFileRow(itemId: itemID, account: try text("account"), remotePath: remotePath,
                                   role: try ArchivedFileRow.coded(try text("role"), ArchivedFileRow.Columns.role,
                                                                   row: ArchivedFileRow.name(itemID: itemID, remotePath: remotePath)),
                                   sha256: try text("sha256"), size: try int64("size"), verifiedBy: try text("verified_by"),
                                   remoteId: string("remote_id"), verifiedAt: try date("verified_at")).model()
    }

    func sharedLink() throws -> SharedLink {
        SharedLinkRow(itemId: try int64("item_id"), account: try text("account"), remotePath: try text("remote_path"),
                      url: try text("url"), expires: optionalDate("expires"), passwordProtected: bool("password_protected"),
                      fallback: string("fallback"), createdAt: try date("created_at")).model()
    }
}

/// Parameter text for a date (nil stays NULL).
func pg(_ d: Date?) -> String? { d.map(PGTime.string) }
func pg(_ n: Int64?) -> String? { n.map(String.init) }
func pg(_ n: Int) -> String { String(n) }
func pg(_ b: Bool) -> String { b ? "true" : "false" }
/// A text[] literal of identifiers we name ourselves (job kinds): `{a,b}`.
func pgArray(_ values: [String]) -> String {
    "{" + values.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        .joined(separator: ",") + "}"
}
