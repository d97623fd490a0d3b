import CEvidenceSys
import Glibc

/// The confinement a child enters before it parses a hostile file (`evidence __probe`): what it
/// needs is open already (its libraries loaded, the file inherited as a descriptor), so it drops
/// everything else. In order:
///
/// 1. resource limits: 1 GiB of address space, 30 s of CPU, no file written, 32 descriptors,
///    no core dump (and not dumpable: no ptrace by the same user);
/// 2. network: a new, empty network namespace (`unshare(CLONE_NEWNET)`) when permitted (root);
/// 3. user: as root, the `nobody` user and group, with no supplementary groups, so neither the
///    secret files (0600, the service's user) nor anything else of root's can be reached;
/// 4. no new privileges, then a seccomp filter on every thread refusing (EPERM) open/openat and
///    the other ways to a file, every socket, exec, ptrace, mounts and namespaces (the list is in
///    Sources/C/CEvidenceSys/shim.h, `evidence_install_probe_seccomp`).
///
/// The filter is what holds as any user; the namespace and the user change add to it when the
/// child runs as root. Nothing here fails the probe: what could not be done is reported
/// (`Report.problems`), and `confined` is false when the filter itself is missing, so that the
/// parent can say the file was parsed unsandboxed.
public enum ProbeSandbox {
    /// The probe's limits.
    public static let limits: [(resource: Int32, value: rlim_t)] = [
        (Int32(RLIMIT_AS.rawValue), 1 << 30), (Int32(RLIMIT_CPU.rawValue), 30), (Int32(RLIMIT_FSIZE.rawValue), 0),
        (Int32(RLIMIT_NOFILE.rawValue), 32), (Int32(RLIMIT_CORE.rawValue), 0),
    ]

    /// The CPU seconds a probe gets (the `RLIMIT_CPU` of `limits`): the one-shot child's own
    /// limit, and the limit each child of the probe server sets for itself.
    public static var cpuSeconds: rlim_t {
        limits.first { $0.resource == Int32(RLIMIT_CPU.rawValue) }!.value
    }

    /// Where the user goes when the child runs as root (Debian's `nobody`/`nogroup`, looked up;
    /// 65534 where there is none).
    static let unprivilegedName = "nobody"
    static let fallbackID: UInt32 = 65534

    /// What was put in place.
    public struct Report: Sendable, Equatable, CustomStringConvertible {
        /// In a new, empty network namespace.
        public var networkNamespace = false
        /// The user the child went to (as root), nil when it stayed who it was.
        public var droppedToUID: UInt32?
        /// The group the child went to with it.
        public var droppedToGID: UInt32?
        /// The seccomp filter is on, on every thread, with no new privileges.
        public var syscallFilter = false
        /// What could not be done, one phrase each.
        public var problems: [String] = []

        /// Nothing in place (what `enter` starts from).
        public init() {}

        /// The filter, which refuses files and sockets whoever the child runs as, is in place.
        public var confined: Bool { syscallFilter }

        /// One line: `confined: …` or `NOT confined: …`, then what held and what did not.
        public var description: String {
            var held: [String] = []
            held.append(syscallFilter ? "seccomp filter (no open, socket, exec)" : "no seccomp filter")
            held.append(networkNamespace ? "empty network namespace" : "host network namespace")
            if let uid = droppedToUID, let gid = droppedToGID { held.append("uid \(uid) gid \(gid)") } else { held.append("uid \(getuid()) unchanged") }
            let problemText = problems.isEmpty ? "" : "; " + problems.joined(separator: "; ")
            return (confined ? "confined: " : "NOT confined: ") + held.joined(separator: ", ") + problemText
        }
    }

    /// Confines the calling process for good (see the type's comment). Call it after everything
    /// the process needs has been opened or loaded: afterwards open, openat, socket and exec fail
    /// with EPERM.
    /// - Parameter limitCPU: false for the probe's fork server (`ForkServer`), which lives as
    ///   long as its parent: each child it forks sets the CPU limit for itself.
    public static func enter(limitCPU: Bool = true) -> Report {
        var report = Report()

        // 1. Limits (lowering a limit needs no privilege).
        for (resource, value) in limits where limitCPU || resource != Int32(RLIMIT_CPU.rawValue) {
            var limit = rlimit(rlim_cur: value, rlim_max: value)
            if setrlimit(resource, &limit) != 0 {
                report.problems.append("resource limit \(resource): \(lastError())")
            }
        }
        if let problem = Hardening.disableCoreDumps() { report.problems.append(problem) }

        // 2. Network: a namespace of its own (needs CAP_SYS_ADMIN; the filter refuses sockets anyway).
        if evidence_unshare_network() == 0 {
            report.networkNamespace = true
        } else {
            report.problems.append("no network namespace (\(lastError()))")
        }

        // 3. User: root gives up root. The lookup reads /etc/passwd: before the filter.
        if geteuid() == 0 || getuid() == 0 {
            var uid = fallbackID, gid = fallbackID
            if let entry = getpwnam(unprivilegedName) {
                uid = entry.pointee.pw_uid
                gid = entry.pointee.pw_gid
            }
            if evidence_drop_privileges(uid, gid) == 0, setuid(0) != 0, getuid() == uid, geteuid() == uid, getegid() == gid {
                report.droppedToUID = uid
                report.droppedToGID = gid
            } else {
                report.problems.append("could not drop root for \(unprivilegedName) (\(lastError()))")
            }
        }

        // 4. No new privileges, then the filter.
        if evidence_set_no_new_privs() != 0 {
            report.problems.append("PR_SET_NO_NEW_PRIVS: \(lastError())")
        } else if evidence_install_probe_seccomp() != 0 {
            report.problems.append("seccomp filter: \(lastError())")
        } else {
            report.syscallFilter = true
        }
        return report
    }

    private static func lastError() -> String { String(cString: strerror(errno)) }
}
