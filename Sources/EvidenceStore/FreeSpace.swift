import Glibc

/// The free-space rule of every store kind (the local store, the S3 spool, the portal's
/// downloads): a copy, spool or download of `size` bytes into a folder is refused before a
/// byte is written when it would leave less than the margin free (2% of the file system, at
/// most 64 MiB: room for the catalog's WAL and the proofs, certificates and manifests still to
/// come), counted as an unprivileged writer sees it (`f_bavail`). A sparse or huge file would
/// otherwise fill the disk the catalog and every other item share.
public enum FreeSpace {
    /// Throws `.insufficientSpace` naming `path` and `storeName` when `size` bytes would not fit
    /// in the file system of the folder `folder` (a descriptor) with the margin left free.
    public static func check(in folder: Int32, for size: Int64, path: String, storeName: String) throws(StoreError) {
        guard size > 0 else { return }
        var fs = statvfs()
        guard fstatvfs(folder, &fs) == 0 else { return }
        let unit = Int64(fs.f_frsize > 0 ? fs.f_frsize : fs.f_bsize)
        let free = Int64(fs.f_bavail) * unit
        let margin = min(Int64(64) << 20, Int64(fs.f_blocks) * unit / 50)
        if size > free - margin {
            throw .insufficientSpace(path: path, store: storeName, needed: size, free: free, margin: margin)
        }
    }
}
