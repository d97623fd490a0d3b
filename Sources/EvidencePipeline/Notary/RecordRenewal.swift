import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import Foundation
import Logging
import ServiceLifecycle

/// Time-stamp renewal (RFC 4998 §5.2) of the proofs of one rfc3161 notary: before the
/// certificate that signed a proof's newest time-stamp expires (`renew_before`, default 180
/// days), a new archive time-stamp over it is added, for all due proofs with one TSA request.
/// A per-item token (`.tsr`) becomes the first time-stamp of an evidence record and is renewed
/// like the rest, so nothing already issued turns red when its TSA certificate expires.
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
        /// The newest certificate's expiry of the renewed records, after renewal.
        public var renewedUntil: Date?
        /// Why due proofs were not renewed (the TSA's certificate would not outlive theirs).
        public var note: String?

        public init(notary: String) { self.notary = notary }
    }

    let home: EvidenceHome
    let notaries: Notaries
    let logger: Logger

    public init(home: EvidenceHome, notaries: Notaries, logger: Logger) {
        self.home = home; self.notaries = notaries; self.logger = logger
    }

    /// Renews `notary`'s due proofs (of `items` only, when given; all of them with `force`).
    public func renew(notary name: String, items: Set<Int64>? = nil, force: Bool = false, now: Date = Date()) async throws -> Summary {
        guard let entry = notaries.entries[name], case .rfc3161(let tsa) = entry.client else {
            throw RenewalError("notary \"\(name)\" is not a configured rfc3161 notary")
        }
        var summary = Summary(notary: name)
        let catalog = home.catalog, store = home.store
        struct Due { let proof: Proof; let item: Item; let record: Data; let expiry: Date? }
        let horizon = now.addingTimeInterval(entry.config.renewBefore)
        let (checked, due): (Int, [Due]) = try await onIOThread {
            var due: [Due] = []
            var checked = 0
            for proof in try catalog.allProofs() where proof.notary == name && proof.kind.isTimestamp && proof.state == .confirmed {
                if let items, !items.contains(proof.itemID) { continue }
                checked += 1
                guard let receipt = proof.receipt, let item = try catalog.item(id: proof.itemID) else { continue }
                let data = try store.read(receipt)
                let record = proof.kind == .rfc4998 ? data : try EvidenceRecordRenewal.record(fromResponse: data)
                let expiry = EvidenceRecordRenewal.expiry(of: record)
                if force || expiry.map({ $0 <= horizon }) ?? false {
                    due.append(Due(proof: proof, item: item, record: record, expiry: expiry))
                }
            }
            return (checked, due)
        }
        summary.checked = checked
        summary.due = due.count
        guard !due.isEmpty else { return summary }

        var leaves: [SHA256Digest] = []
        for d in due { leaves.append(try EvidenceRecordRenewal.renewalGroup(of: d.record).leaf) }
        let tree = HashTree(leaves: leaves)
        guard let root = tree.root else { return summary }
        let (reply, url) = try await tsa.timestamp(root)
        let newExpiry = TSACertificates.signerNotAfter(response: reply.response)
        let oldest = due.compactMap(\.expiry).min()
        if !force, let oldest, let newExpiry, newExpiry <= oldest {
            summary.note = "the TSA's signing certificate expires \(Timestamp.string(newExpiry)), no later than the records' "
                + "(\(Timestamp.string(oldest))): renewing with it gains nothing; \(due.count) record(s) wait for a TSA certificate that outlives theirs"
            logger.warning("\(name): time-stamp renewal waits", metadata: ["reason": "\(summary.note ?? "")"])
            return summary
        }
        let renewed = try EvidenceRecordRenewal.renew(due.map(\.record), response: reply.response, tree: tree, trust: tsa.trust,
                                                      digests: due.map(\.item.sha256))
        let saved = try await onIOThread {
            var saved = 0
            for (d, record) in zip(due, renewed) {
                let receipt = try store.put(record).digest
                var proof = d.proof
                proof.kind = .rfc4998
                proof.receipt = receipt
                proof.link = proof.link ?? url
                proof.updatedAt = Date()
                // The item's state does not change: it was proven and stays proven.
                _ = try catalog.saveProof(proof) { _, _ in nil }
                saved += 1
            }
            return saved
        }
        summary.renewed = saved
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
