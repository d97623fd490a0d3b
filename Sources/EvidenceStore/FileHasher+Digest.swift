import EvidenceCore
import Glibc

extension FileHasher {
    /// Streaming digest of a file in another algorithm (the one a provider checks uploads
    /// with): one reused buffer (1 MiB, or the file's size when smaller), constant memory. Lowercase hex.
    public static func hexDigest(path: String, algorithm: EVPHasher.Algorithm) throws(StoreError) -> String {
        Hex.encode(try digest(path: path, algorithm: algorithm))
    }

    /// Raw digest of `length` bytes at `offset` (to the end when nil): one part of a chunked
    /// upload, for providers that check each part (Box SHA-1 `Digest`, ShareFile chunk MD5).
    public static func digest(path: String, algorithm: EVPHasher.Algorithm, offset: Int64 = 0,
                              length: Int64? = nil) throws(StoreError) -> [UInt8] {
        let hasher = EVPHasher(algorithm)
        try readRange(path: path, offset: offset, length: length) { hasher.update($0) }
        return hasher.finalize()
    }

    /// Dropbox's `content_hash`: SHA-256 over the concatenated SHA-256 digests of each 4 MiB
    /// block (an empty file hashes no blocks: SHA-256 of nothing). Lowercase hex. With a range,
    /// the hash of those bytes alone (what Dropbox checks for one append of a session).
    public static func dropboxContentHash(path: String, offset: Int64 = 0, length: Int64? = nil) throws(StoreError) -> String {
        let block = 4 << 20
        let outer = EVPHasher(.sha256)
        var inner = EVPHasher(.sha256)
        var filled = 0
        try readRange(path: path, offset: offset, length: length) { bytes in
            var rest = bytes
            while !rest.isEmpty {
                let take = min(block - filled, rest.count)
                inner.update(UnsafeRawBufferPointer(rebasing: rest[0..<take]))
                filled += take
                rest = UnsafeRawBufferPointer(rebasing: rest[take...])
                if filled == block {
                    inner.finalize().withUnsafeBytes { outer.update($0) }
                    inner = EVPHasher(.sha256)
                    filled = 0
                }
            }
        }
        if filled > 0 { inner.finalize().withUnsafeBytes { outer.update($0) } }
        return Hex.encode(outer.finalize())
    }

    /// Reads a byte range through one reused buffer, handing each piece to `body`.
    static func readRange(path: String, offset: Int64, length: Int64?,
                          _ body: (UnsafeRawBufferPointer) -> Void) throws(StoreError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.from(errno: errno, path: path, operation: "open") }
        defer { close(fd) }
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        var remaining = length ?? Int64.max
        // The archive digests every file it uploads: a small one gets a buffer of its size.
        var info = stat()
        let size = readBuffer(for: length ?? (fstat(fd, &info) == 0 ? max(0, Int64(info.st_size) - offset) : remaining),
                              cap: bufferSize)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 4096)
        defer { buffer.deallocate() }
        var position = offset
        while remaining > 0 {
            let n = pread(fd, buffer.baseAddress, Int(min(Int64(size), remaining)), off_t(position))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.from(errno: errno, path: path, operation: "read")
            }
            if n == 0 { break }
            body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            position += Int64(n); remaining -= Int64(n)
        }
    }
}
