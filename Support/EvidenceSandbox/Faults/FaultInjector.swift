import Foundation

/// Decides, per request, which fault (if any) the sandbox injects. Every decision draws the
/// same number of values from the seeded random source, so with `--seed` the n-th request
/// always meets the same fate, whatever happened to the requests before it.
public final class FaultInjector: Sendable {
    public enum Action: Equatable, Sendable {
        case pass
        /// Close the connection without answering.
        case drop
        /// 429 with `Retry-After: retryAfter`.
        case throttle(retryAfter: Int)
        /// 500, 502 or 503.
        case serverError(status: Int)
    }

    public struct Decision: Equatable, Sendable {
        /// Seconds to wait before acting.
        public var latency: Double
        public var action: Action
    }

    let failRate: Double
    let dropRate: Double
    let spikeRate: Double
    let spike: Double
    let retryAfter: Int
    let latency: LatencySpec
    let random: SandboxRandom
    let rateLimiter: RateLimiter
    let counters: SandboxCounters

    public init(options: SandboxOptions, random: SandboxRandom, counters: SandboxCounters) {
        self.failRate = options.failRate
        self.dropRate = options.dropRate
        self.spikeRate = options.spikeRate
        self.spike = options.spike
        self.retryAfter = max(1, options.retryAfter)
        self.latency = options.latency
        self.random = random
        self.rateLimiter = RateLimiter(limit: options.rateLimit)
        self.counters = counters
    }

    /// Which fault the next request from `client` gets; counts it in the counters.
    public func decide(client: String) -> Decision {
        let latencyDraw = random.unit()
        let dropDraw = random.unit()
        let failDraw = random.unit()
        let statusDraw = random.int(in: 0..<3)
        // Drawn only when spikes are on, so runs without them keep their seeded sequence.
        let spikeDraw = spikeRate > 0 ? random.unit() : 1
        var delay = latency.isZero ? 0 : latency.seconds(unit: latencyDraw)
        if spikeDraw < spikeRate {
            counters.recordSpike()
            delay += spike
        }

        if dropDraw < dropRate {
            counters.recordDrop()
            return Decision(latency: delay, action: .drop)
        }
        if case .throttled(let wait) = rateLimiter.check(client: client) {
            counters.recordThrottle()
            return Decision(latency: delay, action: .throttle(retryAfter: max(retryAfter, wait)))
        }
        if failDraw < failRate {
            counters.recordServerError()
            return Decision(latency: delay, action: .serverError(status: [500, 502, 503][statusDraw]))
        }
        return Decision(latency: delay, action: .pass)
    }

    /// Forgets the rate limiter's windows (the counters are reset by their owner).
    public func reset() {
        rateLimiter.reset()
    }
}
