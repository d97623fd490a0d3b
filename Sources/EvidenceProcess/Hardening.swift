import CEvidenceSys
import Glibc

/// Process-wide protections for the long-running commands (`run`, `serve`), which hold every
/// credential of the set-up in memory.
public enum Hardening {
    /// No core dumps: a crash must not write tokens, keys or passwords to disk. Sets the core
    /// size limit to 0 (soft and hard, so a child cannot raise it) and marks the process not
    /// dumpable. Returns what could not be done, for a warning; nil when both held.
    @discardableResult
    public static func disableCoreDumps() -> String? {
        var problems: [String] = []
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        if setrlimit(Int32(RLIMIT_CORE.rawValue), &none) != 0 { problems.append("RLIMIT_CORE: \(String(cString: strerror(errno)))") }
        if evidence_set_not_dumpable() != 0 { problems.append("PR_SET_DUMPABLE: \(String(cString: strerror(errno)))") }
        return problems.isEmpty ? nil : "core dumps may still be written (" + problems.joined(separator: "; ") + ")"
    }
}
