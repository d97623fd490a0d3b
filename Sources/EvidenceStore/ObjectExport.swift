import EvidenceCore
import Glibc

/// Copying an open object out of a store (for bundles), shared by every store kind.
public enum ObjectExport {
    /// Copies from `fd` (from its current offset to the end) to `target` in one streaming pass
    /// that also re-hashes it: temp file beside `target`, fsync, read-only, rename relative to
    /// `target`'s folder. Returns what was read, so the caller can refuse a copy whose hash is not
    /// the object's name. `label` names the object in messages; `storeName` the store.
    public static func copy(fd: Int32, label: String, storeName: String, to target: String) throws(StoreError) -> (digest: SHA256Digest, size: Int64) {
        let slash = target.lastIndex(of: "/")
        let dir = slash.map { String(target[..<$0]) } ?? "."
        let name = slash.map { String(target[target.index(after: $0)...]) } ?? target
        let dirFD = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirFD >= 0 else { throw StoreError.from(errno: errno, path: dir, operation: "open folder") }
        defer { close(dirFD) }
        let tmp = try TempFile(in: dirFD, folderPath: dir, store: storeName, source: label)
        var keep = false
        defer { if !keep { tmp.discard() } }
        let hasher = SHA256Hasher()
        let size = try ChunkPipeline(src: fd, path: label, sink: tmp).run(hasher: hasher, progress: nil)
        try tmp.sync()
        try tmp.publish(into: dirFD, as: name, path: target)
        keep = true
        return (hasher.finalize(), size)
    }
}
