import Foundation

/// One piece of evidence: one content, one SHA-256, however many times and names it was seen under.
public struct Item: Codable, Sendable, Equatable, Identifiable {
    public var id: Int64
    public var sha256: SHA256Digest
    public var size: Int64
    public var state: ItemState
    /// Why the item is in its state (a failure reason, a notary's answer); nil when unremarkable.
    public var stateReason: String?
    public var media: MediaInfo?
    /// When the content was recorded: media `creation_time`, else the first source's mtime.
    public var dateTaken: Date?
    public var createdAt: Date
    public var updatedAt: Date
    /// The item taken later from the same path under the same rule, once that path's content
    /// changed (a file still growing, or replaced): this one stays stored, notarized and listed,
    /// and its archive and share are skipped if they had not started. nil: the newest version.
    public var supersededBy: Int64?

    public init(id: Int64, sha256: SHA256Digest, size: Int64, state: ItemState, stateReason: String? = nil,
                media: MediaInfo? = nil, dateTaken: Date? = nil, createdAt: Date, updatedAt: Date, supersededBy: Int64? = nil) {
        self.id = id; self.sha256 = sha256; self.size = size; self.state = state; self.stateReason = stateReason
        self.media = media; self.dateTaken = dateTaken; self.createdAt = createdAt; self.updatedAt = updatedAt
        self.supersededBy = supersededBy
    }

    /// A 0-byte file: taken (it is what the device wrote) and flagged wherever it is shown.
    public var isEmpty: Bool { size == 0 }

    /// The state as shown to people: "superseded by #N" for an earlier version, with the
    /// empty flag; the lifecycle state otherwise.
    public var stateLabel: String {
        var label = supersededBy.map { "superseded by #\($0)" } ?? state.rawValue
        if isEmpty { label += " (empty)" }
        return label
    }
}

/// A file the item's content was found as: one per distinct (path, file version).
public struct SourceSighting: Codable, Sendable, Equatable {
    public var id: Int64
    public var itemID: Int64
    public var path: String
    public var name: String
    public var rule: String?
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var mtime: Date
    public var mtimeNanos: Int64
    public var seenAt: Date

    public init(id: Int64, itemID: Int64, path: String, name: String, rule: String?, device: UInt64, inode: UInt64,
                size: Int64, mtime: Date, mtimeNanos: Int64, seenAt: Date) {
        self.id = id; self.itemID = itemID; self.path = path; self.name = name; self.rule = rule
        self.device = device; self.inode = inode; self.size = size; self.mtime = mtime
        self.mtimeNanos = mtimeNanos; self.seenAt = seenAt
    }
}

/// A source that could not be taken in: not stored, kept on record with the reason.
public struct QuarantineEntry: Codable, Sendable, Equatable {
    public var id: Int64
    public var path: String
    public var rule: String?
    public var reason: String
    public var at: Date
    /// Set once an operator retried it or it was later ingested fine.
    public var resolved: Bool

    public init(id: Int64, path: String, rule: String?, reason: String, at: Date, resolved: Bool) {
        self.id = id; self.path = path; self.rule = rule; self.reason = reason; self.at = at; self.resolved = resolved
    }
}

/// One entry of the append-only, hash-chained custody log.
public struct CustodyEvent: Codable, Sendable, Equatable {
    public var seq: Int64
    public var itemID: Int64?
    /// ISO 8601 UTC with milliseconds, exactly as hashed.
    public var at: String
    /// As written in the log (any kind: a log from another version stays readable); see `is(_:)`.
    public var kind: String
    public var actor: String
    /// Canonical JSON text of the event's details, exactly as hashed.
    public var details: String
    public var prevHash: String
    public var hash: String

    public init(seq: Int64, itemID: Int64?, at: String, kind: String, actor: String, details: String,
                prevHash: String, hash: String) {
        self.seq = seq; self.itemID = itemID; self.at = at; self.kind = kind; self.actor = actor
        self.details = details; self.prevHash = prevHash; self.hash = hash
    }

    /// The bytes the event hash covers, after the previous hash:
    /// `evidence-custody-v1\n<seq>\n<at>\n<item or ->\n<kind>\n<actor>\n<details>`.
    public var canonicalBody: String {
        "evidence-custody-v1\n\(seq)\n\(at)\n\(itemID.map(String.init) ?? "-")\n\(kind)\n\(actor)\n\(details)"
    }

    /// `hash = SHA-256(prevHash ‖ "\n" ‖ canonicalBody)`, both hex lowercase.
    public static func chainInput(prevHash: String, body: String) -> Data {
        Data((prevHash + "\n" + body).utf8)
    }

    /// The details as string fields (every event this tool writes has only strings); empty when
    /// they are not such an object.
    public var fields: [String: String] {
        FlatStringJSON.parse(details) ?? (try? JSONDecoder().decode([String: String].self, from: Data(details.utf8))) ?? [:]
    }

    /// The previous hash of the first event.
    public static let genesis = String(repeating: "0", count: 64)
}

/// Counts for `status`.
public struct CatalogSummary: Codable, Sendable, Equatable {
    public var items: Int
    public var bytes: Int64
    /// Items per state; an item superseded by a later version counts as `superseded`
    /// (`Self.superseded`), whatever its lifecycle state.
    public var byState: [String: Int]
    /// Items of 0 bytes (also counted in their state).
    public var empty: Int = 0
    public var quarantined: Int
    public var sources: Int
    public var events: Int
    public var byRule: [String: [String: Int]]
    /// Creation time of the oldest item still on its way (not done, failed or quarantined).
    public var oldestPending: Date?
    /// Per node (several nodes on one catalog): items each node took in first (from the actor
    /// of their `ingested` event; `cli` for `evidence ingest`), and jobs each is running now.
    public var takenInByNode: [String: Int] = [:]
    public var runningByNode: [String: Int] = [:]
    /// The `byState` key of superseded items.
    public static let superseded = "superseded"
    public init(items: Int = 0, bytes: Int64 = 0, byState: [String: Int] = [:], quarantined: Int = 0,
                sources: Int = 0, events: Int = 0, byRule: [String: [String: Int]] = [:]) {
        self.items = items; self.bytes = bytes; self.byState = byState; self.quarantined = quarantined
        self.sources = sources; self.events = events; self.byRule = byRule
    }
}

/// Node names inside actors and lease owners.
public enum NodeName {
    /// `run:NODE:PID` → NODE; another actor (`cli:USER`) → its first part.
    public static func of(actor: String) -> String {
        let parts = actor.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count >= 3, parts[0] == "run" { return String(parts[1]) }
        return String(parts.first ?? "")
    }

    /// `ROLE@NODE:PID/NONCE` → NODE; nil for another form.
    public static func of(leaseOwner owner: String) -> String? {
        guard let at = owner.firstIndex(of: "@") else { return nil }
        let rest = owner[owner.index(after: at)...]
        let nodeAndPid = rest.split(separator: "/", maxSplits: 1).first.map(String.init) ?? String(rest)
        guard let colon = nodeAndPid.lastIndex(of: ":") else { return nil }
        return String(nodeAndPid[..<colon])
    }
}

extension CustodyEvent {
    /// Whether this event is of `kind`.
    public func `is`(_ kind: CustodyEventKind) -> Bool { self.kind == kind.rawValue }
}
