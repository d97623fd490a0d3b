import EvidenceCatalog
import EvidenceConfig
import EvidenceCore

/// Where an item of a rule goes next: one pure function of its state and what just happened.
///
/// ```
/// ingested ─verified─▶ (notarize jobs) ─first proof pending─▶ submitted ─all confirmed─▶ confirmed
///     │                                        └─a notary said failed─▶ failed
///     └─verified, no notary─▶ (archive job, or done)
/// confirmed ─certified─▶ certified ─archived─▶ archived ─shared─▶ done
/// any ─verify gave up─▶ failed ─retried─▶ the state it failed from
/// ```
/// Stages the rule does not ask for are skipped: no archive ends at `done` after the
/// certificates; no share ends at `done` after the archive. The catalog applies the returned
/// transition (state, custody event, jobs to create) in one transaction and decides nothing
/// itself; handlers do the work and report the event.
public struct ItemLifecycle: Sendable {
    public let rule: WatchRule

    public init(rule: WatchRule) { self.rule = rule }

    /// What just happened to an item.
    public enum Event: Sendable, Equatable {
        /// Its stored copy was re-hashed and matches.
        case verified(details: [String: String])
        /// A notary's proof was saved; `confirmed` holds every notary whose proof of this item is
        /// confirmed now (this one included when it is).
        case proofSaved(notary: String, state: Proof.State, error: String?, confirmed: Set<String>)
        /// Its certificates (the notaries' and ours) are stored.
        case certified(count: Int)
        /// Every file is in the rule's archive account, verified.
        case archived(details: [String: String])
        /// Its share link exists.
        case shared(details: [String: String])
        /// A stage (archive, share) was not run: the item is superseded by a later version of
        /// its path (`Item.supersededBy`) and the stage had not started.
        case skippedSuperseded(stage: JobKind, by: Int64)
        /// Its verify job gave up: the stored copy could not be read, or does not match its hash.
        case verifyGaveUp(reason: String)
        /// An operator re-queued its failed jobs (`evidence retry`); `failedFrom` is the state it
        /// was in when it went to `failed` (nil when the catalog has none recorded).
        case retried(failedFrom: ItemState?)
    }

    /// The state an item of this rule is in when all work for it is done.
    public var finalState: ItemState { .done }

    /// Jobs for an item seen for the first time.
    public var jobsForNewItem: [JobSpec] { [JobSpec(.verify(rule: rule.name))] }

    /// Jobs for a new sighting of content already known (a duplicate, perhaps under another
    /// rule): a rule that keeps its files still gets its own notaries and archive, through a
    /// `keep` after-action that queues the stages it lacks. (`delete`/`move` have their
    /// after-action from `jobsForNewSource`, which does the same before acting.)
    public var jobsForKnownItem: [JobSpec] {
        guard case .keep = rule.after, !rule.notary.isEmpty || rule.archive != nil else { return [] }
        return [JobSpec.parked(.afterAction(rule: rule.name, action: .keep, source: nil))]
    }

    /// What this rule still needs before its after-action may touch the source: a notarize job
    /// for each of its notaries without a confirmed proof; once they are all confirmed, an
    /// archive job for its account when no verified copy of the original is recorded there.
    /// Empty: the rule's own evidence exists.
    public func missingStages(item: Item, proofs: [Proof], archived: [ArchivedFile]) -> [JobSpec] {
        let confirmed = Set(proofs.filter { $0.state == .confirmed && $0.receipt != nil }.map(\.notary))
        let notarize = rule.notary.filter { !confirmed.contains($0) }.map {
            JobSpec(.notarize(rule: rule.name, notary: $0), scope: $0)
        }
        if !notarize.isEmpty { return notarize }
        if let account = rule.archive,
           !archived.contains(where: { $0.account == account && $0.role == .original && $0.sha256 == item.sha256 }) {
            return jobsForArchive
        }
        return []
    }

    /// Which earlier items of a path new content from it supersedes: all under a rule that keeps
    /// its files; under one that deletes or moves them, only those not done (a done item's file
    /// went by our hand, and a new file of the same name is new evidence).
    public var supersedes: IngestRecord.Supersedes {
        if case .keep = rule.after { return .all }
        return .unfinished
    }

    /// Jobs for a source (one file name) of an item: the rule's after-action, if any.
    public var jobsForNewSource: [JobSpec] {
        switch rule.after {
        case .keep: return []
        case .delete: return [JobSpec.parked(.afterAction(rule: rule.name, action: .delete, source: nil))]
        case .move(let dir): return [JobSpec.parked(.afterAction(rule: rule.name, action: .move(to: dir), source: nil))]
        }
    }

