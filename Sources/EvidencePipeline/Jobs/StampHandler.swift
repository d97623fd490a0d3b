import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation

/// One time-stamp window of a batching `rfc3161` notary (`batch` > 0, RFC 4998).
///
/// The members are the items whose proof of this notary is pending under the window's key: each
/// joined by saving that proof before the window closed (`NotarizeHandler`), so membership is as
/// durable as any proof. After the window closes this job builds their hash tree, asks the TSA
/// once for a token over its root (verified against the notary's trust), and saves each member's
/// evidence record as its confirmed proof, with the member's own rule deciding its next state,
/// and finishes the members' notarize jobs (nothing is left for them to do).
/// A member that joined too late for the read finds this job done and its proof still pending,
/// and joins the next window. After a crash before the proofs are saved, the job runs again and
/// asks again for the members not yet confirmed: nothing is lost, no item gets two records.
public struct StampHandler: JobHandler {
    public let kind = JobKind.stamp
    let home: EvidenceHome
    let rules: LiveRules
    let notaries: Notaries
    let metrics: PipelineMetrics
    /// The time windows are read by (tests move it instead of sleeping).
    let now: @Sendable () -> Date

    public init(home: EvidenceHome, rules: LiveRules, notaries: Notaries, metrics: PipelineMetrics = .disabled,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.home = home; self.rules = rules; self.notaries = notaries; self.metrics = metrics; self.now = now
    }

    public func pauseScope(of job: QueuedJob) -> String? {
        guard case .stamp(let notary, _) = job.payload else { return nil }
        return CredentialPause.scope(.notary, notary)
    }

    /// The key of the window open at `now` for a notary batching every `seconds`, and its end:
    /// `NOTARY@START-END`, both in milliseconds since 1970.
    public static func window(notary: String, seconds: Double, now: Date = Date()) -> (key: String, end: Date) {
        let start = (now.timeIntervalSince1970 / seconds).rounded(.down) * seconds
        let end = Date(timeIntervalSince1970: start + seconds)
        return ("\(notary)@\(Int64((start * 1000).rounded()))-\(Int64((end.timeIntervalSince1970 * 1000).rounded()))", end)
    }

    /// The end of the window a key names (nil for a key that is not `NOTARY@START-END`).
    public static func end(ofWindow key: String) -> Date? {
        guard let at = key.lastIndex(of: "@"), let dash = key[at...].lastIndex(of: "-"),
              let ms = Int64(key[key.index(after: dash)...]) else { return nil }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }

    public static func dedupeKey(window: String) -> String { "stamp:" + window }

    struct Member {
        let proof: Proof
        let item: Item
        let rule: WatchRule
        /// The member's notarize job of this notary (waiting for this window).
        let jobID: Int64
    }

    /// Members' proofs saved per transaction.
    static let saveBatch = 32

