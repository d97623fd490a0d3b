import EvidenceCore
import Glibc

extension ObjectStore {
    /// Copies a stored object out to `target` (for bundles) in one streaming pass that also
    /// re-hashes it: temp file beside `target`, fsync, read-only, rename. Returns what was read,
    /// so the caller can refuse a copy whose hash is not the object's name.
    public func copyObject(_ digest: SHA256Digest, to target: String) throws(StoreError) -> (digest: SHA256Digest, size: Int64) {
        let path = objectPath(digest)
        let src = open(path, O_RDONLY | O_CLOEXEC)
        guard src >= 0 else { throw StoreError.from(errno: errno, path: path, operation: "open") }
        defer { close(src) }
        let dir = String(target[..<(target.lastIndex(of: "/") ?? target.startIndex)])
        let tmp = try TempFile(directory: dir.isEmpty ? "." : dir, store: home, source: path)
        var keep = false
        defer { if !keep { tmp.discard() } }
        let hasher = SHA256Hasher()
        let size = try ChunkPipeline(src: src, path: path, sink: tmp).run(hasher: hasher, progress: nil)
        try tmp.sync()
        guard rename(tmp.path, target) == 0 else { throw StoreError.from(errno: errno, path: target, operation: "rename") }
        keep = true
        return (hasher.finalize(), size)
    }
}
