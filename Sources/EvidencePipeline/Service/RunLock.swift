import Foundation
import Glibc

/// One `evidence run` per home: an exclusive `flock` on `<home>/run.lock`, held for the
/// life of the process and released by the kernel if it dies (so a `kill -9` never leaves
/// a stale lock behind). With a shared catalog (PostgreSQL) several nodes may serve one home
/// on a shared filesystem: the lock is then one per node, `<home>/run-<node>.lock`.
public final class RunLock: Sendable {
    public let path: String
    private let fd: Int32

    public struct Busy: Error, CustomStringConvertible {
        public var path: String
        public var holder: String
        public var description: String {
            "another `evidence run` already serves this home (\(holder)); lock: \(path)"
        }
    }

    public init(home: String, node: String? = nil) throws {
        path = home + (node.map { "/run-\($0).lock" } ?? "/run.lock")
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Busy(path: path, holder: "cannot open lock: \(String(cString: strerror(errno)))") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(fd)
            throw Busy(path: path, holder: holder.map { $0.isEmpty ? "unknown pid" : $0 } ?? "unknown pid")
        }
        let me = "pid \(getpid()) on \(ProcessInfo.processInfo.hostName)\n"
        _ = ftruncate(fd, 0)
        _ = me.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    deinit { close(fd) }
}
