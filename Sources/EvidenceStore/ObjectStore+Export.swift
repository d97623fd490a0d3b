import EvidenceCore
import Glibc

extension ObjectStore {
    /// Copies a stored object out to `target` (for bundles) in one streaming pass that also
    /// re-hashes it: temp file beside `target`, fsync, read-only, rename. Returns what was read,
    /// so the caller can refuse a copy whose hash is not the object's name. The object is read
    /// through its folder (`openObject`), the copy made and renamed relative to `target`'s folder.
    public func copyObject(_ digest: SHA256Digest, to target: String) throws(StoreError) -> (digest: SHA256Digest, size: Int64) {
        let path = objectPath(digest)
        hooks.beforeUse(.export, path)
        let (src, _) = try openObject(digest)
        defer { close(src) }
        let slash = target.lastIndex(of: "/")
        let dir = slash.map { String(target[..<$0]) } ?? "."
        let name = slash.map { String(target[target.index(after: $0)...]) } ?? target
        let dirFD = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirFD >= 0 else { throw StoreError.from(errno: errno, path: dir, operation: "open folder") }
        defer { close(dirFD) }
        let tmp = try TempFile(in: dirFD, folderPath: dir, store: home, source: path)
        var keep = false
        defer { if !keep { tmp.discard() } }
        let hasher = SHA256Hasher()
        let size = try ChunkPipeline(src: src, path: path, sink: tmp).run(hasher: hasher, progress: nil)
        try tmp.sync()
        try tmp.publish(into: dirFD, as: name, path: target)
        keep = true
        return (hasher.finalize(), size)
    }
}
