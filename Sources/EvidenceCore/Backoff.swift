import Foundation

/// Exponential back-off with jitter, the one formula for every retry in evidence: a job's next
/// attempt (`JobRunner`: 2 s doubling, capped at 600 s) and an HTTP request's (`RetryPolicy`:
/// 0.5 s doubling, capped at 30 s). The delay after failed attempt `n` (1-based) is
/// `min(cap, base·2^(n-1)) · jitter`, jitter in [0.5, 1.5) so that many clients failing
/// together do not come back together.
public struct Backoff: Sendable, Equatable {
    /// Seconds before the first retry (before jitter).
    public var base: Double
    /// Longest delay (before jitter).
    public var cap: Double

    public init(base: Double = 2, cap: Double = 600) { self.base = base; self.cap = cap }

    /// Seconds to wait after failed attempt `attempt` (1-based; 0 or less counts as 1).
    public func delay(afterAttempt attempt: Int, jitter: Double = Double.random(in: 0.5..<1.5)) -> Double {
        // 2^62 already exceeds every cap; a larger exponent would only overflow to infinity.
        let exponent = Double(max(0, min(attempt - 1, 62)))
        return min(cap, base * pow(2, exponent)) * jitter
    }
}
