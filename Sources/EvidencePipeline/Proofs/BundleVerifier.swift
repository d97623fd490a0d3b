import EvidenceCatalog
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation

/// Checks a bundle folder offline, point by point. One changed byte anywhere fails a check.
///
/// Nothing in the folder is trusted by itself: whoever can edit a bundle can recompute every
/// hash in it and bring their own CA. Only a time-stamp whose signature and chain verify against
/// `trust` (given by the auditor: `--trust`, the config's `ca_file` / `tsa_cert_sha256`) proves
/// the content; a CA file inside the bundle is reported by fingerprint, never used.
public enum BundleVerifier {
    public struct Check: Codable, Sendable {
        public var check: String
        public var ok: Bool
        public var detail: String
    }

    public struct Report: Sendable {
        public var checks: [Check] = []
        /// Facts for the auditor that are neither pass nor fail (fingerprints to compare).
        public var notes: [String] = []
        /// Every check passed (and there was at least one).
        public var ok: Bool { !checks.isEmpty && checks.allSatisfy(\.ok) }
    }

    /// What to pass when no anchor is known; shared by `verify DIR` and `verify ITEM`.
    public static let noAnchorAdvice =
        "pass --trust FILE (the TSA's CA certificate, obtained from the TSA, not from the bundle) "
        + "or --config with an evidence.toml whose [notaries.NAME] has the TSA's ca_file"

    public static func isBundle(_ dir: String) -> Bool {
        FileManager.default.fileExists(atPath: dir + "/manifest.json") && FileManager.default.fileExists(atPath: dir + "/SHA256SUMS")
    }

