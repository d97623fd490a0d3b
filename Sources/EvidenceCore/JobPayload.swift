/// The kinds of durable work. Raw values are stored in the catalog's `job.kind`: never rename them.
public enum JobKind: String, Codable, Sendable, CaseIterable {
    /// Re-hash the stored object after ingest; move the item to its next state.
    case verify
    /// Submit to one notary of the rule and poll until it confirms.
    case notarize
    /// Fetch the notaries' certificates and render our own, once every notary confirmed.
    case certificate
    /// Copy the original, receipts, certificates and a manifest to the rule's archive account, verified.
    case archive
    /// Create or reuse the share link of the archived original.
    case share
    /// The rule's `after` action (move/delete) on one source, once the item is final.
    case afterAction = "after-action"
    /// Copy one custody anchor to the `[custody] anchor_archive` account (no item).
    case anchorCopy = "anchor-copy"
    /// Time-stamp one window of a batching rfc3161 notary: the members' hash tree, one token over
    /// its root, an evidence record per member (no item).
    case stamp

    /// Attempts a job of this kind gets before it fails for good (`evidence retry` gives it fresh
    /// ones): local work few, work that waits on a notary or a provider more, an after-action
    /// (which waits on its rule's stages) and an anchor copy (which must eventually arrive) most.
    public var maxAttempts: Int {
        switch self {
        case .verify, .certificate: 8
        case .notarize, .archive, .share: 12
        case .afterAction: 20
        case .anchorCopy: 50
        case .stamp: 12
        }
    }
}

/// What an after-action job does with its source once the item is final and the source's own
/// rule has its evidence (`after = "delete"` / `"move:DIR"`). `keep`: nothing; it is the job of a
/// duplicate under a rule that keeps its files, and only gets that rule's missing stages done.
public enum SourceAction: Sendable, Equatable {
    case keep
    case delete
    case move(to: String)
}

/// One source file an after-action applies to: the catalog fills it in when it records the source.
public struct SourceRef: Sendable, Equatable {
    public var id: Int64
    public var path: String

    public init(id: Int64, path: String) { self.id = id; self.path = path }
}

/// What a job is to do: one case per job kind, with its typed parameters.
///
/// Stored in the catalog as the flat string map it has always had (`{"rule": …, "notary": …}`),
/// so catalogs written before this type read unchanged; `init(kind:fields:)` refuses a map
/// that lacks a field its kind needs, naming it.
public enum JobPayload: Sendable, Equatable, Codable {
    case verify(rule: String)
    case notarize(rule: String, notary: String)
    case certificate(rule: String)
    case archive(rule: String)
    case share(rule: String)
    /// `source` is nil until the catalog records the source the action applies to.
    case afterAction(rule: String, action: SourceAction, source: SourceRef?)
    case anchorCopy(file: String, account: String)
    /// `window`: the batch's key, `NOTARY@START-MILLISECONDS`, which its members' pending proofs hold.
    case stamp(notary: String, window: String)

    public var kind: JobKind {
        switch self {
        case .verify: .verify
        case .notarize: .notarize
        case .certificate: .certificate
        case .archive: .archive
        case .share: .share
        case .afterAction: .afterAction
        case .anchorCopy: .anchorCopy
        case .stamp: .stamp
        }
    }

    /// The watch rule whose item this job works for (nil for anchor copies).
    public var rule: String? {
        switch self {
        case .verify(let rule), .notarize(let rule, _), .certificate(let rule), .archive(let rule), .share(let rule),
             .afterAction(let rule, _, _):
            rule
        case .anchorCopy, .stamp:
            nil
        }
    }

    /// The stored form.
    public var fields: [String: String] {
        switch self {
        case .verify(let rule), .certificate(let rule), .archive(let rule), .share(let rule):
            return ["rule": rule]
        case .notarize(let rule, let notary):
            return ["rule": rule, "notary": notary]
        case .afterAction(let rule, let action, let source):
            var f = ["rule": rule]
            switch action {
            case .keep: f["action"] = "keep"
            case .delete: f["action"] = "delete"
            case .move(let to): f["action"] = "move"; f["to"] = to
            }
            if let source { f["source_id"] = String(source.id); f["path"] = source.path }
            return f
        case .anchorCopy(let file, let account):
            return ["file": file, "account": account]
        case .stamp(let notary, let window):
            return ["notary": notary, "window": window]
        }
    }

    /// Reads the stored form of a job of `kind`.
    public init(kind: JobKind, fields f: [String: String]) throws(JobPayloadError) {
        func need(_ key: String) throws(JobPayloadError) -> String {
            guard let v = f[key] else { throw JobPayloadError(kind: kind, problem: "no \"\(key)\"") }
            return v
        }
        switch kind {
        case .verify: self = .verify(rule: try need("rule"))
        case .notarize: self = .notarize(rule: try need("rule"), notary: try need("notary"))
        case .certificate: self = .certificate(rule: try need("rule"))
        case .archive: self = .archive(rule: try need("rule"))
        case .share: self = .share(rule: try need("rule"))
        case .anchorCopy: self = .anchorCopy(file: try need("file"), account: try need("account"))
        case .stamp: self = .stamp(notary: try need("notary"), window: try need("window"))
        case .afterAction:
            let action: SourceAction
            switch try need("action") {
            case "keep": action = .keep
            case "delete": action = .delete
            case "move": action = .move(to: try need("to"))
            case let other: throw JobPayloadError(kind: kind, problem: "unknown action \"\(other)\"")
            }
            var source: SourceRef?
            if let id = f["source_id"] {
                guard let number = Int64(id) else { throw JobPayloadError(kind: kind, problem: "source_id \"\(id)\" is not a number") }
                source = SourceRef(id: number, path: try need("path"))
            }
            self = .afterAction(rule: try need("rule"), action: action, source: source)
        }
    }

    private enum CodingKeys: String, CodingKey { case kind, fields }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(kind: try c.decode(JobKind.self, forKey: .kind), fields: try c.decode([String: String].self, forKey: .fields))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(fields, forKey: .fields)
    }
}

/// A stored job whose parameters cannot be read (a catalog written by hand or by a newer version).
public struct JobPayloadError: Error, CustomStringConvertible, Sendable, Equatable {
    public var kind: JobKind
    public var problem: String

    public init(kind: JobKind, problem: String) { self.kind = kind; self.problem = problem }

    public var description: String { "\(kind.rawValue) job parameters: \(problem)" }
}
