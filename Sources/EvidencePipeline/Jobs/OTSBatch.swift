import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import EvidenceStore
import Foundation
import Logging

/// One window of an `opentimestamps` notary, run by its `stamp` job in two phases.
///
/// 1. Submission: the members' hash tree (RFC 4998's, as for a batching TSA) is built and its
///    root sent to every calendar at once; at least `min_calendars` must answer. Each member's
///    `.ots` (its file digest, its way up the tree, the calendars' answers) is stored and saved
///    as its proof, still pending, under the window's key. The job then stays queued: it is the
///    durable upgrade job of the window.
/// 2. Upgrade, each run until one succeeds (sooner at first, never later than `poll_max`): each
///    calendar a pending attestation names (only configured ones) is asked for the rest of the way.
///    An answer counts only when every Bitcoin attestation in it is over the merkle root of the
///    header `headers_url` serves for that height; a calendar's claim alone is never taken. The
///    counted answers are merged into every member's `.ots`, which is checked whole once more
///    and saved as its confirmed proof (only over the pending proof it was made from).
///
/// A crash before the pending proofs are saved submits again (calendars keep no account of
/// what they were sent; our record is what counts); after, the upgrade resumes from the stored
/// `.ots`. A member that joined after the submission moves to the next window.
struct OTSBatch {
    let home: EvidenceHome
    let notary: NotaryConfig
    let client: OTSClient
    let window: String
    let metrics: PipelineMetrics
    let now: @Sendable () -> Date
    var name: String { notary.name }
    static let logger = Logger(label: "evidence.opentimestamps")

    func run(members: [(proof: Proof, item: Item, rule: WatchRule)]) async throws(JobError) -> JobOutcome {
        let fresh = members.filter { $0.proof.receipt == nil }
        let submitted = members.filter { $0.proof.receipt != nil }
        if submitted.isEmpty { return try await submit(fresh) }
        if !fresh.isEmpty { try await moveToNextWindow(fresh) }
        return try await upgrade(submitted)
    }

    // MARK: 1. Submission

    func submit(_ members: [(proof: Proof, item: Item, rule: WatchRule)]) async throws(JobError) -> JobOutcome {
        let tree = HashTree(leaves: members.map(\.item.sha256))
        guard let root = tree.root, let treeRoot = Hex.decode(root.hex) else { return .done(nil) }
        // A random nonce before the calendars see it, as the reference client adds one: a window
        // of one item would otherwise hand its file's SHA-256 to public servers.
        var nonce = [UInt8](repeating: 0, count: 16)
        for i in nonce.indices { nonce[i] = UInt8.random(in: 0...255) }
        let rootBytes = HashTree.sha256(treeRoot + nonce)
        let client = self.client
        let (stamp, answered): (OTSTimestamp, [String])
        do {
            (stamp, answered) = try await metrics.timeNotary(name, .timestamp) { () throws(NotaryError) in try await client.submit(rootBytes) }
        } catch {
            throw JobError(error, notary: name)
        }
        var files: [Int64: [UInt8]] = [:]
        for m in members {
            guard let leaf = Hex.decode(m.item.sha256.hex), let ops = OTSTimestamp.treeOps(leaf: m.item.sha256, in: tree),
                  let chained = try? OTSTimestamp.chain(from: leaf, ops: ops + [.append(nonce), .sha256], tail: stamp) else {
                throw JobError("\(name): cannot build the proof of item \(m.item.id) in batch \(window)", retryable: false)
            }
            let bytes = OTSFile(timestamp: chained).bytes
            // Read back as any reader will (depth, size): a calendar's answer must not make a proof
            // that our own parser, or the reference client, refuses.
            do { _ = try OTSFile(bytes: bytes) } catch {
                throw JobError("\(name): the proof of item \(m.item.id) in batch \(window) would not read back: \(error.message)", retryable: true)
            }
            files[m.item.id] = bytes
        }
        let catalog = home.catalog, store = home.store, window = self.window, name = self.name, made = files
        let link = answered.map { Redact.url($0) }.joined(separator: " ")
        try await blockingJobWork {
            for m in members {
                guard let bytes = made[m.item.id] else { continue }
                let receipt = try store.put(Data(bytes)).digest
                let proof = Proof(itemID: m.item.id, notary: name, kind: .opentimestamps, state: .pending, remoteID: window,
                                  receipt: receipt, network: "bitcoin", link: link, submittedAt: m.proof.submittedAt)
                let lifecycle = ItemLifecycle(rule: m.rule)
                try catalog.saveProof(proof, ifCurrent: .pending, remoteID: window, receipt: nil, then: lifecycle.decide(onSaving: proof))
            }
        }
        return .notYet(until: now().addingTimeInterval(notary.pollFirst),
                       reason: "\(name): batch \(window) (\(members.count) items) is with \(answered.count) calendars; waiting for a Bitcoin block")
    }

