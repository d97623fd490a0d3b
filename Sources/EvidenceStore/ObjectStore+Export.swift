import EvidenceCore
import Glibc

extension ObjectStore {
    /// Copies a stored object out to `target` (for bundles) in one streaming pass that also
    /// re-hashes it: temp file beside `target`, fsync, read-only, rename. Returns what was read,
    /// so the caller can refuse a copy whose hash is not the object's name. The object is read
    /// through its folder (`openObject`), the copy made and renamed relative to `target`'s folder.
    public func copyObject(_ digest: SHA256Digest, to target: String) throws(StoreError) -> (digest: SHA256Digest, size: Int64) {
        hooks.beforeUse(.export, objectPath(digest))
        let (src, _, path) = try openExisting(digest)
        defer { close(src) }
        return try ObjectExport.copy(fd: src, label: path, storeName: home, to: target)
    }
}
