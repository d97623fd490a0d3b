import Glibc

/// Setup errors of the watcher. Each names the path (and rule) and the system's error text.
public enum WatchError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The rule's root is not an absolute path.
    case rootNotAbsolute(rule: String, path: String)
    /// `stat` of the rule's root failed (missing, permission, …).
    case rootUnavailable(rule: String, path: String, errno: Int32)
    /// The rule's root exists but is not a directory.
    case rootNotDirectory(rule: String, path: String)
    /// `inotify_init1` failed (EMFILE: too many inotify instances for this user).
    case inotifyUnavailable(errno: Int32)
    /// `inotify_add_watch` failed with ENOSPC: the per-user watch limit is reached.
    case watchLimitReached(path: String)
    /// `inotify_add_watch` failed for another reason.
    case watchFailed(path: String, errno: Int32)
    /// Another system call the watcher needs failed (eventfd, poll, read).
    case systemCall(name: String, errno: Int32)

    public var description: String {
        switch self {
        case .rootNotAbsolute(let rule, let path):
            return "watch root \"\(path)\" of rule \"\(rule)\" is not an absolute path"
        case .rootUnavailable(let rule, let path, let e):
            return "watch root \"\(path)\" of rule \"\(rule)\" is not usable: \(errnoText(e))"
        case .rootNotDirectory(let rule, let path):
            return "watch root \"\(path)\" of rule \"\(rule)\" is not a directory"
        case .inotifyUnavailable(let e):
            var text = "inotify is unavailable: \(errnoText(e))"
            if e == EMFILE {
                text += "; the per-user inotify instance limit is reached: raise fs.inotify.max_user_instances (sysctl -w fs.inotify.max_user_instances=1024)"
            }
            return text
        case .watchLimitReached(let path):
            return "cannot watch \"\(path)\": inotify watch limit reached (\(errnoText(ENOSPC))); raise fs.inotify.max_user_watches (e.g. sysctl -w fs.inotify.max_user_watches=524288, persist it in /etc/sysctl.d/)"
        case .watchFailed(let path, let e):
            return "cannot watch \"\(path)\": \(errnoText(e))"
        case .systemCall(let name, let e):
            return "watcher: \(name) failed: \(errnoText(e))"
        }
    }
}

func errnoText(_ e: Int32) -> String {
    guard let cs = strerror(e) else { return "errno \(e)" }
    return "\(String(cString: cs)) (errno \(e))"
}
