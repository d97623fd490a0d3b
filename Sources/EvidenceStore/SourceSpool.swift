import EvidenceCore
import Foundation
import Glibc

/// A source file read once into a local spool (a temp file in a store's `tmp/`) while it is
/// hashed, for stores whose key needs the digest before the upload starts (S3).
///
/// The source is read under exactly the rules of `ObjectStore.ingest`: a symbolic link refused
/// unless `followSymlinks`, anything but a regular file refused without a blocking open, the
/// file reached through its folder opened beneath `root` without following links when given,
/// and `.changedDuringRead` when size, mtime or inode differ before vs after the read, by the
/// open descriptor and by the name. (Those rules are written again here, not shared, because
/// `ObjectStore.swift` is being reworked for group commit at the same time; keep them alike.)
///
/// The spool is not fsynced: it is a copy for the upload, and nothing is acknowledged before
/// the remote store has the whole object. It is named `<pid>.<random>.tmp`, so a crashed
/// process's spool is cleaned like any other temp file of a dead writer, and removed by
/// `discard()` (or when the value goes away).
public final class SourceSpool: @unchecked Sendable {
    public let digest: SHA256Digest
    public let size: Int64
    /// The source as it was when read (identical before and after the read).
    public let source: SourceStat
    /// The spool's path (in the scratch folder, by descriptor), readable until `discard()`.
    public let path: String
    private let temp: TempFile
    private let lock = NSLock()
    private var discarded = false

    private init(digest: SHA256Digest, size: Int64, source: SourceStat, temp: TempFile, folderPath: String) {
        self.digest = digest
        self.size = size
        self.source = source
        self.temp = temp
        self.path = folderPath + "/" + temp.name
    }

    deinit { discard() }

    /// Opens the spool for reading (the caller closes the descriptor).
    public func openForReading() throws(StoreError) -> Int32 {
        let fd = openat(temp.folder, temp.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.from(errno: errno, path: path, operation: "open spool") }
        return fd
    }

    /// Removes the spool (once).
    public func discard() {
        lock.lock()
        defer { lock.unlock() }
        guard !discarded else { return }
        discarded = true
        temp.discard()
    }

    /// Reads `path` once into a new spool in the folder `scratch` (a descriptor; `scratchPath`
    /// names it, `/proc/self/fd/N` or a path), hashing it on the way. `storeName` is for messages.
    public static func read(path: String, followSymlinks: Bool = false, beneath root: String? = nil,
                            scratch: Int32, scratchPath: String, storeName: String,
                            progress: ((Int64) -> Void)? = nil) throws(StoreError) -> SourceSpool {
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
        _ = fcntl(src, F_SETFL, fcntl(src, F_GETFL) & ~O_NONBLOCK)

        try checkFreeSpace(scratch: scratch, for: opened.size, path: path, storeName: storeName)
        let tmp = try TempFile(in: scratch, folderPath: scratchPath, store: storeName, source: path)
        var keep = false
        defer { if !keep { tmp.discard() } }
        let hasher = SHA256Hasher()
        let copied = try ChunkPipeline(src: src, path: path, sink: tmp).run(hasher: hasher, progress: progress)
        let digest = hasher.finalize()

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
        return SourceSpool(digest: digest, size: copied, source: opened, temp: tmp, folderPath: scratchPath)
    }

    /// Bytes held in memory as a spool (for `put`).
    public static func write(_ data: Data, scratch: Int32, scratchPath: String, storeName: String) throws(StoreError) -> SourceSpool {
        let tmp = try TempFile(in: scratch, folderPath: scratchPath, store: storeName, source: "(data)")
        var keep = false
        defer { if !keep { tmp.discard() } }
        let failure: StoreError? = data.withUnsafeBytes { raw in
            do throws(StoreError) { try tmp.write(raw); return nil } catch { return error }
        }
        if let failure { throw failure }
        keep = true
        let st = SourceStat(stat())
        return SourceSpool(digest: SHA256Hasher.hash(data), size: Int64(data.count), source: st, temp: tmp, folderPath: scratchPath)
    }

    /// The same free-space rule as the local store's (`ObjectStore.checkFreeSpace`), for a spool
    /// or a download of `size` bytes into the folder `scratch`.
    public static func checkFreeSpace(scratch: Int32, for size: Int64, path: String, storeName: String) throws(StoreError) {
        guard size > 0 else { return }
        var fs = statvfs()
        guard fstatvfs(scratch, &fs) == 0 else { return }
        let unit = Int64(fs.f_frsize > 0 ? fs.f_frsize : fs.f_bsize)
        let free = Int64(fs.f_bavail) * unit
        let margin = min(Int64(64) << 20, Int64(fs.f_blocks) * unit / 50)
        if size > free - margin {
            throw .insufficientSpace(path: path, store: storeName, needed: size, free: free, margin: margin)
        }
    }
}
