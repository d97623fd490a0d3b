import EvidenceConfig
import EvidenceCore

/// The job kinds of the pipeline, and where a rule's items end.
public enum JobKind {
    /// Re-hash the stored object after ingest; move the item to its next state.
    public static let verify = "verify"
    /// The rule's `after` action (move/delete) on one source, once the item is final.
    public static let afterAction = "after-action"
}

/// What happens to items of a rule, stage by stage.
public struct PipelinePlan: Sendable {
    public let rule: WatchRule

    public init(rule: WatchRule) { self.rule = rule }

    /// The state an item of this rule is in when all work for it is done. Until notarization
    /// and archiving are wired in, a rule's items end once ingested and re-verified.
    public var finalState: ItemState { .done }

    /// Whether work remains after verification (notary or archive configured).
    public var hasLaterStages: Bool { !rule.notary.isEmpty || rule.archive != nil }

    public var jobsForNewItem: [JobSpec] {
        [JobSpec(kind: JobKind.verify, payload: ["rule": rule.name])]
    }

    public var jobsForNewSource: [JobSpec] {
        switch rule.after {
        case .keep: return []
        case .delete: return [JobSpec(kind: JobKind.afterAction, payload: ["rule": rule.name, "action": "delete"], maxAttempts: 20)]
        case .move(let dir): return [JobSpec(kind: JobKind.afterAction, payload: ["rule": rule.name, "action": "move", "to": dir], maxAttempts: 20)]
        }
    }
}
