import Foundation

/// A unit of durable work in the catalog's queue (verify, after-action; later submit, poll,
/// certificate, upload, share). Claimed with a lease; retried with backoff.
public struct QueuedJob: Codable, Sendable, Equatable, Identifiable {
    public enum State: String, Codable, Sendable, CaseIterable {
        /// Waiting for `nextRunAt`.
        case queued
        /// Leased by a runner until `leaseExpiresAt`.
        case running
        case done
        /// Gave up after `maxAttempts`; `retry` re-queues.
        case failed
    }

    public var id: Int64
    public var kind: String
    public var itemID: Int64?
    public var state: State
    public var attempts: Int
    public var maxAttempts: Int
    public var nextRunAt: Date
    public var leaseOwner: String?
    public var leaseExpiresAt: Date?
    public var lastError: String?
    /// Kind-specific parameters (rule name, source path, …) as canonical JSON.
    public var payload: [String: String]
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: Int64, kind: String, itemID: Int64?, state: State, attempts: Int, maxAttempts: Int, nextRunAt: Date,
                leaseOwner: String?, leaseExpiresAt: Date?, lastError: String?, payload: [String: String],
                createdAt: Date, updatedAt: Date) {
        self.id = id; self.kind = kind; self.itemID = itemID; self.state = state; self.attempts = attempts
        self.maxAttempts = maxAttempts; self.nextRunAt = nextRunAt; self.leaseOwner = leaseOwner
        self.leaseExpiresAt = leaseExpiresAt; self.lastError = lastError; self.payload = payload
        self.createdAt = createdAt; self.updatedAt = updatedAt
    }
}

/// A job to create.
public struct JobSpec: Sendable, Equatable {
    public var kind: String
    public var payload: [String: String]
    public var maxAttempts: Int
    public var runAt: Date?
    /// Tells apart jobs of one kind for one item (e.g. the notary's name): part of the
    /// dedupe key, so the same job for the same thing exists once.
    public var scope: String?

    public init(kind: String, payload: [String: String] = [:], maxAttempts: Int = 8, runAt: Date? = nil,
                scope: String? = nil) {
        self.kind = kind; self.payload = payload; self.maxAttempts = maxAttempts; self.runAt = runAt
        self.scope = scope
    }

    /// The dedupe key of this job for an item.
    public func itemKey(_ itemID: Int64) -> String {
        "\(kind):item:\(itemID)" + (scope.map { ":" + $0 } ?? "")
    }
}

/// Exponential backoff with jitter: base·2^(attempt-1), capped, times a factor in [0.5, 1.5).
public struct Backoff: Sendable, Equatable {
    public var base: Double
    public var cap: Double

    public init(base: Double = 2, cap: Double = 600) { self.base = base; self.cap = cap }

    public func delay(afterAttempt attempt: Int, jitter: Double = Double.random(in: 0.5..<1.5)) -> Double {
        let exp = base * pow(2, Double(max(0, attempt - 1)))
        return min(cap, exp) * jitter
    }
}
