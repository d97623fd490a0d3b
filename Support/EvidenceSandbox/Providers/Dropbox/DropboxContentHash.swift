import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import Hummingbird

/// Dropbox's `content_hash`: the file is split into 4 MiB blocks (the last one may be
/// shorter), each block is hashed with SHA-256, and the hex of the SHA-256 of the
/// concatenated binary block digests is the content hash. An empty file has no block, so its
/// hash is the SHA-256 of the empty string.
///
/// The hasher keeps the hex digest of every finished block so that upload sessions (whose
/// pieces all start on a 4 MiB boundary) can store per-piece blocks and combine them at finish.
struct DropboxContentHasher {
    static let blockSize = 4 * 1024 * 1024

    private var current = SHA256Hasher()
    private var inBlock = 0
    private(set) var blocks: [String] = []

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        while rest.count > 0 {
            let take = min(rest.count, Self.blockSize - inBlock)
            current.update(UnsafeRawBufferPointer(rebasing: rest[0..<take]))
            inBlock += take
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            if inBlock == Self.blockSize {
                blocks.append(current.finalize().hex)
                current = SHA256Hasher()
                inBlock = 0
            }
        }
    }

    /// The hex digests of every block, including a final partial block.
    mutating func finish() -> [String] {
        if inBlock > 0 {
            blocks.append(current.finalize().hex)
            current = SHA256Hasher()
            inBlock = 0
        }
        return blocks
    }

    /// The content hash of a file made of `blocks` (hex block digests, in order).
    static func combine(_ blocks: [String]) -> String {
        var all: [UInt8] = []
        all.reserveCapacity(blocks.count * 32)
        for b in blocks { all.append(contentsOf: Hex.decode(b) ?? []) }
        return SHA256Hasher.hash(all).hex
    }

    /// Block digests of a whole file on disk (used after a simulated corruption).
    static func blocks(ofFile path: String) throws -> [String] {
        var hasher = DropboxContentHasher()
        try DropboxFiles.read(path) { hasher.update($0) }
        return hasher.finish()
    }
}

/// Small POSIX file helpers for the Dropbox emulation's blobs and session parts.
enum DropboxFiles {
    struct IOError: Error, CustomStringConvertible {
        var description: String
    }

    /// What arrived in one request body.
    struct Received {
        var size: Int64
        var blocks: [String]
        /// The body was longer than the limit; reading stopped.
        var exceeded: Bool
    }

    /// Streams the request body into `path` starting at `offset` (the file is truncated
    /// there first, dropping anything a crashed earlier attempt left), hashing Dropbox blocks
    /// as the bytes arrive. Stops (with `exceeded`) once more than `limit` bytes came.
    static func receive(_ request: Request, into path: String, at offset: Int64, limit: Int64) async throws -> Received {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw IOError(description: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(offset)) == 0, lseek(fd, off_t(offset), SEEK_SET) >= 0 else {
            throw IOError(description: "seek \(path): \(String(cString: strerror(errno)))")
        }
        var hasher = DropboxContentHasher()
        var size: Int64 = 0
        for try await buffer in request.body {
            size += Int64(buffer.readableBytes)
            if size > limit {
                _ = ftruncate(fd, off_t(offset))
                return Received(size: size, blocks: [], exceeded: true)
            }
            try buffer.withUnsafeReadableBytes { raw in
                hasher.update(raw)
                try writeAll(fd, raw, path: path)
            }
        }
        guard fsync(fd) == 0 else { throw IOError(description: "fsync \(path): \(String(cString: strerror(errno)))") }
        return Received(size: size, blocks: hasher.finish(), exceeded: false)
    }

    static func writeAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer, path: String) throws {
        var done = 0
        while done < raw.count {
            let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw IOError(description: "write \(path): \(String(cString: strerror(errno)))")
            }
            done += n
        }
    }

    /// Calls `body` with successive 1 MiB pieces of the file.
    static func read(_ path: String, from offset: Int64 = 0, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw IOError(description: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        if offset > 0 { lseek(fd, off_t(offset), SEEK_SET) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw IOError(description: "read \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { return }
            try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }

    /// Flips every bit of the byte in the middle of the file's first `size` bytes, starting
    /// at `from` (what a corruption in transit of that piece looks like).
    static func corrupt(_ path: String, from: Int64, size: Int64) throws {
        guard size > 0 else { return }
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw IOError(description: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let at = off_t(from + size / 2)
        var byte: UInt8 = 0
        guard pread(fd, &byte, 1, at) == 1 else { throw IOError(description: "pread \(path)") }
        byte ^= 0xFF
        guard pwrite(fd, &byte, 1, at) == 1 else { throw IOError(description: "pwrite \(path)") }
        _ = fsync(fd)
    }

    static func size(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// A streamed response body over a file (downloads can be larger than memory allows).
    static func responseBody(_ path: String, size: Int64) -> ResponseBody {
        ResponseBody(contentLength: Int(size)) { writer in
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw IOError(description: "open \(path)") }
            defer { close(fd) }
            var remaining = size
            while remaining > 0 {
                var buffer = ByteBuffer()
                buffer.reserveCapacity(min(Int(remaining), 1 << 20))
                let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: min(Int(remaining), 1 << 20)) { raw in
                    max(0, Glibc.read(fd, raw.baseAddress!, min(raw.count, Int(remaining))))
                }
                if n == 0 { throw IOError(description: "short read \(path)") }
                remaining -= Int64(n)
                try await writer.write(buffer)
            }
            try await writer.finish(nil)
        }
    }
}
