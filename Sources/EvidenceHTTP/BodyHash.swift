import COpenSSL
import EvidenceCore

/// SHA-256 of a response body as it streams in (`HTTPRequest.digestBody`), over libcrypto's
/// EVP interface. One per transfer attempt, used by its one thread.
final class BodyHash {
    /// Fetched once (see EvidenceStore's SHA256Hasher for why).
    /// `nonisolated(unsafe)`: an immutable libcrypto handle, which OpenSSL lets threads share.
    nonisolated(unsafe) private static let md: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil) ?? evidence_evp_sha256()

    private let ctx: OpaquePointer
    private(set) var length: Int64 = 0

    init() {
        guard let c = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        ctx = c
        precondition(EVP_DigestInit_ex(ctx, Self.md, nil) == 1, "EVP_DigestInit_ex(sha256) failed")
    }

    deinit { EVP_MD_CTX_free(ctx) }

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        precondition(EVP_DigestUpdate(ctx, base, bytes.count) == 1, "EVP_DigestUpdate failed")
        length += Int64(bytes.count)
    }

    /// The digest; the hasher is not used afterwards.
    func finish() -> SHA256Digest {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        precondition(EVP_DigestFinal_ex(ctx, &out, &len) == 1 && len == 32, "EVP_DigestFinal_ex failed")
        return SHA256Digest(bytes: out)
    }
}
