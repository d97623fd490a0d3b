import EvidenceCore
import Glibc

/// Streaming SHA-256 of a file: `read(2)` into one reused buffer, sequential-read advice,
/// constant memory whatever the size.
public enum FileHasher {
    /// 1 MiB: large enough that syscall overhead vanishes, small enough to stay in L2/L3.
    public static let bufferSize = 1 << 20

    /// A read buffer for `bytes` of a file: the whole pages that hold them (one at least), at
    /// most `cap`. A small file's buffer is its own size, not the large files' one: a 1 MiB or
    /// 256 KiB block for each 100 KB file raised glibc's mmap threshold, after which these
    /// blocks came from (and stayed in) the heap.
    static func readBuffer(for bytes: Int64, cap: Int) -> Int {
        let page: Int64 = 4096
        return Int(min(Int64(cap), max(page, (min(bytes, Int64(cap)) + page - 1) / page * page)))
    }

    public struct Result: Sendable {
        public var digest: SHA256Digest
        public var size: Int64
    }

    /// Hashes the file at `path` (following symlinks, as `sha256sum` does).
    /// Refuses anything that is not a regular file without blocking on it.
    public static func hash(path: String, progress: ((Int64) -> Void)? = nil) throws(StoreError) -> Result {
        try hash(path: path, digests: [], progress: progress).result
    }

    /// `hash(path:)` with extra digests of the same read (`md5`, `sha1`, `sha512` → hex).
    public static func hash(path: String, digests: [DigestAlgorithm], progress: ((Int64) -> Void)? = nil)
        throws(StoreError) -> (result: Result, digests: [String: String]) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw StoreError.from(errno: errno, path: path, operation: "open") }
        defer { close(fd) }
        let st: SourceStat
        switch SourceStat.fstat(fd, path: path) {
        case .success(let s): st = s
        case .failure(let e): throw e
        }
        guard st.kind == .regular else {
            if st.kind == .directory { throw StoreError.isDirectory(path: path) }
            throw StoreError.notRegularFile(path: path, kind: st.kind.rawValue)
        }
        let hasher = SHA256Hasher()
        let extra = ExtraDigests(digests)
        let total = try ChunkPipeline(src: fd, path: path, sink: nil).run(hasher: hasher, extra: extra.isEmpty ? nil : extra, progress: progress)
        return (Result(digest: hasher.finalize(), size: total), extra.finalize())
    }

    /// Hashes from the current offset of an open regular file to its end.
    public static func hash(fd: Int32, path: String, progress: ((Int64) -> Void)? = nil) throws(StoreError) -> Result {
        let hasher = SHA256Hasher()
        let total = try ChunkPipeline(src: fd, path: path, sink: nil).run(hasher: hasher, progress: progress)
        return Result(digest: hasher.finalize(), size: total)
    }
}
