import Foundation
import Glibc

/// Small files written whole: temp file in the same folder, fsync, rename, fsync the folder.
/// A crash leaves either the old content or the new, never a mix.
public enum AtomicFile {
    public struct WriteError: Error, CustomStringConvertible {
        public var path: String
        public var operation: String
        public var errno: Int32
        public var description: String { "\(path): \(operation) failed: \(String(cString: strerror(errno)))" }
    }

    public static func write(_ data: Data, to path: String, mode: mode_t = 0o600) throws(WriteError) {
        let dir = (path as NSString).deletingLastPathComponent
        let tmp = "\(dir.isEmpty ? "." : dir)/.\((path as NSString).lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw WriteError(path: path, operation: "create", errno: errno) }
        var ok = false
        defer { if !ok { close(fd); unlink(tmp) } }
        // The umask may have narrowed the mode given to open(): set it exactly.
        if fchmod(fd, mode) != 0 { throw WriteError(path: path, operation: "chmod", errno: errno) }
        let failed: Int32? = data.withUnsafeBytes { raw -> Int32? in
            var off = 0
            while off < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + off, raw.count - off)
                if n < 0 { if errno == EINTR { continue }; return errno }
                off += n
            }
            return nil
        }
        if let e = failed { throw WriteError(path: path, operation: "write", errno: e) }
        if fsync(fd) != 0 { throw WriteError(path: path, operation: "fsync", errno: errno) }
        close(fd)
        ok = true
        if rename(tmp, path) != 0 {
            let e = errno
            unlink(tmp)
            throw WriteError(path: path, operation: "rename", errno: e)
        }
        let dfd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { _ = fsync(dfd); close(dfd) }
    }
}
