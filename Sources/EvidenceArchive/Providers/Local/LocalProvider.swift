import EvidenceCore
import EvidenceStore
import Foundation
import Glibc

/// A folder on this machine (a NAS mount, a second disk): the embedded default archive.
/// Writes are temp + fsync + link + directory fsync, like the store's; the reported hash
/// is SHA-256, read back from the written file by the caller's verification.
///
/// Every file is reached through its folder opened beneath the root without following a
/// symbolic link (`BeneathRoot`), and created, linked, read and removed relative to that
/// folder's descriptor: whoever can write in the archive cannot, by swapping a sub-folder for a
/// link between a check and the action, make the service write, read or delete outside it.
public struct LocalProvider: ArchiveProvider {
    public let account: String
    public let root: String
    public var hashKind: ProviderHashKind { .sha256 }
    /// An upload onto an existing name is refused (`linkat` refuses an existing name).
    public var uploadRefusesExisting: Bool { true }
    /// Test hook: called with the file's path at the moment between the checks and the action
    /// (write, read, delete), so a test can swap a folder for a symbolic link exactly there.
    let beforeAct: @Sendable (String) -> Void

    public init(account: String, root: String, beforeAct: @escaping @Sendable (String) -> Void = { _ in }) {
        self.account = account
        self.beforeAct = beforeAct
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

    /// The folder of `path`, opened beneath the root without following a link (`BeneathRoot`);
    /// missing folders are made (0755) when `create`.
    func folder(_ path: String, create: Bool = false) throws(ArchiveError) -> BeneathRoot {
        do { return try BeneathRoot(path: full(path), root: root, createFolders: create ? 0o755 : nil) } catch {
            switch error {
            case .missing: throw ArchiveError(.notFound, "\(account): \(full(path)): a folder on the way does not exist")
            case .symlink, .outside: throw ArchiveError(.conflict, "\(account): \(error.description)")
            case .io: throw ArchiveError(.local, "\(account): \(error.description)")
            }
        }
    }

    public func makeFolders(_ path: String) async throws(ArchiveError) {
        guard !path.split(separator: "/").isEmpty else { return }
        // The last folder is made too: open a name inside it.
        let made = try folder(path + "/-", create: true)
        withExtendedLifetime(made) {}
    }

    public func stat(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        let at: BeneathRoot
        do { at = try folder(path) } catch where error.kind == .notFound { return nil }
        switch at.stat() {
        case .failure(.missing): return nil
        case .failure(let e): throw ArchiveError(.local, "\(account): \(e.description)")
        case .success(let st):
            guard st.kind == .regular else { throw ArchiveError(.conflict, "\(account): \(full(path)) is not a regular file") }
            return RemoteFile(path: path, size: st.size)
        }
    }

    /// Writes a temp file in the target's folder (opened beneath the root), then publishes it with
    /// `linkat` relative to that folder's descriptor, which refuses an existing name.
    public func upload(local: String, size: Int64, hash: String, to path: String,
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let target = full(path)
        let dir = try folder(path)
        let temp = ".evidence-upload-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        func fail(_ what: String) -> ArchiveError {
            let e = errno
            unlinkat(dir.directory, temp, 0)
            return ArchiveError(.local, "\(account): \(target): \(what): \(String(cString: strerror(e)))")
        }
        let src = open(local, O_RDONLY | O_CLOEXEC)
        guard src >= 0 else { throw ArchiveError(.local, "\(local): \(String(cString: strerror(errno)))") }
        defer { close(src) }
        beforeAct(target)
        let dst = openat(dir.directory, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
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
        // linkat(2) refuses an existing target: never two versions under one name, no silent replace.
        guard linkat(dir.directory, temp, dir.directory, dir.name, 0) == 0 else {
            let exists = errno == EEXIST
            let err = fail("publish")
            throw exists ? ArchiveError(.conflict, "\(account): \(target) already exists") : err
        }
        unlinkat(dir.directory, temp, 0)
        _ = fsync(dir.directory)
        return RemoteFile(path: path, size: total)
    }

    /// Reads the file back through its folder opened beneath the root (a regular file, no link).
    public func download(_ path: String, to local: String) async throws(ArchiveError) {
        let dir = try folder(path)
        beforeAct(full(path))
        let src: Int32
        switch dir.openRegularFile() {
        case .success(let r): src = r.fd
        case .failure(let e): throw ArchiveError(e == .missing(path: dir.path) ? .notFound : .local, "\(account): \(e.description): cannot read back")
        }
        defer { close(src) }
        let tmp = local + ".part-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let dst = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard dst >= 0 else { throw ArchiveError(.local, "\(local): \(String(cString: strerror(errno)))") }
        var ok = false
        defer { if !ok { unlink(tmp) } }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(src, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; close(dst); throw ArchiveError(.local, "\(account): \(full(path)): cannot read back: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            var off = 0
            while off < n {
                let w = buffer.withUnsafeBytes { write(dst, $0.baseAddress! + off, n - off) }
                if w < 0 { if errno == EINTR { continue }; close(dst); throw ArchiveError(.local, "\(local): \(String(cString: strerror(errno)))") }
                off += w
            }
        }
        close(dst)
        guard rename(tmp, local) == 0 else { throw ArchiveError(.local, "\(local): \(String(cString: strerror(errno)))") }
        ok = true
    }

    /// A local folder has no links to hand out: the "link" is the file's `file://` URL, for
    /// whoever can reach the folder, and the fallback says so.
    public func share(_ path: String, _ request: ShareRequest) async throws(ArchiveError) -> ShareLink {
        guard (try? await stat(path)) ?? nil != nil else { throw ArchiveError(.notFound, "\(account): \(path) is not there to share") }
        return ShareLink(url: URL(fileURLWithPath: full(path)).absoluteString, expires: nil, passwordProtected: false,
                         fallback: "a local archive has no share links: this is the file's location on this machine",
                         audience: "this machine")
    }

    /// Removes the file with `unlinkat` in its folder opened beneath the root.
    public func delete(_ path: String) async throws(ArchiveError) {
        let dir: BeneathRoot
        do { dir = try folder(path) } catch where error.kind == .notFound { return }
        beforeAct(full(path))
        if let failure = dir.unlink(), failure != .io(path: dir.path, errno: ENOENT) {
            throw ArchiveError(.local, "\(account): \(failure.description)")
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
