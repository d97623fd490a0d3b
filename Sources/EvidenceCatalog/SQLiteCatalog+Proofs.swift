import EvidenceCore
import Foundation
import GRDB

extension SQLiteCatalog {
    public func proofs(itemID: Int64) throws(CatalogError) -> [Proof] {
        try read { db in
            try ProofRow.filter(Column("item_id") == itemID).order(Column("notary")).fetchAll(db).map { $0.model() }
        }
    }

    public func allProofs() throws(CatalogError) -> [Proof] {
        try read { db in try ProofRow.order(Column("item_id"), Column("notary")).fetchAll(db).map { $0.model() } }
    }

    @discardableResult
    public func saveProof(_ proof: Proof, required: [String], whenAllConfirmed: [JobSpec]) throws(CatalogError) -> Item {
        try write { db in
            guard let before = try ItemRow.fetchOne(db, key: proof.itemID) else {
                throw CatalogError.notFound("item \(proof.itemID)")
            }
            try ProofRow(proof).save(db)
            var details = ["notary": proof.notary, "kind": proof.kind]
            if let r = proof.remoteID { details["remote_id"] = r }
            if let r = proof.receipt { details["receipt"] = r.hex }
            if let t = proof.txHash { details["tx"] = t }
            if let e = proof.error { details["error"] = e }
            _ = try Self.appendEvent(db, itemID: proof.itemID, kind: "notary-\(proof.state.rawValue)", actor: "evidence",
                                     details: details)
            let state = ItemState(rawValue: before.state) ?? .quarantined
            switch proof.state {
            case .pending where state < .submitted:
                try Self.applyTransition(db, itemID: proof.itemID, JobTransition(state: .submitted, event: "submitted",
                                                                                  details: ["notary": proof.notary]))
            case .failed where state != .failed:
                try Self.applyTransition(db, itemID: proof.itemID, JobTransition(
                    state: .failed, event: "failed", reason: "\(proof.notary): \(proof.error ?? "notarization failed")"))
            case .confirmed where state < .confirmed:
                let confirmed = try String.fetchSet(db, sql: "SELECT notary FROM proof WHERE item_id = ? AND state = 'confirmed'",
                                                    arguments: [proof.itemID])
                if Set(required).isSubset(of: confirmed) {
                    try Self.applyTransition(db, itemID: proof.itemID, JobTransition(
                        state: .confirmed, event: "confirmed", details: ["notaries": required.joined(separator: ",")],
                        jobs: whenAllConfirmed))
                }
            default:
                break
            }
            return try ItemRow.fetchOne(db, key: proof.itemID)!.model()
        }
    }

    public func certificates(itemID: Int64) throws(CatalogError) -> [Certificate] {
        try read { db in
            try CertificateRow.filter(Column("item_id") == itemID).order(Column("origin")).fetchAll(db).map { $0.model() }
        }
    }

    public func saveCertificate(_ certificate: Certificate) throws(CatalogError) {
        try write { db in
            try CertificateRow(certificate).save(db)
            _ = try Self.appendEvent(db, itemID: certificate.itemID, kind: "certificate", actor: "evidence",
                                     details: ["origin": certificate.origin, "sha256": certificate.sha256.hex,
                                               "size": String(certificate.size)])
        }
    }
}
