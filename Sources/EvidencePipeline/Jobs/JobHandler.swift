import EvidenceArchive
import EvidenceCatalog
import EvidenceCore
import EvidenceNotary
import Foundation

/// One kind of durable work. Handlers must be idempotent: a crash after the work but before
/// `completeJob` runs the job again.
public protocol JobHandler: Sendable {
    var kind: JobKind { get }
    func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome
    /// The account or notary (`CredentialPause.scope`) whose credentials `job` uses: while it
    /// is paused, the job waits without being run. nil: none.
    func pauseScope(of job: QueuedJob) -> String?
}

extension JobHandler {
    public func pauseScope(of job: QueuedJob) -> String? { nil }
}

public enum JobOutcome: Sendable {
    /// Done; optionally move the item on, in the same transaction as the job's completion.
    case done(JobTransition?)
    /// A precondition is not met yet (e.g. the item has not reached its final stage): try
    /// again at this time without counting an attempt.
    ///
    /// `unless`, when given, is asked once the job is back in the queue: true (what it waits
    /// for happened meanwhile) makes it due at once. Another job that finishes the awaited work
    /// and then wakes this one misses it while it runs; the question, asked after the release,
    /// closes that window: whatever happened before the release is seen by the question, and
    /// whatever happens after it finds the job queued.
    case notYet(until: Date, reason: String, unless: (@Sendable () -> Bool)? = nil)
}

/// A failed attempt. `retryable` failures are retried with backoff (or after `retryAfter`
/// seconds when the remote said so); permanent ones fail the job and apply `onGiveUp`.
public struct JobError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var retryable: Bool
    public var retryAfter: Double?
    public var onGiveUp: JobTransition?
    /// The service refused the credentials of this account or notary: the job waits (no attempt
    /// counted) and the account or notary pauses (`CredentialPause`), instead of a retry.
    public var pause: (kind: CredentialPause.Kind, name: String, fix: String)?
    /// The service could not be reached or did not serve (no answer, a timeout, 429, 5xx, an
    /// answer that cannot be read): retried without limit, its back-off growing with the
    /// outage up to the cap, never failing the item.
    public var unreachable = false

    public init(_ message: String, retryable: Bool, retryAfter: Double? = nil, onGiveUp: JobTransition? = nil) {
        self.message = message; self.retryable = retryable; self.retryAfter = retryAfter; self.onGiveUp = onGiveUp
    }

    /// A provider's error for `account`: a refusal of its credentials pauses it.
    public init(_ e: ArchiveError, account: String, retryable: Bool? = nil) {
        self.init(e.message, retryable: retryable ?? e.retryable, retryAfter: e.retryAfter)
        if e.credentialsRefused { pause = (.account, account, CredentialPause.accountFix(account)) }
        unreachable = e.kind == .transient && Self.unavailable(e.httpStatus)
    }

    /// A notary's error: a refused API key pauses it.
    public init(_ e: NotaryError, notary: String) {
        self.init(e.message, retryable: e.retryable, retryAfter: e.retryAfter)
        if e.credentialsRefused { pause = (.notary, notary, CredentialPause.notaryFix(notary)) }
        unreachable = e.retryable && Self.unavailable(e.httpStatus)
    }

    public var description: String { message }

    /// No answer (nil), too many requests, or a server error: the service is not there for now.
    static func unavailable(_ status: Int?) -> Bool { status.map { $0 == 429 || $0 >= 500 } ?? true }
}
