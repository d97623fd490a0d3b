import EvidenceCore
import Foundation
import Glibc
import Synchronization

/// A source file read once into a local spool (a temp file in a store's `tmp/`) while it is
/// hashed, for stores whose key needs the digest before the upload starts (S3).
///
/// The source is read by `SourceRead.copy`, the same code as `ObjectStore.stage`: the rules on
/// symbolic links, non-regular files, the watched root and a file changed during the read are
/// one implementation for every store kind.
///
/// The spool is not fsynced: it is a copy for the upload, and nothing is acknowledged before
/// the remote store has the whole object. It is named `<pid>.<random>.tmp`, so a crashed
/// process's spool is cleaned like any other temp file of a dead writer, and removed by
/// `discard()` (or when the value goes away).
public final class SourceSpool: Sendable {
    public let digest: SHA256Digest
    public let size: Int64
    /// The source as it was when read (identical before and after the read).
    public let source: SourceStat
    /// The spool's path (in the scratch folder, by descriptor), readable until `discard()`.
    public let path: String
    private let temp: TempFile
    private let discarded = Mutex(false)

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
        let first = discarded.withLock { done in
            defer { done = true }
            return !done
        }
        if first { temp.discard() }
    }

    /// Reads `path` once into a new spool in the folder `scratch` (a descriptor; `scratchPath`
    /// names it, `/proc/self/fd/N` or a path), hashing it on the way. `storeName` is for messages.
    public static func read(path: String, followSymlinks: Bool = false, beneath root: String? = nil,
                            scratch: Int32, scratchPath: String, storeName: String,
                            progress: ((Int64) -> Void)? = nil) throws(StoreError) -> SourceSpool {
        let copy = try SourceRead.copy(path: path, followSymlinks: followSymlinks, beneath: root, progress: progress) { size throws(StoreError) in
            try FreeSpace.check(in: scratch, for: size, path: path, storeName: storeName)
            return try TempFile(in: scratch, folderPath: scratchPath, store: storeName, source: path)
        }
        return SourceSpool(digest: copy.digest, size: copy.size, source: copy.source, temp: copy.temp, folderPath: scratchPath)
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
}
