import EvidenceCatalog
import EvidenceCertificate
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation

/// Our own certificate PDF for an item: file, hash, media summary, every proof, and the
/// commands an auditor runs on a bundle (`evidence bundle`) to check it without us.
public enum EvidenceCertificateMaker {
    /// `tsaSigners` maps an rfc3161 notary's name to the certificate that signed its token (read
    /// from the token: `signers(home:proofs:)`), whose fingerprint the certificate prints.
    public static func content(item: Item, sources: [SourceSighting], proofs: [Proof], custodyHead: String?,
                               tsaSigners: [String: TSACertificates.Info] = [:], labels: CertificateLabels = .init(),
                               timezone: LocalTime = .utc, poster: PosterFrames.Made? = nil, digests: [DigestAlgorithm: String] = [:],
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
            case .opentimestamps:
                let block = p.blockHeight.map { "Bitcoin block \($0)" } ?? "awaiting a Bitcoin block"
                return .init(notary: "OpenTimestamps (\(p.notary))", status: p.state.rawValue, time: p.provenAt,
                             reference: block, detail: p.state == .confirmed ? "block hash \(p.remoteID ?? "-")" : (p.link ?? ""), link: nil)
            default:
                return .init(notary: "RFC 3161 TSA (\(p.notary))", status: p.state.rawValue, time: p.provenAt,
                             reference: "serial \(p.remoteID ?? "-")", detail: p.network ?? p.link, link: nil)
            }
        }
        // No file of the bundle is named as a trust anchor: the CA comes from the TSA, and the
        // signer's fingerprint is printed here, on paper, to compare with the TSA's.
        var commands = ["sha256sum -c SHA256SUMS"]
        var notes: [String] = []
        let timestamps = proofs.filter { $0.kind.isTimestamp && $0.state == .confirmed }
        for p in timestamps {
            let n = BundleNames.safe(p.notary)
            if p.kind == .rfc4998 {
                commands.append("openssl ts -verify -digest \"$(python3 proofs/\(n).root.py 'original/\(BundleNames.safe(fileName))')\" -token_in -in proofs/\(n).tst "
                                + "-CAfile \(n.uppercased())-CA-FROM-THE-TSA.pem -untrusted proofs/\(n)-tsa.crt")
            } else {
                commands.append("openssl ts -verify -data 'original/\(BundleNames.safe(fileName))' -in proofs/\(n).tsr "
                                + "-CAfile \(n.uppercased())-CA-FROM-THE-TSA.pem -untrusted proofs/\(n)-tsa.crt")
            }
            var note = "\(n.uppercased())-CA-FROM-THE-TSA.pem is the CA certificate of the time-stamping authority \(p.notary)"
                + (p.link.map { " (\($0))" } ?? "")
                + ", obtained from the TSA itself (its operator or its published certificates), never from the bundle:"
                + " anyone can put a CA of their own in a folder."
            if let signer = tsaSigners[p.notary] {
                note += " The token was signed by \(signer.subject), certificate SHA-256 \(signer.sha256):"
                    + " compare it with the fingerprint the TSA publishes."
            }
            notes.append(note)
        }
        for p in proofs where p.kind == .opentimestamps && p.state == .confirmed {
            let n = BundleNames.safe(p.notary)
            commands.append("ots verify -f 'original/\(BundleNames.safe(fileName))' proofs/\(n).ots   (opentimestamps-client, with a Bitcoin node)")
        }
        commands.append("evidence verify . --trust \(timestamps.first.map { BundleNames.safe($0.notary).uppercased() } ?? "TSA")-CA-FROM-THE-TSA.pem   (optional: every check at once)")
        if timestamps.isEmpty {
            notes.append("No RFC 3161 time-stamp is recorded: until one is, these checks show only that the files agree with each other.")
        }
        var content = CertificateContent(fileName: fileName, size: item.size, sha256: item.sha256,
                                         mediaSummary: item.media?.plainSummary(fileName: fileName), dateTaken: item.dateTaken,
                                         ingestedAt: item.createdAt, itemID: item.id, proofs: shown,
                                         verifyCommands: commands, custodyHead: custodyHead, generatedAt: now)
        content.verifyNotes = notes
        content.otherDigests = DigestAlgorithm.extras.compactMap { a in digests[a].map { CertificateContent.Label(a.label, $0) } }
        content.labels = labels.printed.map { CertificateContent.Label($0.0, $0.1) }
        content.timezone = timezone
        if let p = poster { content.poster = .init(png: p.png, width: p.width, height: p.height) }
        return content
    }

    /// The certificate that signed each confirmed rfc3161 proof's token, as the token carries it.
    public static func signers(home: EvidenceHome, proofs: [Proof]) -> [String: TSACertificates.Info] {
        var out: [String: TSACertificates.Info] = [:]
        for p in proofs where p.kind.isTimestamp && p.state == .confirmed {
            guard let r = p.receipt, let receipt = try? home.store.read(r), let token = ProofCheck.signerResponse(p, receipt: receipt),
                  let info = TSACertificates.signerInfo(response: token) else { continue }
            out[p.notary] = info
        }
        return out
    }

    /// Renders and stores the certificate; returns its record (not yet saved in the catalog).
    public static func make(home: EvidenceHome, item: Item, labels: CertificateLabels = .init(), timezone: LocalTime = .utc,
                            poster: PosterFrames.Made? = nil) throws -> Certificate {
        let sources = try home.catalog.sources(itemID: item.id)
        let proofs = try home.catalog.proofs(itemID: item.id)
        let events = try home.catalog.events(itemID: item.id)
        let pdf = try CertificateRenderer.render(content(item: item, sources: sources, proofs: proofs, custodyHead: events.last?.hash,
                                                         tsaSigners: signers(home: home, proofs: proofs),
                                                         labels: labels, timezone: timezone, poster: poster,
                                                         digests: DigestAlgorithm.recorded(in: events)))
        let stored = try home.store.put(pdf)
        return Certificate(itemID: item.id, origin: "evidence", sha256: stored.digest, size: Int64(pdf.count))
    }
}

