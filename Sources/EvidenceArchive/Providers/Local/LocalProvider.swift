import EvidenceCore
import Foundation
import Glibc

/// A folder on this machine (a NAS mount, a second disk): the embedded default archive.
/// Writes are temp + fsync + rename + directory fsync, like the store's; the reported hash
/// is SHA-256, read back from the written file by the caller's verification.
public struct LocalProvider: ArchiveProvider {
    public let account: String
    public let root: String
    public var hashKind: ProviderHashKind { .sha256 }

    public init(account: String, root: String) {
        self.account = account
        self.root = root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    public func sanitize(component: String) -> String { RemotePath.sanitize(component) }

    public func whoami() async throws(ArchiveError) -> String {
        guard let mode = fileMode(root), (mode & S_IFMT) == S_IFDIR else {
            throw ArchiveError(.local, "\(account): \(root) is not a folder (create it, or fix `path`)")
        }
        guard access(root, W_OK) == 0 else { throw ArchiveError(.local, "\(account): \(root) is not writable by this user") }
        return "local folder \(root)"
    }

    func full(_ path: String) -> String { path.isEmpty ? root : root + "/" + path }

    public func makeFolders(_ path: String) async throws(ArchiveError) {
        var current = root
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw ArchiveError(.local, "\(account): \(current): cannot create folder: \(String(cString: strerror(errno)))")
            }
            guard let mode = fileMode(current), (mode & S_IFMT) == S_IFDIR else {
                throw ArchiveError(.conflict, "\(account): \(current) exists and is not a folder")
            }
        }
    }

    public func stat(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        var st = Glibc.stat()
        guard lstat(full(path), &st) == 0 else {
            if errno == ENOENT { return nil }
            throw ArchiveError(.local, "\(account): \(full(path)): \(String(cString: strerror(errno)))")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw ArchiveError(.conflict, "\(account): \(full(path)) is not a regular file") }
        return RemoteFile(path: path, size: Int64(st.st_size))
    }

    public func upload(local: String, size: Int64, hash: String, to path: String,
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let target = full(path)
        let dir = (target as NSString).deletingLastPathComponent
        let temp = dir + "/.evidence-upload-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        func fail(_ what: String) -> ArchiveError {
            let e = errno
            unlink(temp)
            return ArchiveError(e == ENOSPC ? .local : .local, "\(account): \(target): \(what): \(String(cString: strerror(e)))")
        }
        let src = open(local, O_RDONLY | O_CLOEXEC)
        guard src >= 0 else { throw ArchiveError(.local, "\(local): \(String(cString: strerror(errno)))") }
        defer { close(src) }
        let dst = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard dst >= 0 else { throw fail("create temp file") }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total: Int64 = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { read(src, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; close(dst); throw fail("read \(local)") }
            if n == 0 { break }
            var off = 0
            while off < n {
                let w = buffer.withUnsafeBytes { write(dst, $0.baseAddress! + off, n - off) }
                if w < 0 { if errno == EINTR { continue }; close(dst); throw fail("write") }
                off += w
            }
            total += Int64(n)
            progress?(total)
        }
        guard fsync(dst) == 0 else { close(dst); throw fail("fsync") }
        close(dst)
        // link(2) refuses an existing target: never two versions under one name, no silent replace.
        guard link(temp, target) == 0 else {
            let exists = errno == EEXIST
            let err = fail("publish")
            throw exists ? ArchiveError(.conflict, "\(account): \(target) already exists") : err
        }
        unlink(temp)
        let d = open(dir, O_RDONLY | O_DIRECTORY)
        if d >= 0 { _ = fsync(d); close(d) }
        return RemoteFile(path: path, size: total)
    }

    public func download(_ path: String, to local: String) async throws(ArchiveError) {
        do {
            if FileManager.default.fileExists(atPath: local) { try FileManager.default.removeItem(atPath: local) }
            try FileManager.default.copyItem(atPath: full(path), toPath: local)
        } catch {
            throw ArchiveError(.local, "\(account): \(full(path)): cannot read back: \(error.localizedDescription)")
        }
    }

    /// A local folder has no links to hand out: the "link" is the file's `file://` URL, for
    /// whoever can reach the folder, and the fallback says so.
    public func share(_ path: String, _ request: ShareRequest) async throws(ArchiveError) -> ShareLink {
        guard fileMode(full(path)) != nil else { throw ArchiveError(.notFound, "\(account): \(path) is not there to share") }
        return ShareLink(url: URL(fileURLWithPath: full(path)).absoluteString, expires: nil, passwordProtected: false,
                         fallback: "a local archive has no share links: this is the file's location on this machine",
                         audience: "this machine")
    }

    public func delete(_ path: String) async throws(ArchiveError) {
        if unlink(full(path)) != 0 && errno != ENOENT {
            throw ArchiveError(.local, "\(account): \(full(path)): \(String(cString: strerror(errno)))")
        }
    }
}

/// `stat(2)`'s mode of `path` (following symlinks), nil when it cannot be read. At file scope
/// because `stat` inside a provider means the protocol's method.
func fileMode(_ path: String) -> mode_t? {
    var st = Glibc.stat()
    return stat(path, &st) == 0 ? st.st_mode : nil
}

/// Modification time of a local file in whole seconds.
func fileMTime(_ path: String) -> Int? {
    var st = Glibc.stat()
    return stat(path, &st) == 0 ? Int(st.st_mtim.tv_sec) : nil
}
