import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import Hummingbird
import NIOCore

/// Plumbing shared by the Box and ShareFile emulations (one namespace so the two do not each
/// carry a copy): small bodies, streaming a request body to disk while hashing it, the
/// "corrupted in transit" byte flip, atomic JSON state files, streamed file downloads.
enum BoxShareFileSupport {
    /// Collects a small body (JSON, form); nil when it is larger than `limit`.
    static func collect(_ request: Request, limit: Int = SandboxRequestContext.maxJSONBody) async throws -> Data? {
        var data = Data()
        var tooLarge = false
        for try await buffer in request.body {
            if tooLarge { continue }
            if data.count + buffer.readableBytes > limit { tooLarge = true; data = Data(); continue }
            data.append(contentsOf: buffer.readableBytesView)
        }
        return tooLarge ? nil : data
    }

    /// Reads and discards whatever is left of a body (so an early refusal does not reset the
    /// client's upload half-way).
    static func drain(_ request: Request) async {
        do { for try await _ in request.body {} } catch {}
    }

    /// What `receive` wrote: byte count, and the digests of exactly those bytes (lowercase hex).
    struct Received: Sendable {
        var size: Int64
        var sha1: String
        var md5: String
        /// The body was longer than the limit: the file is incomplete and must be discarded.
        var overflow: Bool
    }