    /// The transition `event` causes for an item in `state`; nil when it changes nothing (a
    /// proof of one notary of several, a pending proof after the first).
    ///
    /// A transition that makes the item final, or records another rule's archive copy of a final
    /// item, wakes the item's parked after-actions: they are created parked with each source and
    /// run when this happens, instead of asking again and again whether the item is done.
    /// The decision `Catalog.saveProof` asks for when `proof` is saved: this lifecycle's
    /// transition on `.proofSaved`, given the item's state and the notaries confirmed then.
    public func decide(onSaving proof: Proof) -> @Sendable (ItemState, Set<String>) -> JobTransition? {
        let lifecycle = self
        return { state, confirmed in
            lifecycle.transition(from: state, on: .proofSaved(notary: proof.notary, state: proof.state,
                                                              error: proof.error, confirmed: confirmed))
        }
    }

    public func transition(from state: ItemState, on event: Event) -> JobTransition? {
        guard var t = decide(from: state, on: event) else { return nil }
        if t.state == finalState || (state == finalState && t.event == .archived) { t.wake = [.afterAction] }
        return t
    }

    /// The transition of an item no rule of the configuration describes (ingested by hand, or its
    /// rule since removed): it is verified without a next stage; giving up and retrying are the
    /// same as under any rule. Nil for the stages only a rule plans.
    public static func withoutRule(from state: ItemState, on event: Event) -> JobTransition? {
        switch event {
        case .verified(let details):
            return JobTransition(state: nil, event: .verified, details: details)
        case .verifyGaveUp, .retried, .skippedSuperseded:
            return ruleIndependent(from: state, on: event)
        case .proofSaved, .certified, .archived, .shared:
            return nil
        }
    }

    /// Events whose outcome no rule changes.
    private static func ruleIndependent(from state: ItemState, on event: Event) -> JobTransition? {
        switch event {
        case .verifyGaveUp(let reason):
            return JobTransition(state: .failed, event: .verifyFailed, reason: reason)
        case .retried(let failedFrom):
            // Only a failed item moves; the re-queued jobs of an item that is not failed (a
            // certificate or archive job that gave up) take it on from where it is.
            guard state == .failed else { return nil }
            return JobTransition(state: failedFrom ?? .ingested, event: .retry)
        case .skippedSuperseded(let stage, let by):
            // The item stays where it is (stored, notarized, listed): only the custody log says
            // what was not done, and why.
            return JobTransition(state: nil, event: .stageSkipped, details: ["stage": stage.rawValue, "superseded_by": String(by)])
        case .verified, .proofSaved, .certified, .archived, .shared:
            return nil
        }
    }

    private func decide(from state: ItemState, on event: Event) -> JobTransition? {
        switch event {
        case .verifyGaveUp, .retried, .skippedSuperseded:
            return Self.ruleIndependent(from: state, on: event)

        case .verified(let details):
            if !rule.notary.isEmpty {
                let jobs = rule.notary.map { JobSpec(.notarize(rule: rule.name, notary: $0), scope: $0) }
                return JobTransition(state: nil, event: .verified, details: details, jobs: jobs)
            }
            if rule.archive != nil {
                return JobTransition(state: nil, event: .verified, details: details, jobs: jobsForArchive)
            }
            return JobTransition(state: finalState, event: .verified, details: details)

        case .proofSaved(let notary, .pending, _, _):
            return state < .submitted
                ? JobTransition(state: .submitted, event: .submitted, details: ["notary": notary]) : nil
        case .proofSaved(let notary, .failed, let error, _):
            return state == .failed
                ? nil : JobTransition(state: .failed, event: .failed, reason: "\(notary): \(error ?? "notarization failed")")
        case .proofSaved(_, .confirmed, _, let confirmed):
            guard state < .confirmed, Set(rule.notary).isSubset(of: confirmed) else { return nil }
            return JobTransition(state: .confirmed, event: .confirmed, details: ["notaries": rule.notary.joined(separator: ",")],
                                 jobs: [JobSpec(.certificate(rule: rule.name))])

        case .certified(let count):
            return JobTransition(state: rule.archive == nil ? finalState : .certified, event: .certified,
                                 details: ["certificates": String(count)], jobs: rule.archive == nil ? [] : jobsForArchive)
        case .archived(let details) where state == finalState:
            // Another rule's copy of content whose own pipeline already finished (queued by that
            // rule's after-action): recorded, without moving the item back a stage.
            return JobTransition(state: nil, event: .archived, details: details.merging(["rule": rule.name]) { a, _ in a })
        case .archived(let details):
            let jobs = rule.share == nil ? [] : [JobSpec(.share(rule: rule.name))]
            return JobTransition(state: rule.share == nil ? finalState : .archived, event: .archived, details: details, jobs: jobs)
        case .shared(let details):
            return JobTransition(state: finalState, event: .shared, details: details)
        }
    }

    /// One archive job per item and account (so that another rule's account gets its own).
    var jobsForArchive: [JobSpec] {
        [JobSpec(.archive(rule: rule.name), scope: rule.archive.map { "account:" + $0 })]
    }
}
