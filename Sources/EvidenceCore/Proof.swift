import Foundation

/// How a notary proves: a QED report (anchored in a blockchain) or an RFC 3161 time-stamp token.
/// Raw values are stored in the catalog and shown in `show --json`: never rename them.
public enum ProofKind: String, Codable, Sendable, CaseIterable {
    case qed
    case rfc3161
    /// An RFC 4998 evidence record: the item's reduced hash tree in a batch and the batch's
    /// RFC 3161 token over the tree's root (an `rfc3161` notary with `batch` > 0).
    case rfc4998
    /// An OpenTimestamps proof (`.ots`): the item's way through its batch's tree to calendars'
    /// commitments and on to a Bitcoin block header's merkle root.
    case opentimestamps

    /// Proven by an RFC 3161 token, alone or inside an evidence record.
    public var isTimestamp: Bool { self == .rfc3161 || self == .rfc4998 }
    /// What the proof is, in words (disclosure indexes, declarations, the portal).
    public var label: String {
        switch self {
        case .qed: "QED report"
        case .rfc3161: "RFC 3161 time-stamp"
        case .rfc4998: "RFC 4998 evidence record"
        case .opentimestamps: "OpenTimestamps proof (Bitcoin)"
        }
    }

    /// What a proof's `remoteID` is, in words, in `state`.
    public func remoteIDLabel(pending: Bool) -> String {
        switch self {
        case .qed: "report"
        case .rfc3161, .rfc4998: pending ? "batch" : "serial"
        case .opentimestamps: pending ? "batch" : "block"
        }
    }

    /// The receipt's file extension: `json`, `tsr` (TimeStampResp) or `ers` (EvidenceRecord DER).
    public var receiptExtension: String {
        switch self {
        case .qed: "json"
        case .rfc3161: "tsr"
        case .rfc4998: "ers"
        case .opentimestamps: "ots"
        }
    }
}

/// What one archived file of an item is. Raw values are stored in the catalog: never rename them.
public enum ArchiveRole: String, Codable, Sendable, CaseIterable {
    /// The evidence file itself.
    case original
    /// A notary's receipt: the QED report JSON or the `.tsr` token.
    case receipt
    /// A certificate PDF (ours or the notary's).
    case certificate
    /// The manifest listing the item's archived files.
    case manifest
}

/// What one notary said about one item. Kept per (item, notary name of the config).
public struct Proof: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable, CaseIterable {
        /// Submitted; the notary has not confirmed yet (QED may take hours).
        case pending
        case confirmed
        /// The notary said it failed; `retry` submits again.
        case failed
    }

    public var itemID: Int64
    /// The `[notaries.NAME]` of the config that produced it.
    public var notary: String
    public var kind: ProofKind
    public var state: State
    /// QED report slug; TSA serial number (hex).
    public var remoteID: String?
    /// Store object holding the receipt: the confirmed QED report JSON, or the `.tsr` token.
    public var receipt: SHA256Digest?
    public var txHash: String?
    public var blockHeight: Int64?
    public var network: String?
    /// Where a person can look the proof up (blockchain explorer) or the TSA that signed it.
    public var link: String?
    /// Block time, or the TSA's genTime.
    public var provenAt: Date?
    public var error: String?
    public var submittedAt: Date?
    public var updatedAt: Date

    public init(itemID: Int64, notary: String, kind: ProofKind, state: State, remoteID: String? = nil,
                receipt: SHA256Digest? = nil, txHash: String? = nil, blockHeight: Int64? = nil, network: String? = nil,
                link: String? = nil, provenAt: Date? = nil, error: String? = nil, submittedAt: Date? = nil,
                updatedAt: Date = Date()) {
        self.itemID = itemID; self.notary = notary; self.kind = kind; self.state = state; self.remoteID = remoteID
        self.receipt = receipt; self.txHash = txHash; self.blockHeight = blockHeight; self.network = network
        self.link = link; self.provenAt = provenAt; self.error = error; self.submittedAt = submittedAt
        self.updatedAt = updatedAt
    }
}

/// A certificate PDF kept in the store for an item: the notary's own (`qed`) or the one
/// `evidence` renders (`evidence`).
public struct Certificate: Codable, Sendable, Equatable {
    public var itemID: Int64
    /// `evidence` for ours, else the notary's name in the config.
    public var origin: String
    public var sha256: SHA256Digest
    public var size: Int64
    public var createdAt: Date

    public init(itemID: Int64, origin: String, sha256: SHA256Digest, size: Int64, createdAt: Date = Date()) {
        self.itemID = itemID; self.origin = origin; self.sha256 = sha256; self.size = size; self.createdAt = createdAt
    }
}

/// One file of an item kept at an archive account, verified against the provider after upload.
public struct ArchivedFile: Codable, Sendable, Equatable {
    public var itemID: Int64
    public var account: String
    public var remotePath: String
    public var role: ArchiveRole
    /// Store object the file came from.
    public var sha256: SHA256Digest
    public var size: Int64
    /// How the upload was verified: the provider's digest (`sha1:<hex>`…), or `read-back`.
    public var verifiedBy: String
    public var remoteID: String?
    public var verifiedAt: Date

    public init(itemID: Int64, account: String, remotePath: String, role: ArchiveRole, sha256: SHA256Digest, size: Int64,
                verifiedBy: String, remoteID: String? = nil, verifiedAt: Date = Date()) {
        self.itemID = itemID; self.account = account; self.remotePath = remotePath; self.role = role
        self.sha256 = sha256; self.size = size; self.verifiedBy = verifiedBy; self.remoteID = remoteID
        self.verifiedAt = verifiedAt
    }
}

/// The share link of an item's archived original.
public struct SharedLink: Codable, Sendable, Equatable {
    public var itemID: Int64
    public var account: String
    public var remotePath: String
    public var url: String
    public var expires: Date?
    public var passwordProtected: Bool
    /// Settings the provider refused, and why (the link was made without them).
    public var fallback: String?
    public var createdAt: Date

    public init(itemID: Int64, account: String, remotePath: String, url: String, expires: Date?, passwordProtected: Bool,
                fallback: String?, createdAt: Date = Date()) {
        self.itemID = itemID; self.account = account; self.remotePath = remotePath; self.url = url
        self.expires = expires; self.passwordProtected = passwordProtected; self.fallback = fallback; self.createdAt = createdAt
    }
}
