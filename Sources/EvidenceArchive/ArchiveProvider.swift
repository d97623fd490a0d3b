import EvidenceCore
import EvidenceStore
import Foundation

/// The digest a provider reports for stored files; uploads are verified against it.
public enum ProviderHashKind: String, Sendable, Codable, Equatable {
    case sha256, sha1, md5
    /// Dropbox's `content_hash`: SHA-256 of the SHA-256 digests of each 4 MiB block.
    case dropbox = "content_hash"
}

/// A file as the provider reports it.
public struct RemoteFile: Sendable, Equatable {
    /// Path below the account's root, `/`-separated, no leading slash.
    public var path: String
    public var size: Int64
    /// The provider's own digest (lowercase hex) of `hashKind`, when it reports one.
    public var hash: String?
    /// Provider id (Box/ShareFile item id, ownCloud file id), when there is one.
    public var id: String?

    public init(path: String, size: Int64, hash: String? = nil, id: String? = nil) {
        self.path = path; self.size = size; self.hash = hash; self.id = id
    }
}

/// What the rule's `[share]` asks for.
public struct ShareRequest: Sendable, Equatable {
    public enum Access: String, Sendable { case open, company, collaborators }
    public var access: Access
    public var expires: Date?
    /// Resolved secret, never logged.
    public var password: String?

    public init(access: Access, expires: Date? = nil, password: String? = nil) {
        self.access = access; self.expires = expires; self.password = password
    }
}

public struct ShareLink: Sendable, Equatable, Codable {
    public var url: String
    public var expires: Date?
    public var passwordProtected: Bool
    /// What was asked and what was made instead when the provider refused a setting (e.g.
    /// expiry on a free plan), with its reason. A link is never more open than asked: what is
    /// made instead is stricter (e.g. only people who already have access), or the share fails.
    public var fallback: String?
    /// Who can open the link, in the provider's terms (`public`, `no_one`, `collaborators`,
    /// `RequireLogin`, …), when the provider says.
    public var audience: String?

    public init(url: String, expires: Date? = nil, passwordProtected: Bool = false, fallback: String? = nil,
                audience: String? = nil) {
        self.url = url; self.expires = expires; self.passwordProtected = passwordProtected; self.fallback = fallback
        self.audience = audience
    }
}

/// Every provider failure. `retryable` for 429/5xx/timeouts/resets (after `retryAfter` when the
/// provider said so); the message names the account, the remote path and what the provider answered.
public struct ArchiveError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        case transient, permanent, unauthorized, notFound, conflict, unsupported, local
    }
    public var kind: Kind
    public var message: String
    public var retryAfter: Double?
    /// The provider's HTTP status, when an answer came.
    public var httpStatus: Int?
    /// The OAuth token endpoint refused the grant or the client (`invalid_grant`,
    /// `invalid_client`), whatever status carried it.
    public var grantRefused = false

    public init(_ kind: Kind, _ message: String, retryAfter: Double? = nil, httpStatus: Int? = nil) {
        self.kind = kind; self.message = message; self.retryAfter = retryAfter; self.httpStatus = httpStatus
    }

    /// The provider refused the account's credentials (401, or 403 after them): nothing for
    /// this account will work until someone fixes them, so its work pauses instead of retrying.
    public var credentialsRefused: Bool { grantRefused || httpStatus == 401 || httpStatus == 403 }

    public var retryable: Bool { kind == .transient || kind == .unauthorized }
    public var description: String { message }
}

/// One archive account. Paths are `/`-separated below the account's root, each component
/// already passed through `sanitize` (callers do it once, with `RemotePath.sanitized`).
///
/// Contract (like rclone's `fs.Fs`):
/// - `makeFolders` creates every missing folder of `path`; existing ones are fine. Idempotent.
/// - `stat` returns nil when nothing is at `path`; a folder there is a `.conflict` error.
/// - `upload` writes the local file to `path` (its folder exists) and returns what the provider
///   stored. It replaces nothing silently: when a file is already there it throws `.conflict`,
///   so the caller decides by content (stat + hash-compare first). Not idempotent by itself.
/// - `download` streams the remote file into `local` (temp + rename by the HTTP client).
/// - `share` creates a link for `path` or returns the existing one. Idempotent.
/// - `delete` removes a file; nothing there is fine (tests and clean-up).
public protocol ArchiveProvider: Sendable {
    var account: String { get }
    /// The digest `stat` reports in `hash`; where it reports none (plain WebDAV, a local
    /// folder) callers verify an upload by reading it back.
    var hashKind: ProviderHashKind { get }
    /// One path component made acceptable to this provider (forbidden characters, length).
    func sanitize(component: String) -> String
    /// Whether `upload` sends `hash` to the provider (which checks the bytes against it). When
    /// false, `upload` accepts an empty `hash` and the caller may compute it meanwhile.
    var checksHashOnUpload: Bool { get }
    /// Whether `stat` reports the provider's own digest of a stored file (`hash`). When false
    /// (Nextcloud, a plain WebDAV server), an upload is proven by reading it back, and a `stat`
    /// right after the upload would add nothing the read-back does not prove.
    func statReportsHash() async -> Bool
    /// Whether the provider itself refuses an upload onto an existing file (`.conflict`), by its
    /// documented protocol, so that a small file may be sent without a look first. False where
    /// that is only what our emulation does (then the path is looked at before every upload).
    var uploadRefusesExisting: Bool { get }
    /// Whether the digests `stat` and `upload` report are such only because the account's
    /// configuration says so (an ETag declared a SHA-1): a digest that differs from ours is then
    /// checked against a read-back, to tell damaged bytes from a wrong declaration.
    var digestDeclaredByConfig: Bool { get }

