import EvidenceCore
/// One watch rule: a file `NAME.toml` in the rules folder; the rule's name is the file's stem.
///
/// All paths are absolute (relative ones are resolved against the rule file's directory).
/// Templates (`remotePath`, `nameTemplate`, `noteTemplate`) were checked with `Template.validate`.
public struct WatchRule: Sendable, Equatable {
    /// The file's stem (`bodycam.toml` → `"bodycam"`).
    public var name: String
    /// Absolute path of the rule file.
    public var file: String
    /// The watched folder.
    public var path: String
    /// Globs matched against file names; default `["*"]`.
    public var include: [String]
    public var exclude: [String]
    public var recursive: Bool
    /// `max_depth`: deepest folder watched, in levels below `path` (a folder in `path` is level
    /// 1); deeper folders are not descended and are quarantined with the reason. Default 64.
    public var maxDepth: Int
    /// Seconds a file must stay unchanged before it is taken; default 2 (`init` writes 30 s).
    public var settle: Double
    /// `settle_max`: the longest a file's settle window grows to. A file that changes again after
    /// it was taken (a writer pausing longer than `settle`), or while it is read, has its window
    /// doubled each time, up to this; default 300 s (never below `settle`).
    public var settleMax: Double
    /// `empty`: what a 0-byte file becomes; `take` (default: an item flagged empty) or `skip`.
    public var empty: EmptyFiles
    /// When set, also rescan by polling every so many seconds (network shares without inotify).
    public var pollInterval: Double?
    /// Names of `[notaries.NAME]`; all must confirm. Empty = no notarization.
    public var notary: [String]
    /// Name of an `[archives.NAME]`; nil = stop after certificates.
    public var archive: String?
    public var remotePath: String
    /// Only with an archive.
    public var share: ShareSettings?
    public var after: AfterAction
    /// `name` template (report name at the notary).
    public var nameTemplate: String
    /// `note` template.
    public var noteTemplate: String
    /// `[meta_data]`: free-form key/values sent with the notarization.
    public var metaData: [String: String]
    /// `[labels]`: agency, custodian, case, officer, device, location, printed on the item's
    /// certificate (a sidecar `NAME.json` beside a file overrides them field by field).
    public var labels = CertificateLabels()
    /// `nodes`: the nodes (the config's `node`) that watch `path`; nil = every node. Every node
    /// loads every rule all the same: any node's workers run any rule's jobs.
    public var nodes: [String]?
    /// `digests`: the extra digests of each file (MD5, SHA-1, SHA-512), from the same read as its
    /// SHA-256, which is always computed and need not be listed.
    public var digests: [DigestAlgorithm] = []

    /// Whether the node named `node` watches this rule's folder.
    public func isWatched(on node: String) -> Bool { nodes?.contains(node) ?? true }

    public static let defaultMaxDepth = 64
    public static let defaultSettleMax = 300.0
    /// Highest `max_depth` accepted: a path of PATH_MAX (4,096) bytes holds at most 2,048
    /// levels of one-letter names.
    public static let maxDepthLimit = 2048

    public static let defaultRemotePath = "evidence/{rule}/{yyyy}/{mm}/{dd}/{sha8}-{name}"

    public init(
        name: String, file: String, path: String, include: [String] = ["*"], exclude: [String] = [],
        recursive: Bool = true, settle: Double = 2, pollInterval: Double? = nil, notary: [String] = [],
        archive: String? = nil, remotePath: String = WatchRule.defaultRemotePath, share: ShareSettings? = nil,
        after: AfterAction = .keep, nameTemplate: String = "{name}", noteTemplate: String = "",
        metaData: [String: String] = [:]
    ) {
        self.name = name
        self.file = file
        self.path = path
        self.include = include
        self.exclude = exclude
        self.recursive = recursive
        self.maxDepth = WatchRule.defaultMaxDepth
        self.settle = settle
        self.settleMax = max(settle, WatchRule.defaultSettleMax)
        self.empty = .take
        self.pollInterval = pollInterval
        self.notary = notary
        self.archive = archive
        self.remotePath = remotePath
        self.share = share
        self.after = after
        self.nameTemplate = nameTemplate
        self.noteTemplate = noteTemplate
        self.metaData = metaData
        self.nodes = nil
    }
}

/// `empty` of a rule: what becomes of a 0-byte file.
public enum EmptyFiles: String, Sendable, Equatable, CaseIterable {
    /// Taken as an item, flagged `empty` in `status`, `show`, the portal and the log: it is what
    /// the device wrote.
    case take
    /// Not taken; the log says so once per version of the file.
    case skip
}

/// `[share]` of a rule: create a link to the archived object.
public struct ShareSettings: Sendable, Equatable {
    public var access: ShareAccess
    /// Link lifetime in seconds; nil = no expiry.
    public var expiresIn: Double?
    public var passwordEnv: String?
    /// Absolute path (resolved relative to the rule file).
    public var passwordFile: String?

    public init(access: ShareAccess, expiresIn: Double? = nil, passwordEnv: String? = nil, passwordFile: String? = nil) {
        self.access = access
        self.expiresIn = expiresIn
        self.passwordEnv = passwordEnv
        self.passwordFile = passwordFile
    }

    /// Where the link password comes from; nil = no password.
    public var password: SecretSource? {
        if let passwordEnv { return .env(passwordEnv) }
        if let passwordFile { return .file(passwordFile) }
        return nil
    }
}

/// Who may open a shared link (mapped to each provider's notion).
public enum ShareAccess: String, Sendable, Equatable, CaseIterable {
    case open, company, collaborators
}

/// What happens to the source file once its archive is verified (`after`).
public enum AfterAction: Sendable, Equatable {
    /// `"keep"` (default).
    case keep
    /// `"move:DIR"`; DIR is absolute and not inside the watched path.
    case move(String)
    /// `"delete"`.
    case delete
}
