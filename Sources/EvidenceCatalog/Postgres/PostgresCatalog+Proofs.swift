import EvidenceCore
import EvidenceStore
import Foundation

extension PostgresCatalog {
    public func proofs(itemID: Int64) throws(CatalogError) -> [Proof] {
        try read { c in try c.query("SELECT * FROM proof WHERE item_id = $1 ORDER BY notary", [String(itemID)]).all.map { try $0.proof() } }
    }

    public func allProofs() throws(CatalogError) -> [Proof] {
        try read { c in try c.query("SELECT * FROM proof ORDER BY item_id, notary").all.map { try $0.proof() } }
    }

    public func proofs(notary: String, state: Proof.State, afterItem: Int64, limit: Int) throws(CatalogError) -> [Proof] {
        try read { c in
            try c.query("SELECT * FROM proof WHERE item_id > $1 AND notary = $2 AND state = $3 ORDER BY item_id LIMIT $4",
                        [String(afterItem), notary, state.rawValue, String(max(0, limit))]).all.map { try $0.proof() }
        }
    }

    public func proofs(notary: String, remoteID: String) throws(CatalogError) -> [Proof] {
        try read { c in
            try c.query("SELECT * FROM proof WHERE notary = $1 AND remote_id = $2 ORDER BY item_id", [notary, remoteID]).all.map { try $0.proof() }
        }
    }

    @discardableResult
    public func saveProof(_ proof: Proof,
                          then decide: @escaping @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?)
        throws(CatalogError) -> Item
    {
        try write(custody: true) { tx in
            // The item row locked first: two nodes saving two notaries' proofs of one item decide in turn.
            let before = try Self.item(tx, proof.itemID, forUpdate: true)
            return try Self.saveProof(tx, proof, before: before, decide)
        }
    }

    @discardableResult
    public func saveProof(_ proof: Proof, ifCurrent state: Proof.State, remoteID: String, receipt: SHA256Digest?,
                          then decide: @escaping @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?)
        throws(CatalogError) -> Item?
    {
        try write(custody: true) { tx -> Item? in try Self.saveProof(tx, proof, ifCurrent: state, remoteID: remoteID, receipt: receipt, decide) }
    }

    public func saveProofs(_ saves: [ProofSave], ifCurrent state: Proof.State, remoteID: String) throws(CatalogError) -> [Int64: Item] {
        guard !saves.isEmpty else { return [:] }
        return try write(custody: true) { tx in
            try ProofSave.each(saves) { try Self.saveProof(tx, $0.proof, ifCurrent: state, remoteID: remoteID, receipt: nil, $0.decide) }
        }
    }

    /// `saveProof(_:ifCurrent:…)` inside the caller's transaction (the custody lock taken).
    static func saveProof(_ tx: Tx, _ proof: Proof, ifCurrent state: Proof.State, remoteID: String, receipt: SHA256Digest?,
                          _ decide: @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?) throws -> Item? {
        // The item row locked first, so the proof read below cannot change before the write.
        let before = try Self.item(tx, proof.itemID, forUpdate: true)
        let current = try tx.query("SELECT state, remote_id, receipt FROM proof WHERE item_id = $1 AND notary = $2",
                                   [String(proof.itemID), proof.notary]).first
        guard let current, current.string("state") == state.rawValue, current.string("remote_id") == remoteID,
              receipt == nil || current.string("receipt") == receipt?.hex else { return nil }
        return try Self.saveProof(tx, proof, before: before, decide)
    }

    static func saveProof(_ tx: Tx, _ proof: Proof, before: Item,
                          _ decide: @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?) throws -> Item {
        do {
            try tx.query("""
                INSERT INTO proof (item_id, notary, kind, state, remote_id, receipt, tx_hash, block_height, network, link,
                                   proven_at, error, submitted_at, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                ON CONFLICT (item_id, notary) DO UPDATE SET kind = EXCLUDED.kind, state = EXCLUDED.state,
                  remote_id = EXCLUDED.remote_id, receipt = EXCLUDED.receipt, tx_hash = EXCLUDED.tx_hash,
                  block_height = EXCLUDED.block_height, network = EXCLUDED.network, link = EXCLUDED.link,
                  proven_at = EXCLUDED.proven_at, error = EXCLUDED.error, submitted_at = EXCLUDED.submitted_at,
                  updated_at = EXCLUDED.updated_at
                """, [String(proof.itemID), proof.notary, proof.kind.rawValue, proof.state.rawValue, proof.remoteID,
                      proof.receipt?.hex, proof.txHash, pg(proof.blockHeight), proof.network, proof.link, pg(proof.provenAt),
                      proof.error, pg(proof.submittedAt), pg(proof.updatedAt)])
            _ = try Self.appendEvent(tx, itemID: proof.itemID, kind: .notary(proof.state), actor: "evidence", details: proof.custodyDetails)
            let confirmed = Set(try tx.query("SELECT notary FROM proof WHERE item_id = $1 AND state = 'confirmed'",
                                             [String(proof.itemID)]).all.map { try $0.text("notary") })
            if let transition = decide(before.state, confirmed) {
                try Self.applyTransition(tx, itemID: proof.itemID, transition)
            }
            return try Self.item(tx, proof.itemID)
        }
    }

