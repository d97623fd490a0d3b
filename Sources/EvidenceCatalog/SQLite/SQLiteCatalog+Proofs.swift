import EvidenceCore
import Foundation
import GRDB

extension SQLiteCatalog {
    public func proofs(itemID: Int64) throws(CatalogError) -> [Proof] {
        try readStatement { db in
            try ProofRow.fetchAll(db.cachedStatement(sql: "SELECT * FROM proof WHERE item_id = ? ORDER BY notary"), arguments: [itemID]).map { try $0.model() }
        }
    }

    public func allProofs() throws(CatalogError) -> [Proof] {
        try readStatement { db in try ProofRow.order(ProofRow.Columns.itemId, ProofRow.Columns.notary).fetchAll(db).map { try $0.model() } }
    }

    public func proofs(notary: String, state: Proof.State, afterItem: Int64, limit: Int) throws(CatalogError) -> [Proof] {
        try readStatement { db in
            try ProofRow.fetchAll(db.cachedStatement(sql: """
                SELECT * FROM proof WHERE item_id > ? AND notary = ? AND state = ? ORDER BY item_id LIMIT ?
                """), arguments: [afterItem, notary, state.rawValue, max(0, limit)]).map { try $0.model() }
        }
    }

    public func proofs(notary: String, remoteID: String) throws(CatalogError) -> [Proof] {
        try readStatement { db in
            try ProofRow.filter(ProofRow.Columns.notary == notary && ProofRow.Columns.remoteId == remoteID)
                .order(ProofRow.Columns.itemId).fetchAll(db).map { try $0.model() }
        }
    }

    @discardableResult
    public func saveProof(_ proof: Proof,
                          then decide: @escaping @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?)
        throws(CatalogError) -> Item
    {
        try write { db in try Self.saveProof(db, proof, decide) }
    }

    @discardableResult
    public func saveProof(_ proof: Proof, ifCurrent state: Proof.State, remoteID: String, receipt: SHA256Digest?,
                          then decide: @escaping @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?)
        throws(CatalogError) -> Item?
    {
        try write { db -> Item? in try Self.saveProof(db, proof, ifCurrent: state, remoteID: remoteID, receipt: receipt, decide) }
    }

    public func saveProofs(_ saves: [ProofSave], ifCurrent state: Proof.State, remoteID: String) throws(CatalogError) -> [Int64: Item] {
        guard !saves.isEmpty else { return [:] }
        return try write { db in
            try ProofSave.each(saves) { try Self.saveProof(db, $0.proof, ifCurrent: state, remoteID: remoteID, receipt: nil, $0.decide) }
        }
    }

    /// `saveProof(_:ifCurrent:…)` inside the caller's transaction.
    static func saveProof(_ db: Database, _ proof: Proof, ifCurrent state: Proof.State, remoteID: String, receipt: SHA256Digest?,
                          _ decide: @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?) throws -> Item? {
        let current = try ProofRow.filter(ProofRow.Columns.itemId == proof.itemID && ProofRow.Columns.notary == proof.notary).fetchOne(db)
        guard let current, current.state == state, current.remoteId == remoteID,
              receipt == nil || current.receipt == receipt?.hex else { return nil }
        return try Self.saveProof(db, proof, decide)
    }

    static func saveProof(_ db: Database, _ proof: Proof,
                          _ decide: @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?) throws -> Item {
        do {
            guard let before = try Self.itemRow(db, proof.itemID) else {
                throw CatalogError.notFound("item \(proof.itemID)")
            }
            try ProofRow(proof).upsertRow(db)
            _ = try Self.appendEvent(db, itemID: proof.itemID, kind: .notary(proof.state), actor: "evidence",
                                     details: proof.custodyDetails)
            let confirmed = try String.fetchSet(db, sql: "SELECT notary FROM proof WHERE item_id = ? AND state = 'confirmed'",
                                                arguments: [proof.itemID])
            if let transition = decide(before.state, confirmed) {
                try Self.applyTransition(db, itemID: proof.itemID, transition)
            }
            return try Self.itemRow(db, proof.itemID)!.model()
        }
    }

    public func certificates(itemID: Int64) throws(CatalogError) -> [Certificate] {
        try readStatement { db in
            try CertificateRow.fetchAll(db.cachedStatement(sql: "SELECT * FROM certificate WHERE item_id = ? ORDER BY origin"), arguments: [itemID]).map { try $0.model() }
        }
    }

    /// Every certificate recorded, for `log verify`'s cross-check against the custody events.
    public func allCertificates() throws(CatalogError) -> [Certificate] {
        try read { db in try CertificateRow.order(CertificateRow.Columns.itemId, CertificateRow.Columns.origin).fetchAll(db).map { try $0.model() } }
    }

    public func saveCertificate(_ certificate: Certificate) throws(CatalogError) {
        try write { db in try Self.insertCertificate(db, certificate) }
    }

    /// The certificate's row (insert or replace per item and origin) and its `certificate` event.
    static func insertCertificate(_ db: Database, _ certificate: Certificate) throws {
        try CertificateRow(certificate).upsertRow(db)
        _ = try Self.appendEvent(db, itemID: certificate.itemID, kind: .certificate, actor: "evidence",
                                 details: ["origin": certificate.origin, "sha256": certificate.sha256.hex,
                                           "size": String(certificate.size)])
    }
}
