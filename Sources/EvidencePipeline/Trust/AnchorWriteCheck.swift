import EvidenceConfig

/// Whether the user a process runs as could rewrite a trust anchor: a file whose content decides
/// what verifies (the config, a TSA's `ca_file`, the watch rules), or a folder on its path (whoever
/// can write a folder can rename the file away and put another in its place).
///
/// Pure: the identity and every file's owner and mode come in as values, so the rule is tested
/// for any uid without being that user. `TrustAnchors` feeds it the real ones.
///
/// The rule, for a non-root identity: a path is writable when the identity owns it (it can chmod
/// it), when it is group-writable and the identity is in its group, or when it is world-writable.
/// A writable folder with the sticky bit (`/tmp`) lets others only rename what they own, so it
/// counts only when the identity owns the folder; an entry it owns there is reported by itself.
/// For root (uid 0) everything is writable, so the question becomes whether anyone *else* can
/// write an anchor (a non-root owner, a non-root group with write, or every user); the outcome
/// says the process runs as root, which callers report as a warning, never a refusal.
/// ACLs are not read: a file with an ACL granting write is not caught here.
public enum AnchorWriteCheck {
    /// Who the process is: effective uid and every group it has (effective + supplementary).
    public struct Identity: Sendable, Equatable {
        public var uid: UInt32
        public var groups: Set<UInt32>
        public init(uid: UInt32, groups: Set<UInt32>) { self.uid = uid; self.groups = groups }
        public var isRoot: Bool { uid == 0 }
    }

    /// A path's owner, group and permission bits (`st_mode & 0o7777`), as `stat` gives them.
    public struct Ownership: Sendable, Equatable {
        public var uid: UInt32
        public var gid: UInt32
        public var mode: UInt32
        public var isDirectory: Bool
        public init(uid: UInt32, gid: UInt32, mode: UInt32, isDirectory: Bool) {
            self.uid = uid; self.gid = gid; self.mode = mode & 0o7777; self.isDirectory = isDirectory
        }
        var isSticky: Bool { mode & 0o1000 != 0 }
    }

    /// One path someone other than root (or the identity itself) could rewrite.
    public struct Finding: Sendable, Equatable {
        /// The file or folder that is writable.
        public var path: String
        /// Which anchor it is, or holds: `config file`, `notaries.tsa.ca_file`, `rules folder`, ….
        public var anchor: String
        public var ownership: Ownership
        /// How it is writable: `owned by uid 998`, `group-writable (gid 998)`, `writable by every user`.
        public var why: String

        /// The command that makes it root's alone and read-only to everyone else.
        public var fix: String {
            "chown root:root \(path) && chmod \(ownership.isDirectory ? "0755" : "0644") \(path)"
        }
    }

    public struct Outcome: Sendable, Equatable {
        public var identity: Identity
        public var findings: [Finding]
        /// Anchors that exist and were checked (path with its folders).
        public var checked: Int
        /// Root can write everything: the service's own account is no barrier then.
        public var runsAsRoot: Bool { identity.isRoot }
        /// Whether a process with this outcome must not start under `policy`.
        public func refuses(under policy: AnchorPermissions) -> Bool {
            policy == .refuse && !runsAsRoot && !findings.isEmpty
        }
    }

    /// A trust anchor to check: `path` as configured (absolute), `resolved` after following links
    /// (`path` when it is none); `what` names it for messages.
    public struct Anchor: Sendable, Equatable {
        public var path: String
        public var resolved: String
        public var what: String
        public init(path: String, resolved: String? = nil, what: String) {
            self.path = path; self.resolved = resolved ?? path; self.what = what
        }
    }

    /// Checks every anchor and each folder above it, up to `/`, along the configured path and the
    /// resolved one. `stat` returns nil for a path that does not exist (it is skipped: loading
    /// reports a missing file). Each writable path is reported once, for the first anchor it serves.
    public static func check(_ anchors: [Anchor], as identity: Identity, stat: (String) -> Ownership?) -> Outcome {
        var findings: [Finding] = []
        var seen = Set<String>()
        var checked = 0
        for anchor in anchors {
            guard stat(anchor.resolved) != nil else { continue }
            checked += 1
            var chain: [(String, String)] = [(anchor.resolved, anchor.what)]
            for p in [anchor.resolved, anchor.path] {
                chain += ancestors(of: p).map { ($0, "folder holding \(anchor.what)") }
            }
            for (path, role) in chain where seen.insert(path).inserted {
                guard let o = stat(path), let why = writable(o, by: identity) else { continue }
                findings.append(Finding(path: path, anchor: role, ownership: o, why: why))
            }
        }
        return Outcome(identity: identity, findings: findings, checked: checked)
    }

    /// How `o` can be written by `identity` (by anyone but root, when the identity is root);
    /// nil when it cannot. See the type's comment for the rule.
    static func writable(_ o: Ownership, by identity: Identity) -> String? {
        if identity.isRoot {
            if o.uid != 0 { return "owned by uid \(o.uid)" }
            if o.isSticky { return nil }
            if o.mode & 0o002 != 0 { return "writable by every user" }
            if o.mode & 0o020 != 0 && o.gid != 0 { return "group-writable (gid \(o.gid))" }
            return nil
        }
        if o.uid == identity.uid { return "owned by uid \(o.uid), which can change its mode" }
        if o.isSticky { return nil }
        if o.mode & 0o002 != 0 { return "writable by every user" }
        if o.mode & 0o020 != 0 && identity.groups.contains(o.gid) { return "group-writable (gid \(o.gid)) and uid \(identity.uid) is in that group" }
        return nil
    }

    /// `/a/b/c` → `/a/b`, `/a`, `/`.
    static func ancestors(of path: String) -> [String] {
        var out: [String] = []
        var p = path
        while let slash = p.lastIndex(of: "/") {
            p = slash == p.startIndex ? "/" : String(p[..<slash])
            out.append(p)
            if p == "/" { break }
        }
        return out
    }
}