    public func certificates(itemID: Int64) throws(CatalogError) -> [Certificate] {
        try read { c in
            try c.query("SELECT * FROM certificate WHERE item_id = $1 ORDER BY origin", [String(itemID)]).all.map { try $0.certificate() }
        }
    }

    public func allCertificates() throws(CatalogError) -> [Certificate] {
        try read { c in try c.query("SELECT * FROM certificate ORDER BY item_id, origin").all.map { try $0.certificate() } }
    }

    public func allArchivedFiles() throws(CatalogError) -> [ArchivedFile] {
        try read { c in try c.query("SELECT * FROM archived_file ORDER BY item_id, remote_path").all.map { try $0.archivedFile() } }
    }

    public func saveCertificate(_ certificate: Certificate) throws(CatalogError) {
        try write(custody: true) { tx in try Self.insertCertificate(tx, certificate) }
    }

    /// The certificate's row (insert or replace per item and origin) and its `certificate` event.
    static func insertCertificate(_ tx: Tx, _ certificate: Certificate) throws {
        try tx.query("""
            INSERT INTO certificate (item_id, origin, sha256, size, created_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (item_id, origin) DO UPDATE SET sha256 = EXCLUDED.sha256, size = EXCLUDED.size,
              created_at = EXCLUDED.created_at
            """, [String(certificate.itemID), certificate.origin, certificate.sha256.hex, String(certificate.size),
                  pg(certificate.createdAt)])
        _ = try Self.appendEvent(tx, itemID: certificate.itemID, kind: .certificate, actor: "evidence",
                                 details: ["origin": certificate.origin, "sha256": certificate.sha256.hex,
                                           "size": String(certificate.size)])
    }

    public func archivedFiles(itemID: Int64) throws(CatalogError) -> [ArchivedFile] {
        try read { c in
            try c.query("SELECT * FROM archived_file WHERE item_id = $1 ORDER BY remote_path", [String(itemID)]).all
                .map { try $0.archivedFile() }
        }
    }

    public func saveArchivedFiles(_ files: [ArchivedFile]) throws(CatalogError) {
        try write(custody: true) { tx in try Self.insertArchivedFiles(tx, files) }
    }

    /// The rows and their `archived_file` events, in the caller's transaction (one that holds the custody lock).
    static func insertArchivedFiles(_ tx: Tx, _ files: [ArchivedFile]) throws {
          for file in files {
            try tx.query("""
                INSERT INTO archived_file (item_id, account, remote_path, role, sha256, size, verified_by, remote_id, verified_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                ON CONFLICT (item_id, account, remote_path) DO UPDATE SET role = EXCLUDED.role, sha256 = EXCLUDED.sha256,
                  size = EXCLUDED.size, verified_by = EXCLUDED.verified_by, remote_id = EXCLUDED.remote_id,
                  verified_at = EXCLUDED.verified_at
                """, [String(file.itemID), file.account, file.remotePath, file.role.rawValue, file.sha256.hex, String(file.size),
                      file.verifiedBy, file.remoteID, pg(file.verifiedAt)])
            _ = try Self.appendEvent(tx, itemID: file.itemID, kind: .archivedFile, actor: "evidence", details: [
                "account": file.account, "remote_path": file.remotePath, "role": file.role.rawValue, "sha256": file.sha256.hex,
                "size": String(file.size), "verified_by": file.verifiedBy,
            ])
          }
    }

    public func sharedLinks(itemID: Int64) throws(CatalogError) -> [SharedLink] {
        try read { c in try c.query("SELECT * FROM shared_link WHERE item_id = $1", [String(itemID)]).all.map { try $0.sharedLink() } }
    }

    public func allSharedLinks() throws(CatalogError) -> [SharedLink] {
        try read { c in try c.query("SELECT * FROM shared_link ORDER BY item_id").all.map { try $0.sharedLink() } }
    }

    /// As in SQLite: the URL stays in `shared_link`; the custody event names it by `link_id`.
    public func saveSharedLink(_ link: SharedLink) throws(CatalogError) {
        try write(custody: true) { tx in
            try tx.query("""
                INSERT INTO shared_link (item_id, account, remote_path, url, expires, password_protected, fallback, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                ON CONFLICT (item_id, account) DO UPDATE SET remote_path = EXCLUDED.remote_path, url = EXCLUDED.url,
                  expires = EXCLUDED.expires, password_protected = EXCLUDED.password_protected, fallback = EXCLUDED.fallback,
                  created_at = EXCLUDED.created_at
                """, [String(link.itemID), link.account, link.remotePath, link.url, pg(link.expires), pg(link.passwordProtected),
                      link.fallback, pg(link.createdAt)])
            var details = ["account": link.account, "remote_path": link.remotePath, "link_id": SharedLink.id(of: link.url),
                           "password": link.passwordProtected ? "yes" : "no"]
            if let e = link.expires { details["expires"] = Timestamp.string(e) }
            if let f = link.fallback { details["fallback"] = f }
            _ = try Self.appendEvent(tx, itemID: link.itemID, kind: .shareLink, actor: "evidence", details: details)
        }
    }
}
