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
        struct Due {
            let proof: Proof?; let digest: SHA256Digest; let record: Data; let expiry: Date?; let anchor: ChainAnchors.Anchor?
            /// The data's SHA-512, for a record hash-renewed to it.
            var sha512: [UInt8]? = nil
        }
        let horizon = now.addingTimeInterval(entry.config.renewBefore)
        let trust = tsa.trust
        let (checked, proofsDue, skippedProofs): (Int, [Due], [String]) = try await onIOThread {
            var due: [Due] = []
            var skipped: [String] = []
            let checked = try Self.forEachRecord(catalog: catalog, store: store, notary: name, items: items) { proof, item, record in
                let expiry = EvidenceRecordRenewal.expiry(of: record)
                guard force || expiry.map({ $0 <= horizon }) ?? false else { return }
                // A record hash-renewed to SHA-512 is checked with the data's SHA-512, read from the store.
                let needed = EvidenceRecordRenewal.hasSHA512Chain(record)
                guard let verified = Self.verifiesNow(record, item: item, store: store, trust: trust, sha512: needed, skipped: &skipped) else { return }
                due.append(Due(proof: proof, digest: item.sha256, record: record, expiry: expiry, anchor: nil, sha512: verified.sha512))
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
        let due = proofsDue + anchorsDue
        summary.checked += checked
        summary.due = due.count
        guard !due.isEmpty else { return summary }

        // One request per hash algorithm of the records' newest chains (SHA-256, and SHA-512 after
        // a hash-tree renewal): a chain's time-stamps all use its algorithm.
        var chosen: [Due] = []
        var renewed: [Data] = []
        var url = ""
        var newExpiry: Date?
        for algorithm in Imprint.Algorithm.allCases {
            var group = due.filter { EvidenceRecordRenewal.newestAlgorithm(of: $0.record) == algorithm }
            guard !group.isEmpty else { continue }
            var leaves: [[UInt8]] = []
            for d in group { leaves.append(try EvidenceRecordRenewal.renewalGroup(of: d.record).leaf) }
            let tree = HashTree(values: leaves, algorithm: algorithm)
            guard let root = tree.rootImprint else { continue }
            let (reply, answeredBy) = try await tsa.timestamp(imprint: root)
            url = answeredBy
            newExpiry = TSACertificates.signerNotAfter(response: reply.response)
            if !force, let newExpiry {
                // Only records the new time-stamp outlives: renewing the others would shorten them.
                let waiting = group.filter { d in d.expiry.map { newExpiry <= $0 } ?? false }
                if !waiting.isEmpty {
                    let oldest = waiting.compactMap(\.expiry).min() ?? newExpiry
                    summary.note = "the TSA's signing certificate expires \(Timestamp.string(newExpiry)), no later than "
                        + "\(waiting.count) record(s)' own (from \(Timestamp.string(oldest))): renewing those with it gains nothing; "
                        + "they wait for a TSA certificate that outlives theirs"
                    logger.warning("\(name): time-stamp renewal waits", metadata: ["reason": "\(summary.note ?? "")"])
                }
                group.removeAll { d in d.expiry.map { newExpiry <= $0 } ?? false }
                guard !group.isEmpty else { continue }
            }
            renewed += try EvidenceRecordRenewal.renew(group.map(\.record), response: reply.response, tree: tree, trust: trust,
                                                       digests: group.map(\.digest), sha512: group.map(\.sha512))
            chosen += group
        }
        guard !chosen.isEmpty else { return summary }
        let toSave = chosen, records = renewed, tsaURL = url
        let saved = try await onIOThread {
            var saved = 0
            for (d, record) in zip(toSave, records) {
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
                proof.link = proof.link ?? tsaURL
                proof.updatedAt = Date()
                // The item's state does not change: it was proven and stays proven. Saved only over
                // the receipt read (another node or `evidence renew` may have renewed it meanwhile).
                let kept = try catalog.saveProof(proof, ifCurrent: .confirmed, remoteID: d.proof?.remoteID ?? "", receipt: read) { _, _ in nil }
                if kept != nil {
                    saved += 1
                    try Self.refreshArchives(catalog: catalog, itemID: proof.itemID, receipt: receipt)
                }
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

extension RecordRenewal {
    /// Calls `body` with each confirmed time-stamp proof of `notary` (of `items` only, when
    /// given), its item and its evidence record (a per-item `.tsr` as a record of that one
    /// time-stamp). Returns how many proofs were looked at. The proofs are read a page at a
    /// time (`pageSize`), never all at once: a daily pass over years of items in constant memory.
    static func forEachRecord(catalog: any Catalog, store: any ContentStore, notary name: String, items: Set<Int64>?,
                              pageSize: Int = 500, _ body: (Proof, Item, Data) throws -> Void) throws -> Int {
        var checked = 0
        var after: Int64 = 0
        while true {
            let page = try catalog.proofs(notary: name, state: .confirmed, afterItem: after, limit: pageSize)
            for proof in page where proof.kind.isTimestamp {
                if let items, !items.contains(proof.itemID) { continue }
                checked += 1
                guard let receipt = proof.receipt, let item = try catalog.item(id: proof.itemID) else { continue }
                let data = try store.read(receipt)
                try body(proof, item, proof.kind == .rfc4998 ? data : try EvidenceRecordRenewal.record(fromResponse: data))
            }
            guard page.count == pageSize, let last = page.last else { return checked }
            after = last.itemID
        }
    }

    /// A record that verifies now, with the data's SHA-512 when it was asked for.
    struct Verified { let sha512: [UInt8]? }

    /// Whether `record` verifies now (renewal cannot save a proof that is already broken): nil
    /// when not, with the reason in `skipped`. `sha512`: check it with the data's SHA-512, read
    /// from the store (a record with a SHA-512 chain, or one about to get one).
    static func verifiesNow(_ record: Data, item: Item, store: any ContentStore, trust: TSATrust, sha512 wanted: Bool,
                            skipped: inout [String]) -> Verified? {
        var sha512: [UInt8]?
        if wanted {
            do { sha512 = try ItemDigests.sha512(of: item, store: store) } catch {
                skipped.append("item \(item.id): \(error)")
                return nil
            }
        }
        do throws(TimestampError) { _ = try EvidenceRecordVerifier.verify(record: record, digest: item.sha256, trust: trust, sha512: sha512) } catch {
            skipped.append("item \(item.id): \(error.message)")
            return nil
        }
        return Verified(sha512: sha512)
    }

    /// A renewed record goes to the item's archives too: each archive job the item has had runs
    /// once more for it (the archive puts the new record beside the old one, never over it, and
    /// a new manifest naming both), so an auditor holding only the archive keeps the renewal.
    static func refreshArchives(catalog: any Catalog, itemID: Int64, receipt: SHA256Digest) throws {
        var rules = Set<String>()
        for job in try catalog.jobs(itemID: itemID) {
            guard case .archive(let rule) = job.payload, rules.insert(rule).inserted else { continue }
            _ = try catalog.enqueue(JobSpec(.archive(rule: rule)), itemID: itemID,
                                    dedupeKey: "archive-refresh:item:\(itemID):\(rule):\(receipt.hex)")
        }
    }
}

/// The data hashes a hash-renewed record needs, read from the store (the SHA-256 checked on the way).
public enum ItemDigests {
    public static func sha512(of item: Item, store: any ContentStore) throws -> [UInt8] {
        let read = try store.withLocalCopy(of: item.sha256) { path in Result { try FileHasher.hash(path: path, digests: [.sha512]) } }.get()
        guard read.result.digest == item.sha256, let hex = read.digests[DigestAlgorithm.sha512.rawValue], let bytes = Hex.decode(hex) else {
            throw RenewalError("item \(item.id): its stored object no longer hashes to \(item.sha256.hex)")
        }
        return bytes
    }
}

extension RecordRenewal {
    /// Hash-tree renewal (RFC 4998 §5.2) of `notary`'s confirmed time-stamp proofs (of `items`
    /// only, when given): each record gets a new chain over `algorithm` (SHA-512) whose first
    /// time-stamp covers algorithm(algorithm(data) ‖ algorithm(every chain so far)), for all of
    /// them with one TSA request. Records already hash-renewed to it are left as they are. A
    /// per-item `.tsr` becomes the first chain of a record first. Custody anchors are not
    /// hash-renewed (their data is the checkpoint; time-stamp renewal keeps them).
    public func renewHash(notary name: String, items: Set<Int64>? = nil, algorithm: Imprint.Algorithm = .sha512) async throws -> Summary {
        guard let entry = notaries.entries[name], case .rfc3161(let tsa) = entry.client else {
            throw RenewalError("notary \"\(name)\" is not a configured rfc3161 notary")
        }
        guard algorithm == .sha512 else { throw RenewalError("hash-tree renewal is to SHA-512 (the records are SHA-256)") }
        var summary = Summary(notary: name)
        let catalog = home.catalog, store = home.store, trust = tsa.trust
        struct Due { let proof: Proof; let item: Item; let record: Data; let sha512: [UInt8] }
        let (checked, due, skipped): (Int, [Due], [String]) = try await onIOThread {
            var due: [Due] = [], skipped: [String] = []
            let checked = try RecordRenewal.forEachRecord(catalog: catalog, store: store, notary: name, items: items) { proof, item, record in
                if EvidenceRecordRenewal.newestAlgorithm(of: record) == algorithm { return }
                guard let sha512 = RecordRenewal.verifiesNow(record, item: item, store: store, trust: trust, sha512: true, skipped: &skipped)?.sha512
                else { return }
                due.append(Due(proof: proof, item: item, record: record, sha512: sha512))
            }
            return (checked, due, skipped)
        }
        summary.checked = checked
        summary.skipped = skipped
        summary.due = due.count
        guard !due.isEmpty else { return summary }
        var leaves: [[UInt8]] = []
        for d in due { leaves.append(try EvidenceRecordRenewal.hashRenewalLeaf(of: d.record, dataHash: d.sha512, algorithm: algorithm)) }
        let tree = HashTree(values: leaves, algorithm: algorithm)
        guard let root = tree.rootImprint else { return summary }
        let (reply, url) = try await tsa.timestamp(imprint: root)
        let renewed = try EvidenceRecordRenewal.renewHash(due.map(\.record), response: reply.response, tree: tree, trust: trust,
                                                          digests: due.map(\.item.sha256), sha512: due.map(\.sha512))
        let chosen = due
        let saved = try await onIOThread {
            var saved = 0
            for (d, record) in zip(chosen, renewed) {
                guard let read = d.proof.receipt else { continue }
                var proof = d.proof
                proof.kind = .rfc4998
                let receipt = try store.put(record).digest
                proof.receipt = receipt
                proof.link = proof.link ?? url
                proof.updatedAt = Date()
                let kept = try catalog.saveProof(proof, ifCurrent: .confirmed, remoteID: d.proof.remoteID ?? "", receipt: read) { _, _ in nil }
                if kept != nil {
                    saved += 1
                    try Self.refreshArchives(catalog: catalog, itemID: proof.itemID, receipt: receipt)
                }
            }
            return saved
        }
        summary.renewed = saved
        summary.renewedUntil = TSACertificates.signerNotAfter(response: reply.response)
        logger.info("\(name): hash-tree renewal to \(algorithm.label) of \(saved) proof(s)", metadata: ["tsa": "\(Redact.url(url))"])
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