    public func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard case .stamp(let notaryName, let window) = job.payload else {
            throw JobError("job \(job.id) is not a stamp job", retryable: false)
        }
        let kind: ProofKind
        switch notaries.entries[notaryName]?.client {
        case .rfc3161: kind = .rfc4998
        case .opentimestamps: kind = .opentimestamps
        default:
            throw JobError("notary \"\(notaryName)\" is not a configured rfc3161 or opentimestamps notary ([notaries.\(notaryName)] in evidence.toml)",
                           retryable: true)
        }
        // Never before the window has closed (a job enqueued early, a node whose clock is behind).
        if let end = Self.end(ofWindow: window), end > now() {
            return .notYet(until: end, reason: "\(notaryName): batch \(window) is still open")
        }
        let catalog = home.catalog
        let rules = self.rules
        let members: [Member] = try await blockingJobWork {
            var found: [Member] = []
            for proof in try catalog.proofs(notary: notaryName, remoteID: window) where proof.kind == kind && proof.state == .pending {
                guard let item = try catalog.item(id: proof.itemID) else { continue }
                // The member's rule is its notarize job's; a member whose rule is gone waits
                // (its job joins a later window once the rule is back).
                let jobs = try catalog.jobs(itemID: item.id).compactMap { job -> (id: Int64, rule: String, done: Bool)? in
                    if case .notarize(let rule, let notary) = job.payload, notary == notaryName { return (job.id, rule, job.state == .done) }
                    return nil
                }
                let job = jobs.first { !$0.done } ?? jobs.first
                guard let job, let rule = rules[job.rule] else { continue }
                found.append(Member(proof: proof, item: item, rule: rule, jobID: job.id))
            }
            return found
        }
        if members.isEmpty { return .done(nil) }
        guard let notary = notaries.entries[notaryName] else { return .done(nil) }
        let tsa: TSAClient
        switch notary.client {
        case .rfc3161(let client): tsa = client
        case .opentimestamps(let ots):
            return try await OTSBatch(home: home, notary: notary.config, client: ots, window: window, metrics: metrics, now: now)
                .run(members: members.map { ($0.proof, $0.item, $0.rule) })
        case .qed: return .done(nil)
        }

        let tree = HashTree(leaves: members.map(\.item.sha256))
        guard let root = tree.root else { return .done(nil) }
        let (reply, url): (TimestampToken, String)
        do {
            (reply, url) = try await metrics.timeNotary(notaryName, .timestamp) { () throws(NotaryError) in try await tsa.timestamp(root) }
        } catch {
            throw JobError(error, notary: notaryName)
        }
        let store = home.store
        let trust = tsa.trust
        let made = try await blockingJobWork { () -> Result<(token: TimestampToken, records: [SHA256Digest: Data]), TimestampError> in
            do throws(TimestampError) { return .success(try EvidenceRecordVerifier.makeAll(response: reply.response, tree: tree, trust: trust)) } catch {
                return .failure(error)
            }
        }
        guard case .success(let made) = made else {
            if case .failure(let error) = made {
                throw JobError("\(notaryName): the batch's evidence records do not verify: \(error.message)", retryable: false)
            }
            return .done(nil)
        }
        let saved: [Int64] = try await blockingJobWork {
            // Every member's record stored first, then their proofs saved `saveBatch` at a time,
            // each batch in one transaction (one transaction per member was 3.5% of the
            // pipeline's CPU; a batch bounds how long it holds the catalog's write lock).
            var saves: [(save: ProofSave, jobID: Int64)] = []
            for m in members {
                guard let record = made.records[m.item.sha256] else { continue }
                let receipt = try store.put(record).digest
                let proof = Proof(itemID: m.item.id, notary: notaryName, kind: .rfc4998, state: .confirmed, remoteID: made.token.serial,
                                  receipt: receipt, network: made.token.tsaName, link: url, provenAt: made.token.genTime,
                                  submittedAt: m.proof.submittedAt)
                saves.append((ProofSave(proof, then: ItemLifecycle(rule: m.rule).decide(onSaving: proof)), m.jobID))
            }
            var saved: [Int64] = []
            for start in stride(from: 0, to: saves.count, by: Self.saveBatch) {
                let batch = saves[start..<min(start + Self.saveBatch, saves.count)]
                // Only a member still waiting for this window: never over a proof another run saved.
                let items = try catalog.saveProofs(batch.map(\.save), ifCurrent: .pending, remoteID: window)
                saved += batch.filter { items[$0.save.proof.itemID] != nil }.map(\.jobID)
            }
            return saved
        }
        // The members' notarize jobs have nothing left to do: finished here, in one transaction,
        // rather than each woken to be claimed, find its record and complete. A member's job
        // that is running now is left to itself: put back, it asks whether its proof was
        // confirmed meanwhile (`JobOutcome.notYet`'s `unless`) and runs again at once.
        try await blockingJobWork { _ = try catalog.finishQueuedJobs(ids: saved) }
        return .done(nil)
    }
}
