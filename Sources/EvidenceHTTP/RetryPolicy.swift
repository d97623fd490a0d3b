import EvidenceCore
import Foundation

/// How a caller judges an answer; the one retry loop (`HTTPClient.execute`) does the rest.
public enum Classification: Sendable {
    case success
    /// Try again; `retryAfter` (seconds) overrides the response's own `Retry-After` when set.
    case retryable(retryAfter: Double?)
    case permanent
}

/// What `HTTPClient.execute`'s `beforeRetry` asks the loop to do next.
public enum Resend: Sendable {
    /// Send the same request again (after the loop's wait).
    case same
    /// Send this request instead (after the loop's wait).
    case send(HTTPRequest)
    /// Send nothing more: the loop throws the last failure.
    case stop
}

/// How often and how soon the HTTP client tries again: `Backoff` (EvidenceCore's one formula)
/// with HTTP's own parameters, never shorter than what the server asked for.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included. 1 means no retry.
    public var maxAttempts = 5
    /// Seconds before the first retry (before jitter).
    public var base = 0.5
    /// Longest backoff (before jitter).
    public var cap = 30.0
    /// A `Retry-After` longer than this is not slept through: the error is thrown at once, with
    /// `retryAfter` set, so a job queue can reschedule instead of holding a worker.
    public var maxRetryAfter = 300.0

    public init(maxAttempts: Int = 5, base: Double = 0.5, cap: Double = 30.0, maxRetryAfter: Double = 300.0) {
        self.maxAttempts = maxAttempts
        self.base = base
        self.cap = cap
        self.maxRetryAfter = maxRetryAfter
    }

    /// No retries at all.
    public static let never = RetryPolicy(maxAttempts: 1)

    /// The back-off between attempts, from `base` and `cap`.
    public var backoff: Backoff { Backoff(base: base, cap: cap) }

    /// Seconds to wait after failed attempt `attempt` (1-based): `backoff`'s delay, but never
    /// less than `retryAfter`.
    public func delay(afterAttempt attempt: Int, retryAfter: Double? = nil,
                      jitter: Double = Double.random(in: 0.5..<1.5)) -> Double {
        max(backoff.delay(afterAttempt: attempt, jitter: jitter), retryAfter ?? 0)
    }
}
