import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import EvidenceStore
import Foundation
import Logging
import ServiceLifecycle

/// Time-stamp renewal (RFC 4998 §5.2) of the proofs of one rfc3161 notary: before the
/// certificate that signed a proof's newest time-stamp expires (`renew_before`, default 180
/// days), a new archive time-stamp over it is added, for all due proofs with one TSA request.
/// A per-item token (`.tsr`) becomes the first time-stamp of an evidence record and is renewed
/// like the rest, so nothing already issued turns red when its TSA certificate expires. The
/// custody anchors of the `[custody] anchor_tsa` notary are renewed in the same request: each
/// anchor's record is written beside its token as `anchors/<seq>-<hash>.ers`.
///
/// Run by `evidence run` (once after start, then daily) and by `evidence renew`.
public struct RecordRenewal: Sendable {
    public struct Summary: Sendable, Codable, Equatable {
        public var notary: String
        /// Confirmed time-stamp proofs looked at.
        public var checked = 0
        /// Due (or forced) for renewal.
        public var due = 0
        /// Renewed and saved.
        public var renewed = 0
        /// Custody anchors among them (`[custody] anchor_tsa`).
        public var anchors = 0
        /// The newest certificate's expiry of the renewed records, after renewal.
        public var renewedUntil: Date?
        /// Why due proofs were not renewed (the TSA's certificate would not outlive theirs).
        public var note: String?
        /// Due records left out because they do not verify now (named, with the reason): renewal
        /// cannot save a proof that is already broken; each is for `verify`/`log verify` to report.
        public var skipped: [String] = []

        public init(notary: String) { self.notary = notary }
    }

    let home: EvidenceHome
    let notaries: Notaries
    /// `[custody] anchor_tsa`: whose anchors are renewed with its proofs.
    let anchorTSA: String?
    let logger: Logger

    /// `[custody] anchor_archive`: where a renewed anchor record is copied (a job per renewal).
    let anchorArchive: String?

    public init(home: EvidenceHome, notaries: Notaries, anchorTSA: String? = nil, anchorArchive: String? = nil, logger: Logger) {
        self.home = home; self.notaries = notaries; self.anchorTSA = anchorTSA; self.anchorArchive = anchorArchive; self.logger = logger
    }

