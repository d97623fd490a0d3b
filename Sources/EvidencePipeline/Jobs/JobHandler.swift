import EvidenceCatalog
import EvidenceCore
import Foundation

/// One kind of durable work. Handlers must be idempotent: a crash after the work but before
/// `completeJob` runs the job again.
public protocol JobHandler: Sendable {
    var kind: JobKind { get }
    func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome
}

public enum JobOutcome: Sendable {
    /// Done; optionally move the item on, in the same transaction as the job's completion.
    case done(JobTransition?)
    /// A precondition is not met yet (e.g. the item has not reached its final stage): try
    /// again at this time without counting an attempt.
    case notYet(until: Date, reason: String)
}

/// A failed attempt. `retryable` failures are retried with backoff (or after `retryAfter`
/// seconds when the remote said so); permanent ones fail the job and apply `onGiveUp`.
public struct JobError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var retryable: Bool
    public var retryAfter: Double?
    public var onGiveUp: JobTransition?

    public init(_ message: String, retryable: Bool, retryAfter: Double? = nil, onGiveUp: JobTransition? = nil) {
        self.message = message; self.retryable = retryable; self.retryAfter = retryAfter; self.onGiveUp = onGiveUp
    }

    public var description: String { message }
}
