import EvidenceBlocking
import EvidenceCatalog
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation

/// A notary's own certificate of a confirmed QED proof: fetched into memory (checked to be a
/// PDF), stored as an object and recorded for the item. Used by the
/// certificate job and by `evidence cert` when it is missing.
public enum NotaryCertificate {
    /// Returns the PDF. Throws `NotaryError` for what the notary answered, other errors for
    /// the store or catalog (they name the file or database).
    public static func fetch(_ proof: Proof, slug: String, with qed: QEDClient, home: EvidenceHome,
                             metrics: PipelineMetrics = .disabled) async throws -> Data {
        let (certificate, data) = try await fetchAndStore(proof, slug: slug, with: qed, home: home, metrics: metrics)
        try await onIOThread { () throws(CatalogError) in try home.catalog.saveCertificate(certificate) }
        return data
    }

    /// `fetch` without recording it: the PDF stored, and the certificate for the caller to
    /// record (the certificate job records it with its completion, in one transaction).
    public static func fetchAndStore(_ proof: Proof, slug: String, with qed: QEDClient, home: EvidenceHome,
                                     metrics: PipelineMetrics = .disabled) async throws -> (Certificate, Data) {
        let data = try await metrics.timeNotary(proof.notary, .certificate) { () async throws(NotaryError) in
            try await qed.certificate(slug: slug)
        }
        let digest = try await onIOThread { () throws(StoreError) in try home.store.put(data).digest }
        return (Certificate(itemID: proof.itemID, origin: proof.notary, sha256: digest, size: Int64(data.count)), data)
    }
}