    /// Renews `notary`'s due proofs (of `items` only, when given; all of them with `force`).
    public func renew(notary name: String, items: Set<Int64>? = nil, force: Bool = false, now: Date = Date()) async throws -> Summary {
        guard let entry = notaries.entries[name], case .rfc3161(let tsa) = entry.client else {
            throw RenewalError("notary \"\(name)\" is not a configured rfc3161 notary")
        }
        var summary = Summary(notary: name)
        let catalog = home.catalog, store = home.store
        /// A proof of an item, or (proof nil) a custody anchor.
        struct Due { let proof: Proof?; let digest: SHA256Digest; let record: Data; let expiry: Date?; let anchor: ChainAnchors.Anchor? }
        let horizon = now.addingTimeInterval(entry.config.renewBefore)
        let trust = tsa.trust
        let (checked, proofsDue, skippedProofs): (Int, [Due], [String]) = try await onIOThread {
            var due: [Due] = []
            var skipped: [String] = []
            var checked = 0
            for proof in try catalog.allProofs() where proof.notary == name && proof.kind.isTimestamp && proof.state == .confirmed {
                if let items, !items.contains(proof.itemID) { continue }
                checked += 1
                guard let receipt = proof.receipt, let item = try catalog.item(id: proof.itemID) else { continue }
                let data = try store.read(receipt)
                let record = proof.kind == .rfc4998 ? data : try EvidenceRecordRenewal.record(fromResponse: data)
                let expiry = EvidenceRecordRenewal.expiry(of: record)
                guard force || expiry.map({ $0 <= horizon }) ?? false else { continue }
                // Only a record that verifies now: one broken record must not stop the rest.
                do throws(TimestampError) { _ = try EvidenceRecordVerifier.verify(record: record, digest: item.sha256, trust: trust) } catch {
                    skipped.append("item \(item.id): \(error.message)")
                    continue
                }
                due.append(Due(proof: proof, digest: item.sha256, record: record, expiry: expiry, anchor: nil))
            }
            return (checked, due, skipped)
        }
        summary.skipped = skippedProofs
        // The custody anchors of this TSA (not when items were named).
        var anchorsDue: [Due] = []
        if items == nil, anchorTSA == name {
            for anchor in ChainAnchors.list(home) {
                // The token is over the anchor's checkpoint (or, before checkpoints, the event's hash).
                guard let digest = anchor.imprint()?.digest, let token = FileManager.default.contents(atPath: anchor.file) else { continue }
                summary.checked += 1
                // The renewed record beside the token only when it is that token's record and
                // verifies; else the token itself starts a new one.
                var record: Data?
                if let renewed = FileManager.default.contents(atPath: anchor.recordFile),
                   let first = (try? EvidenceRecord(der: [UInt8](renewed)))?.chains.first?.first?.token,
                   first == (try? EvidenceRecord.token(ofResponse: token)),
                   (try? EvidenceRecordVerifier.verify(record: renewed, digest: digest, trust: trust)) != nil {
                    record = renewed
                }
                if record == nil {
                    guard let made = try? EvidenceRecordRenewal.record(fromResponse: token) else {
                        summary.skipped.append("anchor \(anchor.name): not a time-stamp reply"); continue
                    }
                    do throws(TimestampError) { _ = try EvidenceRecordVerifier.verify(record: made, digest: digest, trust: trust) } catch {
                        summary.skipped.append("anchor \(anchor.name): \(error.message)"); continue
                    }
                    record = made
                }
                guard let record else { continue }
                let expiry = EvidenceRecordRenewal.expiry(of: record)
                if force || expiry.map({ $0 <= horizon }) ?? false {
                    anchorsDue.append(Due(proof: nil, digest: digest, record: record, expiry: expiry, anchor: anchor))
                }
            }
        }
        var due = proofsDue + anchorsDue
        summary.checked += checked
        summary.due = due.count
        guard !due.isEmpty else { return summary }

        var leaves: [SHA256Digest] = []
        for d in due { leaves.append(try EvidenceRecordRenewal.renewalGroup(of: d.record).leaf) }
        let tree = HashTree(leaves: leaves)
        guard let root = tree.root else { return summary }
        let (reply, url) = try await tsa.timestamp(root)
        let newExpiry = TSACertificates.signerNotAfter(response: reply.response)
        if !force, let newExpiry {
            // Only records the new time-stamp outlives: renewing the others would shorten them.
            let waiting = due.filter { d in d.expiry.map { newExpiry <= $0 } ?? false }
            if !waiting.isEmpty {
                let oldest = waiting.compactMap(\.expiry).min() ?? newExpiry
                summary.note = "the TSA's signing certificate expires \(Timestamp.string(newExpiry)), no later than "
                    + "\(waiting.count) record(s)' own (from \(Timestamp.string(oldest))): renewing those with it gains nothing; "
                    + "they wait for a TSA certificate that outlives theirs"
                logger.warning("\(name): time-stamp renewal waits", metadata: ["reason": "\(summary.note ?? "")"])
            }
            due.removeAll { d in d.expiry.map { newExpiry <= $0 } ?? false }
            guard !due.isEmpty else { return summary }
        }
        let renewed = try EvidenceRecordRenewal.renew(due.map(\.record), response: reply.response, tree: tree, trust: trust,
                                                      digests: due.map(\.digest))
        let chosen = due
        let saved = try await onIOThread {
            var saved = 0
            for (d, record) in zip(chosen, renewed) {
                if let anchor = d.anchor {
                    try AtomicFile.write(record, to: anchor.recordFile, mode: 0o444)
                    // The renewal is what verifies once the first token's certificate has expired: it
                    // goes to the anchor_archive copies too, as a new file there.
                    if let account = anchorArchive {
                        try ChainAnchors.enqueueCopy(anchor.name, account: account, catalog: catalog, renewal: anchor.recordVersion)
                    }
                    saved += 1
                    continue
                }
                guard var proof = d.proof, let read = proof.receipt else { continue }
                let receipt = try store.put(record).digest
                proof.kind = .rfc4998
                proof.receipt = receipt
                proof.link = proof.link ?? url
                proof.updatedAt = Date()
                // The item's state does not change: it was proven and stays proven. Saved only over
                // the receipt read (another node or `evidence renew` may have renewed it meanwhile).
                let kept = try catalog.saveProof(proof, ifCurrent: .confirmed, remoteID: d.proof?.remoteID ?? "", receipt: read) { _, _ in nil }
                if kept != nil { saved += 1 }
            }
            return saved
        }
        summary.renewed = saved
        summary.anchors = anchorsDue.count
        summary.renewedUntil = newExpiry
        logger.info("\(name): renewed \(saved) time-stamp proof(s)", metadata: ["until": "\(newExpiry.map(Timestamp.string) ?? "-")", "tsa": "\(Redact.url(url))"])
        return summary
    }
}

public struct RenewalError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Part of `evidence run`: time-stamp renewal of every rfc3161 notary's due proofs, a minute
/// after start and then daily (a failed attempt is retried after an hour).
struct RenewalService: Service {
    let renewal: RecordRenewal
    let notaries: Notaries
    let logger: Logger
    var first: Double = 60
    var every: Double = 86_400

    func run() async throws {
        var wait = first
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let seconds = wait
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(seconds)) }
            if Task.isShuttingDownGracefully || Task.isCancelled { return }
            wait = every
            for (name, entry) in notaries.entries.sorted(by: { $0.key < $1.key }) {
                guard case .rfc3161 = entry.client else { continue }
                do {
                    let s = try await renewal.renew(notary: name)
                    if s.due > 0 { logger.info("\(name): time-stamp renewal", metadata: ["due": "\(s.due)", "renewed": "\(s.renewed)"]) }
                } catch {
                    logger.warning("\(name): time-stamp renewal failed, retried in an hour: \(error)")
                    wait = min(wait, 3600)
                }
            }
        }
    }
}