    public static func verify(_ dir: String, trust: TSATrust) -> Report {
        var report = Report()
        func check(_ name: String, _ ok: Bool, _ detail: String) { report.checks.append(Check(check: name, ok: ok, detail: detail)) }

        // 1. SHA256SUMS: every listed file matches, and every file present is listed.
        guard let sumsText = try? String(contentsOfFile: dir + "/SHA256SUMS", encoding: .utf8) else {
            check("SHA256SUMS", false, "\(dir)/SHA256SUMS: missing or not UTF-8"); return report
        }
        var listed: [String: String] = [:]
        for line in sumsText.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].count == 64, parts[1].hasPrefix(" ") else {
                check("SHA256SUMS", false, "malformed line: \(line.prefix(100))"); continue
            }
            let rel = String(parts[1].dropFirst())
            listed[rel] = String(parts[0])
            if rel.contains("..") || rel.hasPrefix("/") { check("SHA256SUMS", false, "\(rel): path leaves the bundle"); continue }
            switch Result(catching: { try FileHasher.hash(path: dir + "/" + rel) }) {
            case .success(let r):
                check("file intact", r.digest.hex == parts[0], r.digest.hex == parts[0] ? rel : "\(rel): hashes to \(r.digest.hex), SHA256SUMS says \(parts[0])")
            case .failure(let e):
                check("file intact", false, "\(rel): \(e)")
            }
        }
        let present = allFiles(dir).filter { $0 != "SHA256SUMS" }
        for extra in present.subtracting(listed.keys).sorted() { check("no unlisted files", false, "\(extra): not in SHA256SUMS") }

        // 2. The manifest agrees with the files.
        guard let data = FileManager.default.contents(atPath: dir + "/manifest.json"),
              let m = try? CanonicalJSON.decoder().decode(BundleManifest.self, from: data) else {
            check("manifest", false, "\(dir)/manifest.json: missing or not a valid \(BundleManifest.formatName) manifest"); return report
        }
        check("manifest", m.format == BundleManifest.formatName, "format \(m.format), item #\(m.item.id)")
        for f in m.files where listed[f.path] != f.sha256 {
            check("manifest matches SHA256SUMS", false, "\(f.path): manifest \(f.sha256.prefix(16))…, SHA256SUMS \(listed[f.path]?.prefix(16) ?? "missing")")
        }
        guard let digest = SHA256Digest(hex: m.item.sha256) else {
            check("manifest", false, "item sha256 is not a SHA-256 hex digest"); return report
        }
        let original = "original/" + m.item.fileName
        check("original is the notarized content", listed[original] == m.item.sha256,
              listed[original] == m.item.sha256 ? "\(original): sha256 \(m.item.sha256)" : "\(original): \(listed[original] ?? "missing") ≠ \(m.item.sha256)")

        // 3. Proofs: every one the manifest lists must be confirmed, present and verify.
        for p in m.proofs {
            let n = BundleNames.safe(p.notary)
            let file = "proofs/\(n)." + (p.kind == .rfc3161 ? "tsr" : "json")
            guard p.state == .confirmed else {
                check(ProofCheck.name(p), false, "\(p.state.rawValue), not confirmed: the bundle does not prove this notary"
                      + (p.error.map { " (\($0))" } ?? ""))
                continue
            }
            guard let receipt = FileManager.default.contents(atPath: "\(dir)/\(file)") else {
                check(ProofCheck.name(p), false, "\(file) missing"); continue
            }
            if let recorded = p.receipt?.hex, recorded != listed[file] {
                check(ProofCheck.name(p), false, "\(file): hashes to \(listed[file]?.prefix(16) ?? "-")…, the manifest's receipt is \(recorded.prefix(16))…")
                continue
            }
            let c = ProofCheck.check(p, receipt: receipt, digest: digest, trust: trust, label: file)
            check(c.check, c.ok, c.detail)
            if p.kind == .rfc3161 {
                report.notes += certificateNotes(dir: dir, notary: n, receipt: receipt)
            } else {
                report.notes.append("QED report \(p.notary): checked against the bundle's own copy only; confirm transaction "
                                    + "\(p.txHash ?? "-") on \(p.network ?? "-") at \(p.link ?? "the notary's explorer")")
            }
        }
        if m.proofs.isEmpty {
            report.notes.append("no notary proof in this bundle: the checks show only that its files agree with each other")
        }

        // 4. Custody events recompute, chain where consecutive, end at the manifest's head, and
        //    record what the manifest claims: the item's hash and name, each proof's receipt, each certificate.
        if let text = try? String(contentsOfFile: dir + "/custody.jsonl", encoding: .utf8) {
            var events: [CustodyEvent] = []
            var bad: [String] = []
            for (i, line) in text.split(separator: "\n").enumerated() {
                guard let e = try? CanonicalJSON.decoder().decode(CustodyEvent.self, from: Data(line.utf8)) else {
                    bad.append("line \(i + 1) is not a custody event"); continue
                }
                let h = SHA256Hasher.hash(CustodyEvent.chainInput(prevHash: e.prevHash, body: e.canonicalBody)).hex
                if h != e.hash { bad.append("event #\(e.seq) hashes to \(h.prefix(16))…, says \(e.hash.prefix(16))…") }
                if let prev = events.last {
                    if e.seq <= prev.seq { bad.append("event #\(e.seq) follows #\(prev.seq)") }
                    if e.seq == prev.seq + 1 && e.prevHash != prev.hash { bad.append("event #\(e.seq) does not chain to #\(prev.seq)") }
                }
                events.append(e)
            }
            let last = events.last?.hash
            if m.custodyHead == nil || last != m.custodyHead {
                bad.append("last event \(last?.prefix(16) ?? "-") is not the manifest's head \(m.custodyHead?.prefix(16) ?? "-")")
            }
            check("custody events", bad.isEmpty, bad.isEmpty ? "\(events.count) events, each hash recomputed" : bad.joined(separator: "; "))
            let problems = custodyDisagreements(events, manifest: m, listed: listed)
            check("custody agrees with the manifest", problems.isEmpty,
                  problems.isEmpty ? "item #\(m.item.id), its hash and name, \(m.proofs.count) proof receipt(s), \(m.certificates.count) certificate(s) recorded"
                                   : problems.joined(separator: "; "))
        } else {
            check("custody events", false, "custody.jsonl missing")
        }

        // 5. Certificates are PDFs.
        for origin in m.certificates {
            let rel = "certificates/\(BundleNames.safe(origin)).pdf"
            let head = FileManager.default.contents(atPath: dir + "/" + rel)?.prefix(5)
            check("certificate \(origin)", head == Data("%PDF-".utf8), head == Data("%PDF-".utf8) ? rel : "\(rel): missing or not a PDF")
        }
        return report
    }

    /// What the manifest claims that the custody events do not record.
    static func custodyDisagreements(_ events: [CustodyEvent], manifest m: BundleManifest, listed: [String: String]) -> [String] {
        var problems: [String] = []
        let parsed: [(event: CustodyEvent, details: [String: String])] = events.map { e in
            (e, (try? JSONDecoder().decode([String: String].self, from: Data(e.details.utf8))) ?? [:])
        }
        for e in events where e.itemID != m.item.id {
            problems.append("event #\(e.seq) is about item \(e.itemID.map(String.init) ?? "-"), not #\(m.item.id)")
        }
        let sightings = parsed.filter { $0.event.is(.ingested) || $0.event.is(.seenAgain) }
        if !parsed.contains(where: { $0.event.is(.ingested) && $0.details["sha256"] == m.item.sha256 }) {
            problems.append("no ingested event with the item's SHA-256 \(m.item.sha256.prefix(16))…")
        }
        if !sightings.contains(where: { $0.details["name"].map(BundleNames.safe) == m.item.fileName }) {
            problems.append("no ingested event names \(m.item.fileName)")
        }
        for p in m.proofs where p.state == .confirmed {
            let file = "proofs/\(BundleNames.safe(p.notary))." + (p.kind == .rfc3161 ? "tsr" : "json")
            let recorded = parsed.contains { e in
                e.event.is(.notaryConfirmed) && e.details["notary"] == p.notary && e.details["receipt"] != nil
                    && e.details["receipt"] == listed[file] && e.details["receipt"] == p.receipt?.hex
                    && (p.remoteID == nil || e.details["remote_id"] == p.remoteID)
            }
            if !recorded { problems.append("no notary-confirmed event of \(p.notary) with the receipt \(listed[file]?.prefix(16) ?? "-")… of \(file)") }
        }
        for origin in m.certificates {
            let rel = "certificates/\(BundleNames.safe(origin)).pdf"
            if !parsed.contains(where: { $0.event.is(.certificate) && $0.details["origin"] == origin && $0.details["sha256"] == listed[rel] }) {
                problems.append("no certificate event of \(origin) with the hash of \(rel)")
            }
        }
        return problems
    }

    /// The fingerprints of the certificates a bundle brings for one TSA: for comparison with
    /// the TSA's published ones, never trusted.
    static func certificateNotes(dir: String, notary n: String, receipt: Data) -> [String] {
        var notes: [String] = []
        if let signer = TSACertificates.signerPEM(response: receipt).flatMap({ TSACertificates.infos(pem: $0).first }) {
            notes.append("proofs/\(n).tsr is signed by \(signer.subject), certificate SHA-256 \(signer.sha256)")
        }
        let ca = "\(dir)/proofs/\(n)-ca.pem"
        if FileManager.default.fileExists(atPath: ca) {
            let infos = (try? TSACertificates.read(pemFile: ca)) ?? []
            for info in infos {
                notes.append("proofs/\(n)-ca.pem (inside the bundle: NOT used as a trust anchor) is \(info.subject), SHA-256 \(info.sha256): "
                             + "compare with the fingerprint the TSA publishes")
            }
            if infos.isEmpty { notes.append("proofs/\(n)-ca.pem holds no readable certificate") }
        }
        return notes
    }

    static func allFiles(_ dir: String) -> Set<String> {
        var out = Set<String>()
        guard let e = FileManager.default.enumerator(atPath: dir) else { return out }
        while let rel = e.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: dir + "/" + rel, isDirectory: &isDir), !isDir.boolValue { out.insert(rel) }
        }
        return out
    }
}