/// The labels an item's certificate prints: its rule's `[labels]`, overridden by the sidecar
/// (`NAME.json`) beside its source when there is one. What was applied, or why a sidecar was
/// not, is recorded as a custody event `labelled` (with the sidecar's SHA-256), so the record
/// shows where each field on the certificate came from.
public enum ItemLabels {
    public static func resolve(home: EvidenceHome, item: Item, rule: String, ruleLabels: CertificateLabels) throws -> CertificateLabels {
        let sources = try home.catalog.sources(itemID: item.id).filter { $0.rule == rule }
        var labels = ruleLabels
        var details: [String: String] = [:]
        if let source = sources.last {
            let found = CertificateLabels.sidecar(of: source.path)
            if let file = found.file {
                details["sidecar"] = file
                if let hash = try? FileHasher.hash(path: file) { details["sidecar_sha256"] = hash.digest.hex }
            }
            if let problem = found.problem { details["problem"] = problem }
            if let side = found.labels { labels = labels.overridden(by: side) }
        }
        guard !labels.isEmpty || !details.isEmpty else { return labels }
        for (k, v) in labels.values { details["label." + k] = v }
        try home.catalog.appendEvent(itemID: item.id, kind: .labelled, details: details)
        return labels
    }
}

/// File names inside a bundle: one path component, no control characters, no traversal.
public enum BundleNames {
    public static func safe(_ name: String) -> String {
        // NFC (what the verifier requires), no control or invisible formatting character.
        var s = String(name.precomposedStringWithCanonicalMapping.unicodeScalars.map { c -> Character in
            (c.value < 0x20 || c == "/" || c == "\\" || c == "'" || c.value == 0x7F
             || c.properties.generalCategory == .control || c.properties.generalCategory == .format) ? "_" : Character(c)
        })
        if s.isEmpty || s == "." || s == ".." { s = "_" + s }
        if s.hasPrefix(".") { s = "_" + s.dropFirst() }
        while s.utf8.count > 200 { s.removeLast() }
        return s
    }
}
