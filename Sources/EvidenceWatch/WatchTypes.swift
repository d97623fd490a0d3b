import EvidenceCore

/// One watch rule as the watcher needs it (the config module maps a rule file onto this).
public struct WatchSpec: Sendable, Equatable {
    /// Rule name (the rule file's stem); carried on every event.
    public var rule: String
    /// Absolute folder to watch. It may be a symbolic link to a directory (the root, and only
    /// the root, is followed); reported paths are built under this spelling.
    public var root: String
    /// `fnmatch(3)` globs on the file *name* (not the path). Empty means `["*"]`.
    public var include: [String]
    /// Extra globs on the name to ignore (added to the watcher's default ignores). They also
    /// apply to subdirectory names: an ignored directory is not descended.
    public var exclude: [String]
    /// Descend into subdirectories (and watch new ones as they appear).
    public var recursive: Bool
    /// Seconds a file must stay unchanged (device, inode, size, mtime) before it is reported.
    /// 0 = report at once on `IN_CLOSE_WRITE` / `IN_MOVED_TO` / scan (after one `lstat`).
    public var settle: Double
    /// The longest a file's window grows to: a file that changes again after it was reported
    /// (a writer pausing longer than `settle`) gets twice its last window, up to this. nil (or
    /// not above `settle`): the window never grows.
    public var settleMax: Double?
    /// A root that does not exist at start is waited for (looked at again every few seconds,
    /// watched and scanned once it appears) instead of being a setup error: one unmounted dock
    /// does not stop the other rules. Its initial scan is announced when it is made.
    public var waitForRoot: Bool = false
    /// If set, also rescan the whole tree every N seconds (network mounts where inotify is silent).
    public var pollInterval: Double?
    /// Deepest folder watched, in levels below `root` (a folder in `root` is level 1). A folder
    /// deeper than this is not watched nor descended; it is reported once as `.rejected` with
    /// the reason, so nothing beneath it goes unnoticed. Only matters when `recursive`.
    public var maxDepth: Int

    /// `maxDepth` when a rule does not set one: deeper than any camera, scanner or archive
    /// layout, far from PATH_MAX.
    public static let defaultMaxDepth = 64

    public init(
        rule: String,
        root: String,
        include: [String] = ["*"],
        exclude: [String] = [],
        recursive: Bool = false,
        settle: Double = 2,
        pollInterval: Double? = nil,
        maxDepth: Int = WatchSpec.defaultMaxDepth,
        settleMax: Double? = nil
    ) {
        self.settleMax = settleMax
        self.rule = rule
        self.root = root
        self.include = include
        self.exclude = exclude
        self.recursive = recursive
        self.settle = settle
        self.pollInterval = pollInterval
        self.maxDepth = maxDepth
    }
}

/// What "unchanged" means: the same file object with the same size and modification time.
public struct FileIdentity: Sendable, Hashable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    /// Modification time in nanoseconds since the Unix epoch.
    public var mtimeNanos: Int64

    public init(device: UInt64, inode: UInt64, size: Int64, mtimeNanos: Int64) {
        self.device = device
        self.inode = inode
        self.size = size
        self.mtimeNanos = mtimeNanos
    }
}

/// A regular file that stayed unchanged for its rule's settle time.
public struct SettledFile: Sendable, Equatable {
    public var rule: String
    /// Absolute path (root spelling + relative path). Always valid UTF-8 and byte-exact: it
    /// round-trips through `open(path)`.
    public var path: String
    public var identity: FileIdentity

    public init(rule: String, path: String, identity: FileIdentity) {
        self.rule = rule
        self.path = path
        self.identity = identity
    }
}

public enum WatchEvent: Sendable {
    /// A complete file, to be ingested. Reported once per (rule, path, identity).
    case settled(SettledFile)
    /// Something under a root that will not be taken: symbolic link, FIFO, socket, device, a
    /// name that is not valid UTF-8, or a folder not descended — deeper than the rule's
    /// `maxDepth`, unwatchable because the inotify watch limit is reached, or a path longer
    /// than PATH_MAX (the reason says which). Reported once per path (again only if the path
    /// disappears and comes back, or, for the watch limit, after a rescan that watched it). For a non-UTF-8 name, `path` shows invalid bytes as U+FFFD and the
    /// reason carries the exact bytes in hex.
    case rejected(rule: String, path: String, reason: String)
    /// A full scan of the rule's root finished, and why it ran. Routine `pollInterval` rescans
    /// are not announced.
    case rescanned(rule: String, cause: RescanCause)
}

/// Why a rule's root was scanned in full.
public enum RescanCause: Sendable, Equatable, CustomStringConvertible {
    /// Catch-up after start: files found are candidates and are reported once settled.
    case initialScan
    /// The inotify event queue overflowed (`injected`: an operator's SIGUSR1 or a test).
    case overflow(injected: Bool)
    /// The watched root was gone and is back.
    case rootReappeared

    public var description: String {
        switch self {
        case .initialScan: "initial scan"
        case .overflow(let injected): "inotify event queue overflowed" + (injected ? " (injected)" : "")
        case .rootReappeared: "watch root reappeared"
        }
    }
}
