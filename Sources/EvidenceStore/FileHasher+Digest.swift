import EvidenceCore
import Glibc

extension FileHasher {
    /// Streaming digest of a file in another algorithm (the one a provider checks uploads
    /// with): one reused 1 MiB buffer, constant memory. Lowercase hex.
    public static func hexDigest(path: String, algorithm: EVPHasher.Algorithm) throws(StoreError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.from(errno: errno, path: path, operation: "open") }
        defer { close(fd) }
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        let hasher = EVPHasher(algorithm)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, bufferSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.from(errno: errno, path: path, operation: "read")
            }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        return Hex.encode(hasher.finalize())
    }
}
