import Foundation

/// A unit of durable work in the catalog's queue (see `JobKind`). Claimed with a lease;
/// retried with backoff.
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
    public var itemID: Int64?
    public var state: State
    public var attempts: Int
    public var maxAttempts: Int
    public var nextRunAt: Date
    public var leaseOwner: String?
    public var leaseExpiresAt: Date?
    public var lastError: String?
    /// What to do, with the kind's typed parameters.
    public var payload: JobPayload
    public var createdAt: Date
    public var updatedAt: Date

    public var kind: JobKind { payload.kind }

    public init(id: Int64, itemID: Int64?, state: State, attempts: Int, maxAttempts: Int, nextRunAt: Date,
                leaseOwner: String?, leaseExpiresAt: Date?, lastError: String?, payload: JobPayload,
                createdAt: Date, updatedAt: Date) {
        self.id = id; self.itemID = itemID; self.state = state; self.attempts = attempts
        self.maxAttempts = maxAttempts; self.nextRunAt = nextRunAt; self.leaseOwner = leaseOwner
        self.leaseExpiresAt = leaseExpiresAt; self.lastError = lastError; self.payload = payload
        self.createdAt = createdAt; self.updatedAt = updatedAt
    }

    // JSON (`show --json`, `status --json`): `kind` and the parameters as a flat `payload`
    // map, as before the payload was typed; operators' scripts read them.
    private enum CodingKeys: String, CodingKey {
        case id, kind, itemID, state, attempts, maxAttempts, nextRunAt, leaseOwner, leaseExpiresAt, lastError, payload
        case createdAt, updatedAt
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(Int64.self, forKey: .id)
        itemID = try c.decodeIfPresent(Int64.self, forKey: .itemID)
        state = try c.decode(State.self, forKey: .state)
        attempts = try c.decode(Int.self, forKey: .attempts)
        maxAttempts = try c.decode(Int.self, forKey: .maxAttempts)
        nextRunAt = try c.decode(Date.self, forKey: .nextRunAt)
        leaseOwner = try c.decodeIfPresent(String.self, forKey: .leaseOwner)
        leaseExpiresAt = try c.decodeIfPresent(Date.self, forKey: .leaseExpiresAt)
        lastError = try c.decodeIfPresent(String.self, forKey: .lastError)
        payload = try JobPayload(kind: try c.decode(JobKind.self, forKey: .kind),
                                 fields: try c.decode([String: String].self, forKey: .payload))
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        updatedAt = try c.decode(Date.self, forKey: .updatedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind, forKey: .kind)
        try c.encodeIfPresent(itemID, forKey: .itemID)
        try c.encode(state, forKey: .state)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(maxAttempts, forKey: .maxAttempts)
        try c.encode(nextRunAt, forKey: .nextRunAt)
        try c.encodeIfPresent(leaseOwner, forKey: .leaseOwner)
        try c.encodeIfPresent(leaseExpiresAt, forKey: .leaseExpiresAt)
        try c.encodeIfPresent(lastError, forKey: .lastError)
        try c.encode(payload.fields, forKey: .payload)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
    }
}

/// A job to create.
public struct JobSpec: Sendable, Equatable {
    public var payload: JobPayload
    public var maxAttempts: Int
    public var runAt: Date?
    /// Tells apart jobs of one kind for one item (e.g. the notary's name): part of the
    /// dedupe key, so the same job for the same thing exists once.
    public var scope: String?

    public var kind: JobKind { payload.kind }

    /// `maxAttempts` nil: the kind's own (`JobKind.maxAttempts`).
    public init(_ payload: JobPayload, maxAttempts: Int? = nil, runAt: Date? = nil, scope: String? = nil) {
        self.payload = payload; self.maxAttempts = maxAttempts ?? payload.kind.maxAttempts; self.runAt = runAt
        self.scope = scope
    }

    /// A job that waits for its item's transition to name it in `wake` (an after-action waits
    /// for `done`), instead of being claimed and put back again and again.
    public static func parked(_ payload: JobPayload, maxAttempts: Int? = nil, scope: String? = nil) -> JobSpec {
        JobSpec(payload, maxAttempts: maxAttempts, runAt: .distantFuture, scope: scope)
    }

    public var isParked: Bool { runAt == .distantFuture }

    /// The dedupe key of this job for an item.
    public func itemKey(_ itemID: Int64) -> String {
        "\(kind.rawValue):item:\(itemID)" + (scope.map { ":" + $0 } ?? "")
    }
}
