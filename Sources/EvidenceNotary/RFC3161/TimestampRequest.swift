import COpenSSL
import EvidenceCore
import Foundation

/// An RFC 3161 `TimeStampReq` for one SHA-256 digest, ready to POST with
/// `Content-Type: application/timestamp-query`.
public struct TimestampRequest: Sendable, Codable, Equatable {
    public let digest: SHA256Digest
    /// Lowercase hex of the 8 random bytes sent as the request nonce.
    public let nonce: String
    /// Whether the TSA was asked to include its signing certificate in the token.
    public let certReq: Bool
    /// DER `TimeStampReq`: version 1, SHA-256 message imprint, nonce, certReq.
    public let der: Data

    /// Builds a request with a fresh 64-bit nonce from `RAND_bytes`.
    public static func make(digest: SHA256Digest, certReq: Bool = true) throws(TimestampError) -> TimestampRequest {
        ERR_clear_error()
        var nonce = [UInt8](repeating: 0, count: 8)
        guard RAND_bytes(&nonce, Int32(nonce.count)) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("RAND_bytes failed"))
        }
        let der = try RFC3161Request.encode(digest: digest, nonce: nonce, certReq: certReq)
        return TimestampRequest(digest: digest, nonce: Hex.encode(nonce), certReq: certReq, der: der)
    }
}

/// Building `TS_REQ` objects (for the wire and for `TS_REQ_to_TS_VERIFY_CTX`).
enum RFC3161Request {
    /// A new TS_REQ (caller frees with `TS_REQ_free`): version 1, SHA-256 imprint of `digest`,
    /// the nonce when given, certReq.
    static func build(digest: SHA256Digest, nonce: [UInt8]?, certReq: Bool) throws(TimestampError) -> OpaquePointer {
        guard let hash = Hex.decode(digest.hex), hash.count == 32 else {
            throw TimestampError(.requestFailed, "digest is not 32 bytes of SHA-256")
        }
        guard let req = TS_REQ_new() else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_REQ_new failed"))
        }
        var ok = false
        defer { if !ok { TS_REQ_free(req) } }

        guard TS_REQ_set_version(req, 1) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_REQ_set_version failed"))
        }

        // Message imprint: AlgorithmIdentifier { sha256, NULL } + 32-byte hash.
        guard let imprint = TS_MSG_IMPRINT_new() else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_MSG_IMPRINT_new failed"))
        }
        defer { TS_MSG_IMPRINT_free(imprint) }
        guard let algorithm = X509_ALGOR_new() else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("X509_ALGOR_new failed"))
        }
        defer { X509_ALGOR_free(algorithm) }
        // X509_ALGOR_set0 takes the (static) sha256 object; a NULL parameter needs no value.
        guard let sha256 = OBJ_nid2obj(NID_sha256),
              X509_ALGOR_set0(algorithm, sha256, V_ASN1_NULL, nil) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("X509_ALGOR_set0(sha256) failed"))
        }
        // The setters below copy their arguments.
        guard TS_MSG_IMPRINT_set_algo(imprint, algorithm) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_MSG_IMPRINT_set_algo failed"))
        }
        var hashBytes = hash
        guard TS_MSG_IMPRINT_set_msg(imprint, &hashBytes, Int32(hashBytes.count)) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_MSG_IMPRINT_set_msg failed"))
        }
        guard TS_REQ_set_msg_imprint(req, imprint) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_REQ_set_msg_imprint failed"))
        }

        if let nonce {
            guard let integer = OpenSSLSupport.makeInteger(nonce) else {
                throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("nonce encoding failed"))
            }
            defer { ASN1_INTEGER_free(integer) }
            guard TS_REQ_set_nonce(req, integer) == 1 else {
                throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_REQ_set_nonce failed"))
            }
        }
        guard TS_REQ_set_cert_req(req, certReq ? 1 : 0) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_REQ_set_cert_req failed"))
        }
        ok = true
        return req
    }

    static func encode(digest: SHA256Digest, nonce: [UInt8]?, certReq: Bool) throws(TimestampError) -> Data {
        let req = try build(digest: digest, nonce: nonce, certReq: certReq)
        defer { TS_REQ_free(req) }
        let length = i2d_TS_REQ(req, nil)
        guard length > 0 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("i2d_TS_REQ failed"))
        }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buf -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buf.baseAddress
            return i2d_TS_REQ(req, &cursor)
        }
        guard written == length else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("i2d_TS_REQ wrote \(written) of \(length) bytes"))
        }
        return Data(bytes)
    }
}
