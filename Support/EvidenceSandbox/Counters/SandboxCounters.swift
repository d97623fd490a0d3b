import Foundation

/// What the sandbox has seen since start (or the last reset), so tests can assert
/// "submitted exactly once" and "the client backed off" without parsing logs.
public final class SandboxCounters: @unchecked Sendable {
    /// A consistent copy of the counters.
    public struct Snapshot: Sendable, Equatable {
        /// Reports created (201) per report hash.
        public var submissionsByHash: [String: Int]
        /// Requests answered or dropped, excluding the `/_sandbox/` control routes.
        public var requests: Int
        /// Injected 500/502/503 answers.
        public var faults5xx: Int
        /// 429 answers from the rate limiter.
        public var faults429: Int
        /// Connections closed without a response.
        public var dropped: Int
        /// Requests held for a latency spike.
        public var spikes: Int = 0
        /// Files stored by the emulated providers, per `provider:/remote/path` (a count above
        /// 1 means the same path was written twice: a duplicate upload).
        public var uploadsByPath: [String: Int] = [:]
        /// Time-stamp tokens the TSA issued (granted replies), per hex imprint it stamped.
        public var timestampsByImprint: [String: Int] = [:]
    }

    private let lock = NSLock()
    private var value = Snapshot(submissionsByHash: [:], requests: 0, faults5xx: 0, faults429: 0, dropped: 0)

    public init() {}

    public var snapshot: Snapshot {
        lock.lock()
        defer { lock.unlock() }
        return value
    }

    func update(_ change: (inout Snapshot) -> Void) {
        lock.lock()
        change(&value)
        lock.unlock()
    }

    public func recordRequest() { update { $0.requests += 1 } }
    public func recordSubmission(hash: String) { update { $0.submissionsByHash[hash, default: 0] += 1 } }
    public func recordServerError() { update { $0.faults5xx += 1 } }
    public func recordThrottle() { update { $0.faults429 += 1 } }
    public func recordDrop() { update { $0.dropped += 1 } }
    public func recordSpike() { update { $0.spikes += 1 } }
    /// A provider emulation stored a file (new or replaced) at `path` (`/`-rooted).
    public func recordUpload(provider: String, path: String) { update { $0.uploadsByPath["\(provider):\(path)", default: 0] += 1 } }

    public func recordTimestamp(imprint: String) { update { $0.timestampsByImprint[imprint, default: 0] += 1 } }

    /// Back to zero.
    public func reset() {
        update { $0 = Snapshot(submissionsByHash: [:], requests: 0, faults5xx: 0, faults429: 0, dropped: 0) }
    }
}