    /// Who the credentials belong to ("Dropbox account a@b.org"), proving they work.
    func whoami() async throws(ArchiveError) -> String
    func makeFolders(_ path: String) async throws(ArchiveError)
    func stat(_ path: String) async throws(ArchiveError) -> RemoteFile?
    func upload(local: String, size: Int64, hash: String, to path: String,
                progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile
    func download(_ path: String, to local: String) async throws(ArchiveError)
    /// The SHA-256 and size of the file at `path`, read back whole and hashed as it arrives (no
    /// temporary file made, written, synced and removed per read-back); nil where the provider
    /// cannot, and the caller downloads it into a file and hashes that.
    func readBackDigest(_ path: String) async throws(ArchiveError) -> (sha256: SHA256Digest, size: Int64)?
    func share(_ path: String, _ request: ShareRequest) async throws(ArchiveError) -> ShareLink
    func delete(_ path: String) async throws(ArchiveError)
}

extension ArchiveProvider {
    public var checksHashOnUpload: Bool { true }
    public var uploadRefusesExisting: Bool { false }
    public var digestDeclaredByConfig: Bool { false }
    public func statReportsHash() async -> Bool { true }

    public func readBackDigest(_ path: String) async throws(ArchiveError) -> (sha256: SHA256Digest, size: Int64)? { nil }
}

/// Remote paths from templates: each component sanitized, no empty, `.` or `..` component,
/// so nothing a file name or template contains can leave the account's root.
public enum RemotePath {
    public static func sanitized(_ path: String, for provider: any ArchiveProvider) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true)
            .map { provider.sanitize(component: String($0)) }
            .joined(separator: "/")
    }

    /// Common rules: control characters (C0, DEL, C1), bidirectional overrides and isolates
    /// and `\` become `_`; `.`/`..` and names of only dots get a `_` prefix; trailing spaces and
    /// dots go (Windows-backed shares refuse them); cut to `maxBytes` UTF-8 bytes at a character
    /// boundary. `extra` characters also become `_`.
    ///
    /// Bidi controls go because they make a name display as another one in the provider's web
    /// page (`invoice\u{202E}fdp.exe` shows as `invoiceexe.pdf`): an auditor must read the name
    /// that is stored.
    public static func sanitize(_ name: String, forbidden extra: Set<Character> = [], maxBytes: Int = 255) -> String {
        var s = String(name.map { c -> Character in
            if c == "/" || c == "\\" || extra.contains(c) { return "_" }
            if c.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || bidiControls.contains($0.value) }) {
                return "_"
            }
            return c
        })
        while let last = s.last, last == " " || last == "." { s.removeLast() }
        if s.isEmpty || s.allSatisfy({ $0 == "." }) { s = "_" + s }
        guard s.utf8.count > maxBytes else { return s }
        // Too long: shorten the stem, keep a short extension so the file still opens.
        var ext = ""
        if let dot = s.lastIndex(of: "."), dot != s.startIndex, s.utf8.distance(from: dot, to: s.endIndex) <= 16 {
            ext = String(s[dot...])
            s = String(s[..<dot])
        }
        while s.utf8.count + ext.utf8.count > maxBytes { s.removeLast() }
        return s + ext
    }

    /// LRM, RLM, ALM, the embeddings and overrides (U+202A…U+202E) and isolates (U+2066…U+2069).
    static let bidiControls: Set<UInt32> = [0x200E, 0x200F, 0x061C, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
                                            0x2066, 0x2067, 0x2068, 0x2069]

    public static func parent(_ path: String) -> String {
        guard let i = path.lastIndex(of: "/") else { return "" }
        return String(path[..<i])
    }
}

extension ProviderHashKind {
    /// A local file's digest of this kind (lowercase hex), streamed in constant memory: what
    /// the provider's own hash of a faithful copy will be.
    public func digest(of path: String) throws(StoreError) -> String {
        switch self {
        case .sha256: return try FileHasher.hexDigest(path: path, algorithm: .sha256)
        case .sha1: return try FileHasher.hexDigest(path: path, algorithm: .sha1)
        case .md5: return try FileHasher.hexDigest(path: path, algorithm: .md5)
        case .dropbox: return try FileHasher.dropboxContentHash(path: path)
        }
    }
}