    /// Streams the request body into a new file at `path` (created 0600, replaced if present),
    /// hashing SHA-1 and MD5 on the way, never holding more than one buffer in memory.
    /// Bytes past `limit` are read and dropped and `overflow` is set.
    static func receive(_ request: Request, to path: String, limit: Int64) async throws -> Received {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BoxShareFileIOError("open \(path): errno \(errno)") }
        var closed = false
        defer { if !closed { close(fd) } }
        let sha1 = EVPHasher(.sha1)
        let md5 = EVPHasher(.md5)
        var size: Int64 = 0
        var overflow = false
        for try await buffer in request.body {
            if overflow { continue }
            if size + Int64(buffer.readableBytes) > limit { overflow = true; continue }
            try buffer.withUnsafeReadableBytes { raw in
                sha1.update(raw)
                md5.update(raw)
                try writeAll(fd: fd, raw, path: path)
            }
            size += Int64(buffer.readableBytes)
        }
        guard fsync(fd) == 0 else { throw BoxShareFileIOError("fsync \(path): errno \(errno)") }
        close(fd)
        closed = true
        return Received(size: size, sha1: Hex.encode(sha1.finalize()), md5: Hex.encode(md5.finalize()), overflow: overflow)
    }

    static func writeAll(fd: Int32, _ raw: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw BoxShareFileIOError("write \(path): errno \(errno)")
            }
            offset += n
        }
    }

    /// Flips every bit of the byte in the middle of the file (a one-byte corruption in
    /// transit). Empty files have nothing to corrupt.
    static func flipOneByte(path: String) throws {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw BoxShareFileIOError("open \(path): errno \(errno)") }
        defer { close(fd) }
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0 else { return }
        let at = size / 2
        var byte: UInt8 = 0
        guard pread(fd, &byte, 1, at) == 1 else { throw BoxShareFileIOError("pread \(path): errno \(errno)") }
        byte ^= 0xFF
        guard pwrite(fd, &byte, 1, at) == 1 else { throw BoxShareFileIOError("pwrite \(path): errno \(errno)") }
        _ = fsync(fd)
    }

    /// SHA-1 and MD5 of a stored file, streamed (lowercase hex).
    static func digests(path: String) throws -> (sha1: String, md5: String) {
        (try FileHasher.hexDigest(path: path, algorithm: .sha1), try FileHasher.hexDigest(path: path, algorithm: .md5))
    }

    /// `cat parts… > path`, streamed, returning the SHA-1 and MD5 of the result.
    static func concatenate(_ parts: [String], into path: String) throws -> (size: Int64, sha1: String, md5: String) {
        let out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw BoxShareFileIOError("open \(path): errno \(errno)") }
        defer { close(out) }
        let sha1 = EVPHasher(.sha1)
        let md5 = EVPHasher(.md5)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        for part in parts {
            let fd = open(part, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw BoxShareFileIOError("open \(part): errno \(errno)") }
            defer { close(fd) }
            while true {
                let n = read(fd, buffer.baseAddress, buffer.count)
                if n < 0 { if errno == EINTR { continue }; throw BoxShareFileIOError("read \(part): errno \(errno)") }
                if n == 0 { break }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                sha1.update(chunk)
                md5.update(chunk)
                try writeAll(fd: out, chunk, path: path)
                total += Int64(n)
            }
        }
        guard fsync(out) == 0 else { throw BoxShareFileIOError("fsync \(path): errno \(errno)") }
        return (total, Hex.encode(sha1.finalize()), Hex.encode(md5.finalize()))
    }

    /// Moves `from` to `to` (same file system) and makes the rename durable.
    static func move(_ from: String, to: String) throws {
        guard rename(from, to) == 0 else { throw BoxShareFileIOError("rename \(from) → \(to): errno \(errno)") }
        let dir = (to as NSString).deletingLastPathComponent
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { _ = fsync(dfd); close(dfd) }
    }

    static func fileSize(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// A request header by (case-insensitive) name.
    static func header(_ request: Request, _ name: String) -> String? {
        let key = name.lowercased()
        return request.headers.first { $0.name.canonicalName == key }?.value
    }

    /// Where `needle` first occurs in `haystack[from...]` (memchr for the first byte, then memcmp).
    static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard let base = haystack.baseAddress, !needle.isEmpty else { return nil }
        let count = haystack.count
        var i = from
        return needle.withUnsafeBytes { n -> Int? in
            while i + needle.count <= count {
                guard let hit = memchr(base + i, Int32(needle[0]), count - i - needle.count + 1) else { return nil }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + at, n.baseAddress!, needle.count) == 0 { return at }
                i = at + 1
            }
            return nil
        }
    }

    /// The bearer token of `Authorization: Bearer <token>`, if any.
    static func bearer(_ request: Request) -> String? {
        guard let value = request.headers[.authorization] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    /// A file's bytes, streamed from disk in 1 MiB buffers.
    static func fileResponse(path: String, size: Int64, contentType: String = "application/octet-stream",
                             filename: String) -> Response {
        var headers: HTTPFields = [:]
        headers[.contentType] = contentType
        let ascii = String(filename.unicodeScalars.map { $0.isASCII && $0 != "\"" && $0.value >= 0x20 ? Character($0) : "_" })
        let encoded = filename.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ascii
        headers[.contentDisposition] = "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
        let body = ResponseBody(contentLength: Int(size)) { writer in
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw BoxShareFileIOError("open \(path): errno \(errno)") }
            defer { close(fd) }
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 { if errno == EINTR { continue }; throw BoxShareFileIOError("read \(path): errno \(errno)") }
                if n == 0 { break }
                try await writer.write(ByteBuffer(bytes: chunk[0..<n]))
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// The sandbox's stand-in for a provider's login and consent page: it approves at once and
    /// shows the authorization code in `<code id="auth-code">`.
    static func authorizePage(provider: String, code: String, redirect: String?) -> Response {
        var html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>\(provider) sandbox authorization</title></head><body>\n"
        html += "<h1>\(provider) sandbox</h1>\n<p>Access granted. Authorization code:</p>\n<code id=\"auth-code\">\(code)</code>\n"
        if let redirect {
            let escaped = redirect.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            html += "<p><a id=\"redirect\" href=\"\(escaped)\">Continue</a></p>\n"
        }
        html += "</body></html>\n"
        return .bytes(Array(html.utf8), contentType: "text/html; charset=utf-8")
    }

    /// base64url(SHA-256(verifier)) without padding, as PKCE S256 compares it.
    static func pkceS256(_ verifier: String) -> String {
        let h = EVPHasher(.sha256)
        Array(verifier.utf8).withUnsafeBytes { h.update($0) }
        return Data(h.finalize()).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Uppercase or lowercase hex of `count` random bytes from the seeded source.
    static func hex(_ random: SandboxRandom, bytes count: Int, uppercase: Bool = false) -> String {
        let s = Hex.encode(random.bytes(count))
        return uppercase ? s.uppercased() : s
    }
}

/// A local I/O failure while storing provider state (turned into a 500 by the recorder).
struct BoxShareFileIOError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A lock around a Codable state value that is persisted on every change.
final class BoxShareFilePersisted<State: Codable & Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State
    let path: String

    init(path: String, initial: () -> State) throws {
        self.path = path
        if let loaded = try StateFile.load(State.self, from: path) {
            state = loaded
        } else {
            state = initial()
            try StateFile.save(state, to: path)
        }
    }

    /// A consistent copy of the state.
    var value: State {
        lock.lock(); defer { lock.unlock() }
        return state
    }

    /// Applies `change` and persists the result; when `change` throws nothing changes.
    /// Returning without changing still rewrites the file (cheap, and keeps the code simple).
    func update<R>(_ change: (inout State) throws -> R) throws -> R {
        lock.lock(); defer { lock.unlock() }
        var copy = state
        let result = try change(&copy)
        try StateFile.save(copy, to: path)
        state = copy
        return result
    }

    /// Reads under the lock without persisting.
    func read<R>(_ body: (State) throws -> R) rethrows -> R {
        lock.lock(); defer { lock.unlock() }
        return try body(state)
    }
}
