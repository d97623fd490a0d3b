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
/// evidence record as its confirmed proof, with the member's own rule deciding its next state.
/// A member that joined too late for the read finds this job done and its proof still pending,
/// and joins the next window. After a crash before the proofs are saved, the job runs again and
/// asks again for the members not yet confirmed: nothing is lost, no item gets two records.
public struct StampHandler: JobHandler {
    public let kind = JobKind.stamp
    let home: EvidenceHome
    let rules: LiveRules
    let notaries: Notaries
    let metrics: PipelineMetrics

    public init(home: EvidenceHome, rules: LiveRules, notaries: Notaries, metrics: PipelineMetrics = .disabled) {
        self.home = home; self.rules = rules; self.notaries = notaries; self.metrics = metrics
    }

    public func pauseScope(of job: QueuedJob) -> String? {
        guard case .stamp(let notary, _) = job.payload else { return nil }
        return CredentialPause.scope(.notary, notary)
    }

    /// The key of the window open at `now` for a notary batching every `seconds`, and its end.
    public static func window(notary: String, seconds: Double, now: Date = Date()) -> (key: String, end: Date) {
        let start = (now.timeIntervalSince1970 / seconds).rounded(.down) * seconds
        return ("\(notary)@\(Int64((start * 1000).rounded()))", Date(timeIntervalSince1970: start + seconds))
    }

    public static func dedupeKey(window: String) -> String { "stamp:" + window }

    struct Member {
        let proof: Proof
        let item: Item
        let rule: WatchRule
    }

    public func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard case .stamp(let notaryName, let window) = job.payload else {
            throw JobError("job \(job.id) is not a stamp job", retryable: false)
        }
        guard let notary = notaries.entries[notaryName], case .rfc3161(let tsa) = notary.client else {
            throw JobError("notary \"\(notaryName)\" is not a configured rfc3161 notary ([notaries.\(notaryName)] in evidence.toml)",
                           retryable: true)
        }
        let catalog = home.catalog
        let rules = self.rules
        let members: [Member] = try await blockingJobWork {
            var found: [Member] = []
            for proof in try catalog.proofs(notary: notaryName, remoteID: window) where proof.kind == .rfc4998 && proof.state == .pending {
                guard let item = try catalog.item(id: proof.itemID) else { continue }
                // The member's rule is its notarize job's; a member whose rule is gone waits
                // (its job joins a later window once the rule is back).
                let ruleName = try catalog.jobs(itemID: item.id).lazy.compactMap { job -> String? in
                    if case .notarize(let rule, let notary) = job.payload, notary == notaryName { return rule }
                    return nil
                }.first
                guard let ruleName, let rule = rules[ruleName] else { continue }
                found.append(Member(proof: proof, item: item, rule: rule))
            }
            return found
        }
        if members.isEmpty { return .done(nil) }

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
            var saved: [Int64] = []
            for m in members {
                guard let record = made.records[m.item.sha256] else { continue }
                let receipt = try store.put(record).digest
                let proof = Proof(itemID: m.item.id, notary: notaryName, kind: .rfc4998, state: .confirmed, remoteID: made.token.serial,
                                  receipt: receipt, network: made.token.tsaName, link: url, provenAt: made.token.genTime,
                                  submittedAt: m.proof.submittedAt)
                let lifecycle = ItemLifecycle(rule: m.rule)
                _ = try catalog.saveProof(proof) { state, confirmed in
                    lifecycle.transition(from: state, on: .proofSaved(notary: proof.notary, state: proof.state,
                                                                      error: proof.error, confirmed: confirmed))
                }
                saved.append(m.item.id)
            }
            return saved
        }
        try await blockingJobWork {
            for id in saved { _ = try catalog.wakeQueuedJobs(itemID: id, now: Date()) }
        }
        return .done(nil)
    }
}
