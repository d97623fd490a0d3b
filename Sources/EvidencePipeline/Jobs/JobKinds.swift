import EvidenceCatalog
import EvidenceConfig
import EvidenceCore

/// The job kinds of the pipeline, and where a rule's items end.
public enum JobKind {
    /// Re-hash the stored object after ingest; move the item to its next state.
    public static let verify = "verify"
    /// Submit to one notary of the rule (scope: the notary's name) and poll until it confirms.
    public static let notarize = "notarize"
    /// Fetch the notaries' certificates and render our own, once every notary confirmed.
    public static let certificate = "certificate"
    /// Copy the original, receipts, certificates and a manifest to the rule's archive account, verified.
    public static let archive = "archive"
    /// Create or reuse the share link of the archived original.
    public static let share = "share"
    /// The rule's `after` action (move/delete) on one source, once the item is final and the
    /// source's own rule has its evidence (notaries confirmed, archive copy verified). For a
    /// duplicate under a rule that keeps its files, action `keep`: it only gets that rule's
    /// missing stages done.
    public static let afterAction = "after-action"
    /// Copy one custody anchor to the `[custody] anchor_archive` account (no item).
    public static let anchorCopy = "anchor-copy"
}

/// What happens to items of a rule, stage by stage:
/// verify → notarize (one job per notary) → certificate → archive → share → done; stages the
/// rule does not ask for are skipped.
public struct PipelinePlan: Sendable {
    public let rule: WatchRule

    public init(rule: WatchRule) { self.rule = rule }

    /// The state an item of this rule is in when all work for it is done.
    public var finalState: ItemState { .done }

    public var jobsForNewItem: [JobSpec] {
        [JobSpec(kind: JobKind.verify, payload: ["rule": rule.name])]
    }

    /// Jobs for a new sighting of content already known (a duplicate, perhaps under another
    /// rule): a rule that keeps its files still gets its own notaries and archive, through a
    /// `keep` after-action that queues the stages it lacks. (`delete`/`move` have their
    /// after-action from `jobsForNewSource`, which does the same before acting.)
    public var jobsForKnownItem: [JobSpec] {
        guard case .keep = rule.after, !rule.notary.isEmpty || rule.archive != nil else { return [] }
        return [JobSpec(kind: JobKind.afterAction, payload: ["rule": rule.name, "action": "keep"], maxAttempts: 20)]
    }

    /// What this rule still needs before its after-action may touch the source: a notarize job
    /// for each of its notaries without a confirmed proof; once they are all confirmed, an
    /// archive job for its account when no verified copy of the original is recorded there.
    /// Empty: the rule's own evidence exists.
    public func missingStages(item: Item, proofs: [Proof], archived: [ArchivedFile]) -> [JobSpec] {
        let confirmed = Set(proofs.filter { $0.state == .confirmed && $0.receipt != nil }.map(\.notary))
        let notarize = rule.notary.filter { !confirmed.contains($0) }.map {
            JobSpec(kind: JobKind.notarize, payload: ["rule": rule.name, "notary": $0], maxAttempts: 12, scope: $0)
        }
        if !notarize.isEmpty { return notarize }
        if let account = rule.archive,
           !archived.contains(where: { $0.account == account && $0.role == "original" && $0.sha256 == item.sha256 }) {
            return jobsForArchive
        }
        return []
    }

    public var jobsForNewSource: [JobSpec] {
        switch rule.after {
        case .keep: return []
        case .delete: return [JobSpec(kind: JobKind.afterAction, payload: ["rule": rule.name, "action": "delete"], maxAttempts: 20)]
        case .move(let dir): return [JobSpec(kind: JobKind.afterAction, payload: ["rule": rule.name, "action": "move", "to": dir], maxAttempts: 20)]
        }
    }

    /// The item's move once its stored copy re-verified: on to the notaries, or straight to
    /// its final state when the rule has neither notary nor archive.
    public func afterVerify(details: [String: String]) -> JobTransition {
        if !rule.notary.isEmpty {
            let jobs = rule.notary.map {
                JobSpec(kind: JobKind.notarize, payload: ["rule": rule.name, "notary": $0], maxAttempts: 12, scope: $0)
            }
            return JobTransition(state: nil, event: "verified", details: details, jobs: jobs)
        }
        if rule.archive != nil {
            return JobTransition(state: nil, event: "verified", details: details, jobs: jobsForArchive)
        }
        return JobTransition(state: finalState, event: "verified", details: details)
    }

    /// One archive job per item and account (so that another rule's account gets its own).
    var jobsForArchive: [JobSpec] {
        [JobSpec(kind: JobKind.archive, payload: ["rule": rule.name], maxAttempts: 12, scope: rule.archive.map { "account:" + $0 })]
    }

    /// Created when every notary of the rule confirmed.
    public var jobsWhenConfirmed: [JobSpec] {
        [JobSpec(kind: JobKind.certificate, payload: ["rule": rule.name])]
    }

    /// Where an item goes once its certificates are stored: final without an archive, else on
    /// to the archive stage.
    public var stateAfterCertificates: ItemState { rule.archive == nil ? finalState : .certified }
    public var jobsAfterCertificates: [JobSpec] { rule.archive == nil ? [] : jobsForArchive }

    /// Once every file is archived and verified: on to the share link, or final.
    public var stateAfterArchive: ItemState { rule.share == nil ? finalState : .archived }
    public var jobsAfterArchive: [JobSpec] {
        rule.share == nil ? [] : [JobSpec(kind: JobKind.share, payload: ["rule": rule.name], maxAttempts: 12)]
    }
}
