import COpenSSL
import Dispatch
import EvidenceCore
import Foundation

/// SHA-256 fetched from libcrypto's provider once. OpenSSL 3 fetches it again at every
/// `EVP_DigestInit_ex` given the legacy `EVP_sha256()` (a lock and a table lookup), which
/// dominated hashing a custody event of a few hundred bytes. A Swift global: made once, thread-safe.
/// `nonisolated(unsafe)`: an immutable libcrypto handle, which OpenSSL lets threads share.
nonisolated(unsafe) let fetchedSHA256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil) ?? evidence_evp_sha256()

/// Incremental SHA-256 over libcrypto's EVP interface (uses SHA-NI/AVX2 where the CPU has them).
/// Not thread-safe: one hasher per stream.
public final class SHA256Hasher {
    private let ctx: OpaquePointer

    public init() {
        guard let c = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        ctx = c
        precondition(EVP_DigestInit_ex(ctx, fetchedSHA256, nil) == 1, "EVP_DigestInit_ex(sha256) failed")
    }

    deinit { EVP_MD_CTX_free(ctx) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        precondition(EVP_DigestUpdate(ctx, base, bytes.count) == 1, "EVP_DigestUpdate failed")
    }

    public func update(_ data: some DataProtocol) {
        for region in data.regions {
            region.withUnsafeBytes { update($0) }
        }
    }

    /// Finishes the hash; the hasher must not be used afterwards.
    public func finalize() -> SHA256Digest {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        precondition(EVP_DigestFinal_ex(ctx, &out, &len) == 1 && len == 32, "EVP_DigestFinal_ex failed")
        return SHA256Digest(bytes: out)
    }

    /// One-shot hash of bytes in memory (custody events, manifests, proofs).
    public static func hash(_ data: some DataProtocol) -> SHA256Digest {
        let h = SHA256Hasher()
        h.update(data)
        return h.finalize()
    }
}

/// Other digests some providers verify uploads with (Box SHA-1, ShareFile MD5).
public final class EVPHasher {
    public enum Algorithm: Sendable { case sha1, md5, sha256, sha512 }
    private let ctx: OpaquePointer
    private let size: Int

    public init(_ algorithm: Algorithm) {
        guard let c = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        ctx = c
        let md: OpaquePointer?
        switch algorithm {
        case .sha1: md = evidence_evp_sha1(); size = 20
        case .md5: md = evidence_evp_md5(); size = 16
        case .sha256: md = evidence_evp_sha256(); size = 32
        case .sha512: md = evidence_evp_sha512(); size = 64
        }
        precondition(EVP_DigestInit_ex(ctx, md, nil) == 1, "EVP_DigestInit_ex failed")
    }

    deinit { EVP_MD_CTX_free(ctx) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        precondition(EVP_DigestUpdate(ctx, base, bytes.count) == 1, "EVP_DigestUpdate failed")
    }

    public func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        var len: UInt32 = 0
        precondition(EVP_DigestFinal_ex(ctx, &out, &len) == 1, "EVP_DigestFinal_ex failed")
        return out
    }
}

extension EVPHasher {
    public convenience init(digest algorithm: DigestAlgorithm) {
        switch algorithm {
        case .sha1: self.init(.sha1)
        case .md5: self.init(.md5)
        case .sha256: self.init(.sha256)
        case .sha512: self.init(.sha512)
        }
    }
}

/// The extra digests of one read (`DigestAlgorithm.extras`), fed the same chunks as the SHA-256,
/// each on its own thread while the calling thread hashes SHA-256: MD5, the slowest, first.
public final class ExtraDigests {
    let algorithms: [DigestAlgorithm]
    let hashers: [EVPHasher]

    public init(_ algorithms: [DigestAlgorithm]) {
        let wanted = Set(algorithms)
        self.algorithms = DigestAlgorithm.extras.filter { wanted.contains($0) }
        hashers = self.algorithms.map { EVPHasher(digest: $0) }
    }

    public var isEmpty: Bool { hashers.isEmpty }

    /// Hashes `chunk` into every extra digest and, in parallel, into `sha256`.
    func update(_ chunk: UnsafeRawBufferPointer, with sha256: SHA256Hasher) {
        if hashers.isEmpty { sha256.update(chunk); return }
        // Each hasher is fed by exactly one iteration, and the chunk outlives concurrentPerform,
        // which returns only when every iteration has.
        struct Work: @unchecked Sendable { let hashers: [EVPHasher]; let sha256: SHA256Hasher; let chunk: UnsafeRawBufferPointer }
        let w = Work(hashers: hashers, sha256: sha256, chunk: chunk)
        DispatchQueue.concurrentPerform(iterations: w.hashers.count + 1) { i in
            if i < w.hashers.count { w.hashers[i].update(w.chunk) } else { w.sha256.update(w.chunk) }
        }
    }

    /// The digests by name (`md5`, `sha1`, `sha512`), lowercase hex.
    public func finalize() -> [String: String] {
        var out: [String: String] = [:]
        for (a, h) in zip(algorithms, hashers) { out[a.rawValue] = Hex.encode(h.finalize()) }
        return out
    }
}
