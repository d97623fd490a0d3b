import EvidenceCore
import Glibc

/// The one place a source file is read into a store: `ObjectStore.stage` (the local store) and
/// `SourceSpool.read` (the S3 store's spool) both come here, so the rules below hold for every
/// store kind alike.
///
/// - A symbolic link is refused unless `followSymlinks`; anything but a regular file is refused
///   without opening it in a blocking way (a FIFO cannot hang the reader).
/// - With `beneath` (a watched root), the file is reached through its folder opened below that
///   root without following any link (`BeneathRoot`): a folder swapped for a link cannot make
///   the service read (and archive) a file outside the watched folder.
/// - `.changedDuringRead` when size, mtime or inode differ before vs after the read, by the open
///   descriptor and by the name (the writer was not done, or the name was swapped): nothing is
///   stored under a possibly wrong hash. `.vanished` when the name is gone after the read.
/// - On any error the temp file is removed.
enum SourceRead {
    /// What was read: the copy (not yet durable), its digest and size, and the source's identity.
    struct Copy {
        let temp: TempFile
        let digest: SHA256Digest
        let size: Int64
        let source: SourceStat
        /// The extra digests asked for (`md5`, `sha1`, `sha512` → hex), from the same read.
        var digests: [String: String] = [:]
    }

    /// Reads `path` once, hashing it and copying it into the temp file `makeTemp` creates once
    /// the source is open and checked (it is given the source's size, for a free-space check).
    static func copy(path: String, followSymlinks: Bool, beneath root: String?,
                     digests: [DigestAlgorithm] = [], progress: ((Int64) -> Void)?,
                     makeTemp: (Int64) throws(StoreError) -> TempFile) throws(StoreError) -> Copy {
        var folder: BeneathRoot?
        if let root {
            do { folder = try BeneathRoot(path: path, root: root) } catch {
                switch error {
                case .missing: throw .notFound(path: path)
                case .symlink: throw .symlink(path: path)
                case .outside(let p, let r): throw .notRegularFile(path: p, kind: "outside the watched folder \(r)")
                case .io(let p, let e): throw StoreError.from(errno: e, path: p, operation: "open folder")
                }
            }
        }
        /// lstat of the source, through its folder when there is one.
        func lstatSource() -> Result<SourceStat, StoreError> {
            guard let folder else { return SourceStat.lstat(path) }
            switch folder.stat() {
            case .success(let s): return .success(s)
            case .failure(.missing): return .failure(.notFound(path: path))
            case .failure(.io(_, let code)): return .failure(.ioError(path: path, operation: "lstat", errno: code))
            case .failure: return .failure(.symlink(path: path))
            }
        }
        let before = try ObjectStore.check(lstatSource())
        if before.kind == .symlink && !followSymlinks { throw .symlink(path: path) }
        if before.kind == .directory { throw .isDirectory(path: path) }
        if before.kind != .regular && before.kind != .symlink {
            throw .notRegularFile(path: path, kind: before.kind.rawValue)
        }
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followSymlinks ? 0 : O_NOFOLLOW)
        let src = folder.map { openat($0.directory, $0.name, flags) } ?? open(path, flags)
        guard src >= 0 else { throw StoreError.from(errno: errno, path: path, operation: "open") }
        defer { close(src) }
        let opened = try ObjectStore.check(SourceStat.fstat(src, path: path))
        guard opened.kind == .regular else { throw .notRegularFile(path: path, kind: opened.kind.rawValue) }
        if before.kind == .regular && !opened.sameVersion(as: before) {
            throw .changedDuringRead(path: path, detail: opened.difference(from: before))
        }
        // Blocking reads from here: it is a regular file.
        _ = fcntl(src, F_SETFL, fcntl(src, F_GETFL) & ~O_NONBLOCK)

        let tmp = try makeTemp(opened.size)
        var keep = false
        defer { if !keep { tmp.discard() } }
        let hasher = SHA256Hasher()
        let extra = ExtraDigests(digests)
        let copied = try ChunkPipeline(src: src, path: path, sink: tmp, expectedSize: opened.size)
            .run(hasher: hasher, extra: extra.isEmpty ? nil : extra, progress: progress)
        let digest = hasher.finalize()

        // The same version from start to end, by the open descriptor and by the name.
        let afterFD = try ObjectStore.check(SourceStat.fstat(src, path: path))
        let afterPath: SourceStat
        switch lstatSource() {
        case .success(let s): afterPath = s
        case .failure(.notFound): throw .vanished(path: path)
        case .failure(let e): throw e
        }
        guard afterFD.sameVersion(as: opened), copied == opened.size else {
            throw .changedDuringRead(path: path, detail: copied != opened.size && afterFD.sameVersion(as: opened)
                                     ? "read \(copied) bytes of \(opened.size)" : afterFD.difference(from: opened))
        }
        let pathTarget = followSymlinks ? (try? ObjectStore.check(SourceStat.statFollowing(path))) ?? afterPath : afterPath
        guard pathTarget.device == opened.device, pathTarget.inode == opened.inode else {
            throw .changedDuringRead(path: path, detail: "replaced by another file")
        }
        keep = true
        return Copy(temp: tmp, digest: digest, size: copied, source: opened, digests: extra.finalize())
    }
}