/// Checks one confirmed proof's receipt against the content digest: the same code for bundles
/// (offline) and for items in the store.
public enum ProofCheck {
    static func name(_ p: Proof) -> String {
        p.kind == .rfc3161 ? "RFC 3161 token \(p.notary)" : "QED report \(p.notary)"
    }

    /// `label` names the receipt in messages (a bundle path or a store object path). An RFC 3161
    /// token passes only when its signature and chain verify against `trust`; with no anchor it
    /// fails as "not verified", whatever its imprint says.
    public static func check(_ p: Proof, receipt: Data, digest: SHA256Digest, trust: TSATrust, label: String) -> BundleVerifier.Check {
        if p.kind == .rfc3161 {
            if trust.isEmpty {
                let claim = (try? TimestampVerifier.inspect(response: receipt, digest: digest))
                    .map { "it claims serial \($0.serial), time \(Timestamp.string($0.genTime)), but " } ?? ""
                return .init(check: name(p), ok: false,
                             detail: "not verified: no trust anchor from outside the bundle; \(claim)anyone can make such a token "
                                 + "with a CA of their own: \(BundleVerifier.noAnchorAdvice)")
            }
            do {
                let token = try TimestampVerifier.verify(response: receipt, digest: digest, trust: trust)
                let serialOK = p.remoteID == nil || p.remoteID == token.serial
                return .init(check: name(p), ok: serialOK,
                             detail: "serial \(token.serial)\(serialOK ? "" : " (recorded \(p.remoteID ?? "-"))"), time \(Timestamp.string(token.genTime))"
                                + ", signature and chain verified against \(trust.summary)")
            } catch {
                return .init(check: name(p), ok: false, detail: "\(label): not verified: \(error.message)")
            }
        }
        guard let obj = try? JSONSerialization.jsonObject(with: receipt) as? [String: Any] else {
            return .init(check: name(p), ok: false, detail: "\(label): not a JSON object")
        }
        let hash = obj["hash"] as? String, status = obj["status"] as? String
        let tx = (obj["tx"] as? [String: Any])?["hash"] as? String
        let ok = hash == digest.hex && status == "confirmed" && tx != nil && tx == p.txHash
        return .init(check: name(p), ok: ok,
                     detail: ok ? "confirmed, tx \(tx ?? "") (the report's own claim: look the transaction up to confirm it)"
                         : "\(label): report hash \(hash ?? "-"), status \(status ?? "-"), tx \(tx ?? "-") (recorded tx \(p.txHash ?? "-"))")
    }
}
