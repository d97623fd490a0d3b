import EvidenceCatalog
import EvidenceCertificate
import EvidenceCore
import EvidenceStore
import Foundation

/// Our own certificate PDF for an item: file, hash, media summary, every proof, and the
/// commands an auditor runs on a bundle (`evidence bundle`) to check it without us.
public enum EvidenceCertificateMaker {
    public static func content(item: Item, sources: [SourceSighting], proofs: [Proof], custodyHead: String?,
                               now: Date = Date()) -> CertificateContent {
        let fileName = sources.first?.name ?? item.sha256.hex
        let shown = proofs.map { p -> CertificateContent.Proof in
            switch p.kind {
            case .qed:
                var detail: [String] = []
                if let n = p.network { detail.append(n) }
                if let h = p.blockHeight { detail.append("block \(h)") }
                if let s = p.remoteID { detail.append("report \(s)") }
                return .init(notary: "QED (\(p.notary))", status: p.state.rawValue, time: p.provenAt,
                             reference: p.txHash ?? p.remoteID ?? "-", detail: detail.joined(separator: " · "), link: p.link)
            default:
                return .init(notary: "RFC 3161 TSA (\(p.notary))", status: p.state.rawValue, time: p.provenAt,
                             reference: "serial \(p.remoteID ?? "-")", detail: p.network ?? p.link, link: nil)
            }
        }
        var commands = ["sha256sum -c SHA256SUMS"]
        for p in proofs where p.kind == .rfc3161 && p.state == .confirmed {
            commands.append("openssl ts -verify -data 'original/\(BundleNames.safe(fileName))' -in proofs/\(BundleNames.safe(p.notary)).tsr -CAfile proofs/\(BundleNames.safe(p.notary))-ca.pem")
        }
        commands.append("evidence verify .   (optional: every check at once)")
        return CertificateContent(fileName: fileName, size: item.size, sha256: item.sha256,
                                  mediaSummary: item.media?.summary, dateTaken: item.dateTaken,
                                  ingestedAt: item.createdAt, itemID: item.id, proofs: shown,
                                  verifyCommands: commands, custodyHead: custodyHead, generatedAt: now)
    }

    /// Renders and stores the certificate; returns its record (not yet saved in the catalog).
    public static func make(home: EvidenceHome, item: Item) throws -> Certificate {
        let sources = try home.catalog.sources(itemID: item.id)
        let proofs = try home.catalog.proofs(itemID: item.id)
        let head = try home.catalog.events(itemID: item.id).last?.hash
        let pdf = try CertificateRenderer.render(content(item: item, sources: sources, proofs: proofs, custodyHead: head))
        let stored = try home.store.put(pdf)
        return Certificate(itemID: item.id, origin: "evidence", sha256: stored.digest, size: Int64(pdf.count))
    }
}

/// File names inside a bundle: one path component, no control characters, no traversal.
public enum BundleNames {
    public static func safe(_ name: String) -> String {
        var s = String(name.unicodeScalars.map { c -> Character in
            (c.value < 0x20 || c == "/" || c == "\\" || c == "'" || c.value == 0x7F) ? "_" : Character(c)
        })
        if s.isEmpty || s == "." || s == ".." { s = "_" + s }
        if s.hasPrefix(".") { s = "_" + s.dropFirst() }
        while s.utf8.count > 200 { s.removeLast() }
        return s
    }
}