    func moveToNextWindow(_ members: [(proof: Proof, item: Item, rule: WatchRule)]) async throws(JobError) {
        let (next, end) = StampHandler.window(notary: name, seconds: notary.batch, now: now())
        let catalog = home.catalog, window = self.window, name = self.name
        try await blockingJobWork {
            for m in members {
                var copy = m.proof
                copy.remoteID = next
                let moved = copy
                let lifecycle = ItemLifecycle(rule: m.rule)
                try catalog.saveProof(moved, ifCurrent: .pending, remoteID: window, receipt: nil, then: lifecycle.decide(onSaving: moved))
            }
            _ = try catalog.enqueue(JobSpec(.stamp(notary: name, window: next), runAt: end), itemID: nil,
                                    dedupeKey: StampHandler.dedupeKey(window: next))
        }
    }

    // MARK: 2. Upgrade

    func upgrade(_ members: [(proof: Proof, item: Item, rule: WatchRule)]) async throws(JobError) -> JobOutcome {
        let store = home.store
        let first = members[0]
        let firstFile: OTSFile
        do {
            let data = try await blockingJobWork { try store.read(first.proof.receipt!) }
            firstFile = try OTSFile(bytes: [UInt8](data))
        } catch {
            throw JobError("\(name): the stored proof of item \(first.item.id) in batch \(window) is unreadable: \(error)", retryable: false)
        }
        var seen = Set<String>()
        var pending: [(uri: String, commitment: [UInt8])] = []
        for case (let message, .pending(let uri)) in firstFile.timestamp.allAttestations where seen.insert(uri + Hex.encode(message)).inserted {
            pending.append((uri, message))
        }
        var upgrades: [(uri: String, commitment: [UInt8], stamp: OTSTimestamp)] = []
        var headers: [Int: BitcoinHeader] = [:]
        var problems: [String] = []
        var waits: [String] = []
        var tipHeight: Int?
        for p in pending {
            do throws(NotaryError) {
                guard let up = try await metrics.timeNotary(name, .poll, { () throws(NotaryError) in
                    try await client.upgrade(commitment: p.commitment, calendar: p.uri)
                }) else { continue }
                let found = try await client.headers(for: up)
                let bitcoin = up.allAttestations.compactMap { a -> (Int, [UInt8])? in
                    if case .bitcoin(let h) = a.attestation { return (h, a.message) } else { return nil }
                }
                if bitcoin.isEmpty { continue }
                if let bad = bitcoin.first(where: { found[$0.0]?.merkleRoot != $0.1 }) {
                    problems.append("calendar \(Redact.url(p.uri)) claims Bitcoin block \(bad.0), but its operations do not lead to that "
                                    + "block's merkle root from \(Redact.url(client.headersURL)): ignored")
                    continue
                }
                // Deep enough that a reorganisation will not orphan it (`confirmations`). The tip is
                // asked for once a run, whichever calendars answer.
                let tip: Int
                if let known = tipHeight { tip = known } else { tip = try await client.tipHeight(); tipHeight = tip }
                if let shallow = bitcoin.map(\.0).max(), tip - shallow + 1 < client.confirmations {
                    waits.append("Bitcoin block \(shallow) has \(max(0, tip - shallow + 1)) of \(client.confirmations) confirmations")
                    continue
                }
                headers.merge(found) { a, _ in a }
                upgrades.append((p.uri, p.commitment, up))
            } catch {
                problems.append(error.message)
            }
        }
        // A calendar that lies, or a header source that cannot be read, is the operator's to know
        // (every poll, at most every `poll_max`): the batch goes on waiting for an honest answer.
        for problem in problems {
            Self.logger.warning("\(problem)", metadata: ["notary": .string(name), "batch": .string(window)])
        }
        for wait in Set(waits).sorted() { Self.logger.info("\(wait)", metadata: ["notary": .string(name), "batch": .string(window)]) }
        if upgrades.isEmpty {
            let oldest = members.compactMap(\.proof.submittedAt).min() ?? now()
            let wait = min(notary.pollMax, max(notary.pollFirst, now().timeIntervalSince(oldest) / 4))
            return .notYet(until: now().addingTimeInterval(wait),
                           reason: "\(name): batch \(window) is waiting for a Bitcoin block" + ((problems + waits).isEmpty ? "" : " (\((problems + waits).joined(separator: "; ")))"))
        }

        let catalog = home.catalog, window = self.window, name = self.name, headersURL = client.headersURL
        let found = upgrades, known = headers
        let outcome: (saved: [Int64], failed: [String]) = try await blockingJobWork {
            var saved: [Int64] = [], failed: [String] = []
            for m in members {
                guard let old = m.proof.receipt else { continue }
                do {
                    var file = try OTSFile(bytes: [UInt8](try store.read(old)))
                    for u in found { file.timestamp = file.timestamp.merging(u.stamp, at: u.commitment, dropping: [u.uri]) }
                    let bytes = file.bytes
                    let back = try OTSFile(bytes: bytes)
                    let report = try OTSVerifier.check(back, digest: m.item.sha256, headers: known)
                    guard let attested = report.attested.first, report.unchecked.isEmpty else {
                        failed.append("item \(m.item.id): no Bitcoin attestation checked"); continue
                    }
                    let receipt = try store.put(Data(bytes)).digest
                    let proof = Proof(itemID: m.item.id, notary: name, kind: .opentimestamps, state: .confirmed, remoteID: attested.blockHash,
                                      receipt: receipt, blockHeight: Int64(attested.height), network: "bitcoin",
                                      link: headersURL + "/block/" + attested.blockHash,
                                      provenAt: attested.time.addingTimeInterval(OTSClient.blockTimeMargin), submittedAt: m.proof.submittedAt)
                    let lifecycle = ItemLifecycle(rule: m.rule)
                    let done = try catalog.saveProof(proof, ifCurrent: .pending, remoteID: window, receipt: old, then: lifecycle.decide(onSaving: proof))
                    if done != nil { saved.append(m.item.id) }
                } catch {
                    failed.append("item \(m.item.id): \(error)")
                }
            }
            return (saved, failed)
        }
        try await blockingJobWork {
            for id in outcome.saved { _ = try catalog.wakeQueuedJobs(itemID: id, kinds: [.notarize], now: Date()) }
        }
        // The job ends only when no member of the window waits any more: one that could not be
        // confirmed now (a store error, say) is looked at again, not left for a new submission.
        let left = members.count - outcome.saved.count
        for f in outcome.failed { Self.logger.warning("\(f)", metadata: ["notary": .string(name), "batch": .string(window)]) }
        if left > 0, !outcome.failed.isEmpty {
            return .notYet(until: now().addingTimeInterval(notary.pollFirst),
                           reason: "\(name): batch \(window): \(left) item(s) not confirmed yet: \(outcome.failed.joined(separator: "; "))")
        }
        return .done(nil)
    }
}
