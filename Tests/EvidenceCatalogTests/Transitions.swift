import EvidenceCatalog
import EvidenceCore
import Foundation

// The catalog never changes an item's state on its own: it applies a transition that comes with
// a job's completion, a job giving up, a proof or a retry. Tests that need an item in some state
// take those same paths, with the transition the lifecycle (EvidencePipeline, not imported
// here) would return.

/// Applies `transition` to an item as the queue does: with the completion of a job of the item
/// (`completeJob`), or, given `failing`, with that job giving up (`failJob`'s `onGiveUp`).
func apply(_ transition: JobTransition, to itemID: Int64, in c: any Catalog, failing error: String? = nil) throws {
    let job = try c.enqueue(JobSpec(.verify(rule: "test")), itemID: itemID, dedupeKey: "test:\(UUID().uuidString)")
    guard let claimed = try c.claimJob(id: job.id, owner: "test", lease: 60, now: Date()) else {
        throw CatalogError.notFound("job \(job.id) could not be claimed")
    }
    if let error {
        try c.failJob(claimed.id, owner: "test", error: error, retryAt: nil, onGiveUp: transition)
    } else {
        try c.completeJob(claimed.id, owner: "test", transition: transition)
    }
}

/// What the lifecycle answers a retry (`ItemLifecycle.Event.retried`): a failed item goes back
/// to the state it failed from, `ingested` when none is recorded; any other item stays.
let lifecycleRetry: @Sendable (ItemState, ItemState?) -> JobTransition? = { state, failedFrom in
    state == .failed ? JobTransition(state: failedFrom ?? .ingested, event: .retry) : nil
}
