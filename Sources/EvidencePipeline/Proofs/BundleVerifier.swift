import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import EvidenceHTTP
import Logging
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
        /// Failed only for want of a trust anchor: the bundle is unproven, not shown forged.
        public var unproven: Bool?

        public init(check: String, ok: Bool, detail: String, unproven: Bool? = nil) {
            self.check = check; self.ok = ok; self.detail = detail; self.unproven = unproven
        }
    }

    /// What the checks add up to. Only `.verified` exits 0.
    public enum Verdict: String, Codable, Sendable {
        /// Every check passed and a time-stamp over the original verified against an anchor
        /// from outside the bundle.
        case verified
        /// Nothing contradicts the bundle, but nothing proves it either: no time-stamp verified
        /// (none in the bundle, no anchor given, or QED reports only, which corroborate but
        /// cannot prove: the bundle's copy of a report is the operator's word).
        case notProven = "not-proven"
        /// A check failed: the bundle was changed, or its proofs do not hold.
        case failed
    }

    public struct Report: Sendable {
        public var checks: [Check] = []
        /// Facts for the auditor that are neither pass nor fail (fingerprints to compare).
        public var notes: [String] = []
        /// The earliest time-stamp over the original that verified against the anchors: the
        /// latest moment the content is proven to have existed.
        public var provenAt: Date?
        /// Which time-stamp gave `provenAt`.
        public var provenBy: String?
        /// Custody events dated before `provenAt`: their times are the catalog's claim only.
        public var uncoveredEvents: [String] = []

        public var verdict: Verdict {
            if checks.isEmpty || checks.contains(where: { !$0.ok && $0.unproven != true }) { return .failed }
            return provenAt != nil && checks.allSatisfy(\.ok) ? .verified : .notProven
        }
        /// Verified: every check passed and a time-stamp proves the content.
        public var ok: Bool { verdict == .verified }
    }

    /// What to pass when no anchor is known; shared by `verify DIR` and `verify ITEM`.
    public static let noAnchorAdvice =
        "pass --trust FILE (the TSA's CA certificate, obtained from the TSA, not from the bundle) "
        + "or --config with an evidence.toml whose [notaries.NAME] has the TSA's ca_file"

    /// The files a bundle has besides those the manifest lists (the manifest cannot list itself,
    /// nor VERIFY.md, which is made from it).
    static let unlistedInManifest: Set<[UInt8]> = [Array("manifest.json".utf8), Array("VERIFY.md".utf8)]
    static let folders: Set<[UInt8]> = [Array("original".utf8), Array("proofs".utf8), Array("certificates".utf8), Array("custody".utf8)]

    public static func isBundle(_ dir: String) -> Bool {
        FileManager.default.fileExists(atPath: dir + "/manifest.json") && FileManager.default.fileExists(atPath: dir + "/SHA256SUMS")
    }

    /// A path from the bundle, shown safely: no control character reaches a terminal.
    static func shown(_ bytes: [UInt8]) -> String { TerminalText.escape(String(decoding: bytes, as: UTF8.self)) }
    static func shown(_ s: String) -> String { TerminalText.escape(s) }

    /// `at`: verify the time-stamps' certificates as of that date (`evidence verify --at`).
    public static func verify(_ dir: String, trust: TSATrust, at: Date? = nil, blocks: BlockHeaders? = nil) -> Report {
        var report = Report()
        func check(_ name: String, _ ok: Bool, _ detail: String, unproven: Bool? = nil) {
            report.checks.append(Check(check: name, ok: ok, detail: detail, unproven: unproven))
        }

        // 1. What is in the folder, as bytes: every name UTF-8, NFC, and a regular file or one of
        //    the three folders. Names are compared as bytes from here on: Swift compares Strings by
        //    Unicode equivalence, so an NFD twin of a listed NFC name would pass as "listed".
        let walked = BundleFiles.walk(dir)
        for problem in walked.problems { check("bundle layout", false, problem) }

        // 2. SHA256SUMS: every listed file matches; listed and present are the same set.
        guard let sumsData = BundleFiles.readRegular(dir + "/SHA256SUMS") else {
            check("SHA256SUMS", false, "\(shown(dir))/SHA256SUMS: missing or unreadable"); return report
        }
        var listed: [[UInt8]: String] = [:]
        var sizes: [[UInt8]: Int64] = [:]
        for (n, line) in sumsData.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            let bytes = Array(line)
            guard bytes.count > 66, bytes[64] == 0x20, bytes[65] == 0x20,
                  let hex = String(validating: bytes[0..<64], as: UTF8.self), SHA256Digest(hex: hex) != nil, hex == hex.lowercased() else {
                check("SHA256SUMS", false, "line \(n + 1) is not \"<sha256 hex>  <path>\": \(shown(Array(bytes.prefix(100))))"); continue
            }
            let rel = Array(bytes[66...])
            if let problem = BundleFiles.pathProblem(rel) {
                check("SHA256SUMS", false, "line \(n + 1): \(shown(rel)): \(problem)"); continue
            }
            guard listed[rel] == nil else { check("SHA256SUMS", false, "\(shown(rel)) is listed twice"); continue }
            listed[rel] = hex
            let path = dir + "/" + String(decoding: rel, as: UTF8.self)
            switch Result(catching: { try FileHasher.hash(path: path) }) {
            case .success(let r):
                sizes[rel] = r.size
                check("file intact", r.digest.hex == hex, r.digest.hex == hex ? shown(rel) : "\(shown(rel)): hashes to \(r.digest.hex), SHA256SUMS says \(hex)")
            case .failure(let e):
                check("file intact", false, "\(shown(rel)): \(shown(String(describing: e)))")
            }
        }
        if sumsData.last != 0x0A { check("SHA256SUMS", false, "does not end with a newline") }
        let present = walked.files.subtracting([Array("SHA256SUMS".utf8)])
        for extra in present.subtracting(listed.keys).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            check("no unlisted files", false, "\(shown(extra)): present but not in SHA256SUMS")
        }

        // 3. The manifest: one meaning for every reader (no repeated key), and listing exactly the
        //    files SHA256SUMS lists, with the same hashes and sizes.
        guard let data = BundleFiles.readRegular(dir + "/manifest.json") else {
            check("manifest", false, "\(shown(dir))/manifest.json: missing"); return report
        }
        do { try StrictJSON.check(data) } catch {
            check("manifest", false, "manifest.json: \(error.description)"); return report
        }
        let m: BundleManifest
        do { m = try CanonicalJSON.decoder().decode(BundleManifest.self, from: data) } catch {
            check("manifest", false, "manifest.json: not a valid \(BundleManifest.formatName) manifest: \(shown(decodingProblem(error)))")
            return report
        }
        let isCurrent = m.format == BundleManifest.formatName
        check("manifest", isCurrent || BundleManifest.earlierFormats.contains(m.format), "format \(shown(m.format)), item #\(m.item.id)")
        var inManifest: Set<[UInt8]> = []
        for f in m.files {
            let rel = Array(f.path.utf8)
            if let problem = BundleFiles.pathProblem(rel) { check("manifest matches SHA256SUMS", false, "\(shown(rel)): \(problem)"); continue }
            guard inManifest.insert(rel).inserted else { check("manifest matches SHA256SUMS", false, "\(shown(rel)) is listed twice in the manifest"); continue }
            if listed[rel] != f.sha256 || (sizes[rel].map { $0 != f.size } ?? false) {
                check("manifest matches SHA256SUMS", false, "\(shown(rel)): manifest \(shown(String(f.sha256.prefix(16))))… \(f.size) bytes, "
                      + "SHA256SUMS \(listed[rel]?.prefix(16) ?? "missing")… \(sizes[rel].map(String.init) ?? "-") bytes")
            }
        }
        for rel in Set(listed.keys).subtracting(inManifest).subtracting(unlistedInManifest).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            check("manifest matches SHA256SUMS", false, "\(shown(rel)): in SHA256SUMS but not in the manifest")
        }
        for rel in unlistedInManifest where listed[rel] == nil {
            check("manifest matches SHA256SUMS", false, "\(shown(rel)): not in SHA256SUMS")
        }
        guard let digest = SHA256Digest(hex: m.item.sha256), m.item.sha256 == m.item.sha256.lowercased() else {
            check("manifest", false, "item sha256 is not a SHA-256 hex digest"); return report
        }

        // 4. The original: exactly one, named by the manifest, the only file in original/.
        let fileNameProblem = BundleFiles.nameProblem(Array(m.item.fileName.utf8))
            ?? (BundleNames.safe(m.item.fileName) == m.item.fileName ? nil : "not a name this software writes")
        let originalRel = Array(("original/" + m.item.fileName).utf8)
        let originals = m.files.filter { $0.role == "original" }
        let inOriginal = walked.files.filter { $0.starts(with: Array("original/".utf8)) }
        var originalProblems: [String] = []
        if let p = fileNameProblem { originalProblems.append("the manifest's file name \(shown(m.item.fileName)): \(p)") }
        if originals.count != 1 || originals.first.map({ Array($0.path.utf8) != originalRel }) ?? true {
            originalProblems.append("the manifest must list one original, original/\(shown(m.item.fileName)); it lists "
                                    + (originals.isEmpty ? "none" : originals.map { shown($0.path) }.joined(separator: ", ")))
        }
        for other in inOriginal where other != originalRel { originalProblems.append("\(shown(other)): a second file in original/") }
        if listed[originalRel] != m.item.sha256 {
            originalProblems.append("original/\(shown(m.item.fileName)): \(listed[originalRel] ?? "missing") ≠ \(m.item.sha256)")
        }
        if let size = sizes[originalRel], size != m.item.size { originalProblems.append("original/\(shown(m.item.fileName)): \(size) bytes, the item has \(m.item.size)") }
        check("original is the item's content", originalProblems.isEmpty,
              originalProblems.isEmpty ? "original/\(shown(m.item.fileName)): sha256 \(m.item.sha256), \(m.item.size) bytes" : originalProblems.joined(separator: "; "))

        // 4b. The other digests (MD5SUMS, SHA1SUMS, SHA512SUMS): each names the original with the
        //     digest the manifest gives, recomputed from the original here; the custody events must
        //     record the same (checked with the events below).
        let others = DigestAlgorithm.extras.filter { m.item.digests?[$0.rawValue] != nil }
        let strayRoles = m.files.filter { $0.role == "digest-sums" && !others.map(\.sumsFile).contains($0.path) }
        if !others.isEmpty || !strayRoles.isEmpty {
            var bad: [String] = strayRoles.map { "\(shown($0.path)): not a digest the manifest names" }
            let recomputed = (try? FileHasher.hash(path: dir + "/original/" + m.item.fileName, digests: others))?.digests ?? [:]
            for a in others {
                let hex = m.item.digests?[a.rawValue] ?? ""
                let expectedLine = Data("\(hex)  original/\(m.item.fileName)\n".utf8)
                if listed[Array(a.sumsFile.utf8)] == nil || BundleFiles.readRegular(dir + "/" + a.sumsFile) != expectedLine {
                    bad.append("\(a.sumsFile) is missing or is not the one line `\(a.tool) -c` needs for the original")
                }
                if recomputed[a.rawValue] != hex {
                    bad.append("the original's \(a.label) is \(recomputed[a.rawValue] ?? "unreadable"), the manifest says \(shown(hex))")
                }
            }
            check("other digests", bad.isEmpty, bad.isEmpty ? others.map { "\($0.label) \(m.item.digests?[$0.rawValue] ?? "")" }.joined(separator: ", ")
                                                            + " recomputed from the original" : bad.joined(separator: "; "))
        }

        // 5. Proofs: every one the manifest lists must be confirmed, present and verify. Only an
        //    RFC 3161 token verified against an outside anchor proves anything.
        var listedStrings: [String: String] = [:]
        for (k, v) in listed { listedStrings[String(decoding: k, as: UTF8.self)] = v }
        var certificateCopies: [String: BundleWriter.TSACertificateCopies] = [:]
        for p in m.proofs {
            let n = BundleNames.safe(p.notary)
            let file = "proofs/\(n)." + p.kind.receiptExtension
            guard p.state == .confirmed else {
                check(ProofCheck.name(p), false, "\(p.state.rawValue), not confirmed: the bundle does not prove this notary"
                      + (p.error.map { " (\(shown($0)))" } ?? ""))
                continue
            }
            guard listed[Array(file.utf8)] != nil, let receipt = BundleFiles.readRegular("\(dir)/\(file)") else {
                check(ProofCheck.name(p), false, "\(shown(file)) missing"); continue
            }
            if let recorded = p.receipt?.hex, recorded != listed[Array(file.utf8)] {
                check(ProofCheck.name(p), false, "\(shown(file)): hashes to \(listed[Array(file.utf8)]?.prefix(16) ?? "-")…, the manifest's receipt is \(recorded.prefix(16))…")
                continue
            }
            if p.kind == .qed {
                do { try StrictJSON.check(receipt) } catch {
                    check(ProofCheck.name(p), false, "\(shown(file)): \(error.description)"); continue
                }
            }
            if p.kind == .opentimestamps {
                let (c, attested) = ProofCheck.otsCheck(p, receipt: receipt, digest: digest, label: file, blocks: blocks)
                report.checks.append(c)
                let latest = attested.map { $0.time.addingTimeInterval(OTSClient.blockTimeMargin) }
                if let attested, let latest, report.provenAt.map({ latest < $0 }) ?? true {
                    report.provenAt = latest
                    report.provenBy = "\(ProofCheck.name(p)) (\(shown(file)), Bitcoin block \(attested.height))"
                }
                continue
            }
            // A record hash-renewed to SHA-512 is checked with the original's SHA-512 too.
            var sha512: [UInt8]?
            if p.kind == .rfc4998, EvidenceRecordRenewal.hasSHA512Chain(receipt) {
                sha512 = (try? FileHasher.hash(path: dir + "/original/" + m.item.fileName, digests: [.sha512]))?
                    .digests[DigestAlgorithm.sha512.rawValue].flatMap { Hex.decode($0) }
            }
            let c = ProofCheck.check(p, receipt: receipt, digest: digest, trust: trust, label: file, at: at, sha512: sha512)
            report.checks.append(c)
            if p.kind.isTimestamp {
                if c.ok, let token = try? ProofCheck.token(p, receipt: receipt, digest: digest, trust: trust, at: at, sha512: sha512) {
                    if report.provenAt.map({ token.genTime < $0 }) ?? true {
                        report.provenAt = token.genTime
                        report.provenBy = "\(ProofCheck.name(p)) (\(shown(file)), serial \(token.serial))"
                    }
                }
                if p.kind == .rfc4998 {
                    let extras = BundleWriter.recordFiles(p, record: receipt, fileName: m.item.fileName)
                    var bad: [String] = []
                    for (rel, expected) in extras.sorted(by: { $0.key < $1.key }) {
                        if listed[Array(rel.utf8)] == nil || BundleFiles.readRegular("\(dir)/\(rel)") != expected { bad.append(rel) }
                    }
                    check("\(ProofCheck.name(p)): standard-tool files", bad.isEmpty,
                          bad.isEmpty ? extras.keys.sorted().joined(separator: ", ") + " match the record"
                                      : bad.joined(separator: ", ") + ": missing or not made from the record")
                }
                let signerReply = ProofCheck.signerResponse(p, receipt: receipt) ?? receipt
                report.notes += certificateNotes(dir: dir, notary: n, receipt: signerReply, label: file)
                var copies = BundleWriter.TSACertificateCopies()
                copies.signer = TSACertificates.signerInfo(response: signerReply)
                if let pem = BundleFiles.readRegular("\(dir)/proofs/\(n)-ca.pem") { copies.ca = TSACertificates.infos(pem: pem) }
                if p.kind == .rfc4998 { (copies.stampTimes, copies.hashRenewedAt) = BundleWriter.recordTimes(receipt, digest: m.item.sha256, sha512: sha512) }
                certificateCopies[p.notary] = copies
            } else {
                report.notes.append("QED report \(shown(p.notary)) corroborates only: the bundle's copy of a report is the operator's word. "
                                    + "Confirm transaction \(shown(p.txHash ?? "-")) on \(shown(p.network ?? "-")) at "
                                    + "\(shown(p.link ?? "the notary's explorer")), or run `evidence verify --online`")
            }
        }
        if !m.proofs.contains(where: { ($0.kind.isTimestamp || $0.kind == .opentimestamps) && $0.state == .confirmed }) {
            report.notes.append("no RFC 3161 time-stamp in this bundle: nothing in it can prove when the content existed")
        }

        // 6. VERIFY.md is made from the manifest: any other text is not ours, and its advice
        //    (which CA to trust, above all) must not be followed.
        let expected = Data(BundleWriter.verifyText(m, tsaCertificates: certificateCopies).utf8)
        if let actual = BundleFiles.readRegular(dir + "/VERIFY.md"), !isCurrent {
            // An earlier version's wording: nothing to compare it with. Anyone could have edited
            // it, and a downgraded format gains nothing: the file is simply not to be followed.
            _ = actual
            report.notes.append("VERIFY.md was written by an earlier version (\(shown(m.format))) and is not checked: do not follow it; "
                                + "check the time-stamp with the TSA's own CA as described in evidence's README (`evidence verify DIR --trust CA`)")
        } else if let actual = BundleFiles.readRegular(dir + "/VERIFY.md") {
            if actual == expected {
                check("VERIFY.md", true, "the text this manifest produces, byte for byte")
            } else {
                check("VERIFY.md", false, "differs from the text this manifest produces (\(firstDifference(actual, expected))): "
                      + "it was edited; do not follow its instructions")
            }
        } else {
            check("VERIFY.md", false, "missing")
        }

        // 7. Custody events recompute, chain where consecutive, end at the manifest's head, and
        //    record what the manifest claims: the item's hash and name, each proof's receipt, each certificate.
        if let text = BundleFiles.readRegular(dir + "/custody.jsonl") {
            var events: [CustodyEvent] = []
            var bad: [String] = []
            for (i, line) in text.split(separator: 0x0A).enumerated() {
                do { try StrictJSON.check(line) } catch { bad.append("line \(i + 1): \(error.description)"); continue }
                guard let e = try? CanonicalJSON.decoder().decode(CustodyEvent.self, from: Data(line)) else {
                    bad.append("line \(i + 1) is not a custody event"); continue
                }
                do { try StrictJSON.check(Array(e.details.utf8)) } catch { bad.append("event #\(e.seq) details: \(error.description)") }
                let h = SHA256Hasher.hash(CustodyEvent.chainInput(prevHash: e.prevHash, body: e.canonicalBody)).hex
                if h != e.hash { bad.append("event #\(e.seq) hashes to \(h.prefix(16))…, says \(shown(String(e.hash.prefix(16))))…") }
                if let prev = events.last {
                    if e.seq <= prev.seq { bad.append("event #\(e.seq) follows #\(prev.seq)") }
                    if e.seq > prev.seq && e.seq - 1 == prev.seq && e.prevHash != prev.hash { bad.append("event #\(e.seq) does not chain to #\(prev.seq)") }
                }
                if Timestamp.parse(e.at) == nil { bad.append("event #\(e.seq): time \(shown(e.at)) is not an ISO 8601 date") }
                events.append(e)
            }
            let last = events.last?.hash
            if m.custodyHead == nil || last != m.custodyHead {
                bad.append("last event \(shown(String(last?.prefix(16) ?? "-"))) is not the manifest's head \(shown(String(m.custodyHead?.prefix(16) ?? "-")))")
            }
            check("custody events", bad.isEmpty, bad.isEmpty ? "\(events.count) events, each hash recomputed" : bad.joined(separator: "; "))
            let problems = custodyDisagreements(events, manifest: m, listed: listedStrings)
            check("custody agrees with the manifest", problems.isEmpty,
                  problems.isEmpty ? "item #\(m.item.id), its hash and name, \(m.proofs.count) proof receipt(s), \(m.certificates.count) certificate(s) recorded"
                                   : problems.map(shown).joined(separator: "; "))
            let custody = BundleCustody.verify(dir: dir, manifest: m, events: events, listed: listed, trust: trust, at: at)
            report.checks += custody.checks
            report.notes += custody.notes
            // A time-stamp bounds when the content existed; nothing bounds the times of events
            // before it, which anyone who can write the catalog could have back-dated.
            for e in events {
                let at = Timestamp.parse(e.at)
                if let proven = report.provenAt, let at, at >= proven { continue }
                report.uncoveredEvents.append("#\(e.seq) \(shown(e.kind)) at \(shown(e.at))")
            }
        } else {
            check("custody events", false, "custody.jsonl missing")
        }

        // 8. Certificates are PDFs.
        for origin in m.certificates {
            let rel = "certificates/\(BundleNames.safe(origin)).pdf"
            let head = listed[Array(rel.utf8)] == nil ? nil : BundleFiles.readRegular(dir + "/" + rel)?.prefix(5)
            check("certificate \(shown(origin))", head == Data("%PDF-".utf8), head == Data("%PDF-".utf8) ? shown(rel) : "\(shown(rel)): missing or not a PDF")
        }
        return report
    }

    /// A decoding error as one line naming the field.
    static func decodingProblem(_ error: any Error) -> String {
        func path(_ c: DecodingError.Context) -> String { c.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined() }
        switch error as? DecodingError {
        case .keyNotFound(let key, let c)?: return "\(path(c)).\(key.stringValue) is missing"
        case .typeMismatch(_, let c)?, .valueNotFound(_, let c)?, .dataCorrupted(let c)?: return "\(path(c)): \(c.debugDescription)"
        default: return "\(error)"
        }
    }

    /// Where the bundle's text first differs from the expected one: the line and both versions.
    static func firstDifference(_ actual: Data, _ expected: Data) -> String {
        let la = actual.split(separator: 0x0A, omittingEmptySubsequences: false)
        let lb = expected.split(separator: 0x0A, omittingEmptySubsequences: false)
        func text(_ lines: [Data.SubSequence], _ i: Int) -> String {
            i < lines.count ? "«" + shown(Array(lines[i].prefix(100))) + "»" : "(no line)"
        }
        for i in 0..<max(la.count, lb.count) where i >= la.count || i >= lb.count || la[i] != lb[i] {
            return "line \(i + 1) is \(text(la, i)), the manifest gives \(text(lb, i))"
        }
        return "length"
    }

    /// What the manifest claims that the custody events do not record.
    static func custodyDisagreements(_ events: [CustodyEvent], manifest m: BundleManifest, listed: [String: String]) -> [String] {
        var problems: [String] = []
        let parsed: [(event: CustodyEvent, details: [String: String])] = events.map { e in
            (e, e.fields)
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
            let file = "proofs/\(BundleNames.safe(p.notary))." + p.kind.receiptExtension
            let recorded = parsed.contains { e in
                e.event.is(.notaryConfirmed) && e.details["notary"] == p.notary && e.details["receipt"] != nil
                    && e.details["receipt"] == listed[file] && e.details["receipt"] == p.receipt?.hex
                    && (p.remoteID == nil || e.details["remote_id"] == p.remoteID)
            }
            if !recorded { problems.append("no notary-confirmed event of \(p.notary) with the receipt \(listed[file]?.prefix(16) ?? "-")… of \(file)") }
        }
        // The other digests: as recorded when the content was taken in.
        let recorded = DigestAlgorithm.recorded(in: events)
        for a in DigestAlgorithm.extras where m.item.digests?[a.rawValue] != nil || recorded[a] != nil {
            if m.item.digests?[a.rawValue] != recorded[a] {
                problems.append("the manifest's \(a.label) \(m.item.digests?[a.rawValue] ?? "-") is not the one recorded at ingest (\(recorded[a] ?? "none"))")
            }
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
    static func certificateNotes(dir: String, notary n: String, receipt: Data, label: String) -> [String] {
        var notes: [String] = []
        if let signer = TSACertificates.signerInfo(response: receipt) {
            notes.append("\(label) is signed by \(signer.subject), certificate SHA-256 \(signer.sha256)")
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
}

/// Checks one confirmed proof's receipt against the content digest: the same code for bundles
/// (offline) and for items in the store.
public enum ProofCheck {
    public static func name(_ p: Proof) -> String {
        switch p.kind {
        case .rfc3161: "RFC 3161 token \(p.notary)"
        case .rfc4998: "RFC 4998 evidence record \(p.notary)"
        case .qed: "QED report \(p.notary)"
        case .opentimestamps: "OpenTimestamps proof \(p.notary)"
        }
    }

    /// The first token of a time-stamp proof, verified against `trust` (nil: only what it claims):
    /// the token itself over `digest` (rfc3161), or the evidence record leading from `digest` to
    /// the root its token is over (rfc4998).
    public static func token(_ p: Proof, receipt: Data, digest: SHA256Digest, trust: TSATrust?, at: Date? = nil,
                             sha512: [UInt8]? = nil) throws(TimestampError) -> TimestampToken {
        switch p.kind {
        case .rfc4998:
            return try EvidenceRecordVerifier.verify(record: receipt, digest: digest, trust: trust, at: at, sha512: sha512).tokens[0]
        default:
            if let trust { return try TimestampVerifier.verify(response: receipt, digest: digest, trust: trust, at: at) }
            return try TimestampVerifier.inspect(response: receipt, digest: digest)
        }
    }

    /// A TimeStampResp holding the proof's first token, to read the certificates it carries.
    public static func signerResponse(_ p: Proof, receipt: Data) -> Data? {
        switch p.kind {
        case .rfc3161: return receipt
        case .rfc4998:
            // The first time-stamp's: the one `proofs/N.tst` and `proofs/N-tsa.crt` are checked with.
            guard let record = try? EvidenceRecord(der: [UInt8](receipt)), let stamp = record.chains.first?.first else { return nil }
            return EvidenceRecord.response(wrapping: stamp.token)
        case .qed, .opentimestamps: return nil
        }
    }

    /// `label` names the receipt in messages (a bundle path or a store object path). An RFC 3161
    /// token passes only when its signature and chain verify against `trust`; with no anchor it
    /// fails as "not verified", whatever its imprint says.
    public static func check(_ p: Proof, receipt: Data, digest: SHA256Digest, trust: TSATrust, label: String,
                             at: Date? = nil, blocks: BlockHeaders? = nil, sha512: [UInt8]? = nil) -> BundleVerifier.Check {
        if p.kind == .opentimestamps { return otsCheck(p, receipt: receipt, digest: digest, label: label, blocks: blocks).check }
        if p.kind.isTimestamp {
            if trust.isEmpty {
                let claim = (try? token(p, receipt: receipt, digest: digest, trust: nil, sha512: sha512))
                    .map { "it claims serial \($0.serial), time \(Timestamp.string($0.genTime)), but " } ?? ""
                return .init(check: name(p), ok: false,
                             detail: "not verified: no trust anchor from outside the bundle; \(claim)anyone can make such a token "
                                 + "with a CA of their own: \(BundleVerifier.noAnchorAdvice)", unproven: true)
            }
            do {
                let token = try token(p, receipt: receipt, digest: digest, trust: trust, at: at, sha512: sha512)
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

/// Bitcoin block headers from a source the verifier trusts (an opentimestamps notary's
/// `headers_url` in the config), by height: what a `.ots` proof's attestations are checked against.
public struct BlockHeaders: Sendable {
    public var headers: [Int: BitcoinHeader]
    public var source: String
    public var problems: [String] = []
    public init(headers: [Int: BitcoinHeader], source: String, problems: [String] = []) {
        self.headers = headers; self.source = source; self.problems = problems
    }

    /// `fetch(for:)` of the `proofs/*.ots` of a bundle folder (each read as the verifier reads a
    /// bundle file: regular, no link followed, of proof size); nil when it has none.
    public static func fetch(forBundle dir: String, config: EvidenceConfig, logger: Logger) async -> BlockHeaders? {
        let proofs = ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/proofs")) ?? [])
            .filter { $0.hasSuffix(".ots") }.sorted()
            .compactMap { BundleFiles.readRegular(dir + "/proofs/" + $0, limit: OTSFile.maxSize) }
        return proofs.isEmpty ? nil : await fetch(for: proofs, config: config, logger: logger)
    }

    /// The headers of every block the `.ots` proofs name, from the config's first opentimestamps
    /// notary (by name) whose `headers_url` answers; nil when none is configured.
    public static func fetch(for proofs: [Data], config: EvidenceConfig, logger: Logger) async -> BlockHeaders? {
        let notaries = config.notaries.values.filter { $0.kind == .opentimestamps && $0.headersURL != nil }.sorted { $0.name < $1.name }
        guard let notary = notaries.first else { return nil }
        let client = Notaries.otsClient(notary, logger: logger)
        var blocks = BlockHeaders(headers: [:], source: Redact.url(client.headersURL))
        for data in proofs {
            guard let file = try? OTSFile(bytes: [UInt8](data)) else { continue }
            for case (_, .bitcoin(let h)) in file.timestamp.allAttestations where blocks.headers[h] == nil {
                // A hostile proof naming thousands of blocks gets no more than a real one's lookups.
                guard blocks.headers.count + blocks.problems.count < OTSClient.maxBlocks else {
                    blocks.problems.append("more than \(OTSClient.maxBlocks) Bitcoin blocks named: the rest not looked up"); break
                }
                do { blocks.headers[h] = try await client.header(height: h) } catch { blocks.problems.append(error.message) }
            }
        }
        return blocks
    }
}

extension ProofCheck {
    /// An OpenTimestamps proof: of this digest, and each Bitcoin attestation over the merkle root
    /// of its block's header from `blocks` (never from the proof or a calendar). Without a header
    /// source it proves nothing and says what it claims. The earliest attested block, when verified.
    public static func otsCheck(_ p: Proof, receipt: Data, digest: SHA256Digest, label: String,
                                blocks: BlockHeaders?) -> (check: BundleVerifier.Check, attested: OTSVerifier.Attested?) {
        let file: OTSFile
        let report: OTSVerifier.Report
        do {
            file = try OTSFile(bytes: [UInt8](receipt))
            report = try OTSVerifier.check(file, digest: digest, headers: blocks?.headers ?? [:])
        } catch {
            return (.init(check: name(p), ok: false, detail: "\(label): not verified: \(error.message)"), nil)
        }
        let heights = file.timestamp.allAttestations.compactMap { a -> Int? in
            if case .bitcoin(let h) = a.attestation { return h } else { return nil }
        }
        guard !heights.isEmpty else {
            return (.init(check: name(p), ok: false, detail: "\(label): no Bitcoin attestation yet (pending at "
                          + Set(report.pending.map(\.uri)).sorted().joined(separator: ", ") + ")"), nil)
        }
        guard let blocks else {
            return (.init(check: name(p), ok: false,
                          detail: "not verified: no source of Bitcoin block headers from outside the bundle; it claims block "
                              + Set(heights).sorted().map(String.init).joined(separator: ", ")
                              + ": check it with `ots verify` and a Bitcoin node, or configure an opentimestamps notary's headers_url",
                          unproven: true), nil)
        }
        guard report.unchecked.isEmpty, let first = report.attested.first else {
            return (.init(check: name(p), ok: false, detail: "\(label): no header of block "
                          + report.unchecked.map(String.init).joined(separator: ", ") + " from \(blocks.source)"
                          + (blocks.problems.isEmpty ? "" : " (\(blocks.problems.joined(separator: "; ")))"), unproven: true), nil)
        }
        return (.init(check: name(p), ok: true,
                      detail: "Bitcoin block \(first.height) (\(first.blockHash), time \(Timestamp.string(first.time)); the file existed no later "
                          + "than \(Timestamp.string(first.time.addingTimeInterval(OTSClient.blockTimeMargin))), as a block's time may trail the real one): "
                          + "the proof leads from the digest to the block's merkle root, header from \(blocks.source)"), first)
    }
}

/// The proofs the item's custody events record as confirmed that its proof rows no longer hold
/// (a row deleted or changed by hand): `verify ITEM` fails on them, and a bundle is not written
/// without them. One message per notary, naming the event.
public enum RecordedProofs {
    public static func missing(events: [CustodyEvent], proofs: [Proof]) -> [String] {
        var newest: [String: (CustodyEvent, [String: String])] = [:]
        for e in events where e.is(.notaryConfirmed) || e.is(.notaryPending) || e.is(.notaryFailed) {
            let d = e.fields
            guard let notary = d["notary"] else { continue }
            if newest[notary].map({ $0.0.seq < e.seq }) ?? true { newest[notary] = (e, d) }
        }
        var problems: [String] = []
        for (notary, (e, d)) in newest.sorted(by: { $0.key < $1.key }) where e.is(.notaryConfirmed) {
            let row = proofs.first { $0.notary == notary }
            // An event without a receipt (none was stored) asks only for a confirmed row.
            guard let row, row.state == .confirmed, d["receipt"].map({ row.receipt?.hex == $0 }) ?? true else {
                problems.append("custody event #\(e.seq) (\(e.kind)) records \(notary) confirmed with receipt \(d["receipt"]?.prefix(16) ?? "-")…, "
                                + "but the catalog's proof row " + (row.map { "is \($0.state.rawValue) with receipt \($0.receipt?.short ?? "-")…" } ?? "is missing")
                                + ": the catalog was changed outside evidence; run `evidence fsck`")
                continue
            }
        }
        return problems
    }
}
