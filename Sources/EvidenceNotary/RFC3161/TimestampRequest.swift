import COpenSSL
import EvidenceCore
import Foundation

/// The hash a time-stamp is over: SHA-256 (everything this program stamps first) or SHA-512
/// (an RFC 4998 hash-tree renewal's new chain).
public struct Imprint: Sendable, Codable, Equatable, Hashable {
    public enum Algorithm: String, Sendable, Codable, CaseIterable {
        case sha256
        case sha512

        public var size: Int { self == .sha256 ? 32 : 64 }
        var nid: Int32 { self == .sha256 ? NID_sha256 : NID_sha512 }
        public var label: String { self == .sha256 ? "SHA-256" : "SHA-512" }
        /// The algorithm's hash of `bytes`.
        public func hash(_ bytes: [UInt8]) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 64)
            var length: UInt32 = 0
            let md = self == .sha256 ? evidence_evp_sha256() : evidence_evp_sha512()
            let ok = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &out, &length, md, nil) }
            precondition(ok == 1 && Int(length) == size, "EVP_Digest failed")
            return Array(out.prefix(size))
        }
    }

    public let algorithm: Algorithm
    /// Lowercase hex of the hash.
    public let hex: String

    public init(_ digest: SHA256Digest) { algorithm = .sha256; hex = digest.hex }

    public init?(algorithm: Algorithm, bytes: [UInt8]) {
        guard bytes.count == algorithm.size else { return nil }
        self.algorithm = algorithm
        hex = Hex.encode(bytes)
    }

    public var bytes: [UInt8] { Hex.decode(hex) ?? [] }
    /// The SHA-256 digest, when that is the algorithm.
    public var sha256: SHA256Digest? { algorithm == .sha256 ? SHA256Digest(hex: hex) : nil }
}

/// An RFC 3161 `TimeStampReq` for one digest, ready to POST with
/// `Content-Type: application/timestamp-query`.
public struct TimestampRequest: Sendable, Codable, Equatable {
    public let imprint: Imprint
    /// The SHA-256 digest the request is over (nil for a SHA-512 request).
    public var digest: SHA256Digest? { imprint.sha256 }
    /// Lowercase hex of the 8 random bytes sent as the request nonce.
    public let nonce: String
    /// Whether the TSA was asked to include its signing certificate in the token.
    public let certReq: Bool
    /// DER `TimeStampReq`: version 1, message imprint, nonce, certReq.
    public let der: Data

    /// Builds a request with a fresh 64-bit nonce from `RAND_bytes`.
    public static func make(digest: SHA256Digest, certReq: Bool = true) throws(TimestampError) -> TimestampRequest {
        try make(imprint: Imprint(digest), certReq: certReq)
    }

    public static func make(imprint: Imprint, certReq: Bool = true) throws(TimestampError) -> TimestampRequest {
        ERR_clear_error()
        var nonce = [UInt8](repeating: 0, count: 8)
        guard RAND_bytes(&nonce, Int32(nonce.count)) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("RAND_bytes failed"))
        }
        let der = try RFC3161Request.encode(imprint: imprint, nonce: nonce, certReq: certReq)
        return TimestampRequest(imprint: imprint, nonce: Hex.encode(nonce), certReq: certReq, der: der)
    }
}

/// Building `TS_REQ` objects (for the wire and for `TS_REQ_to_TS_VERIFY_CTX`).
enum RFC3161Request {
    /// A new TS_REQ (caller frees with `TS_REQ_free`): version 1, the imprint, the nonce when
    /// given, certReq.
    static func build(imprint: Imprint, nonce: [UInt8]?, certReq: Bool) throws(TimestampError) -> OpaquePointer {
        let hash = imprint.bytes
        let hashAlgorithm = imprint.algorithm
        guard hash.count == imprint.algorithm.size else {
            throw TimestampError(.requestFailed, "digest is not \(imprint.algorithm.size) bytes of \(imprint.algorithm.label)")
        }
        guard let req = TS_REQ_new() else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_REQ_new failed"))
        }
        var ok = false
        defer { if !ok { TS_REQ_free(req) } }

        guard TS_REQ_set_version(req, 1) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_REQ_set_version failed"))
        }

        // Message imprint: AlgorithmIdentifier { sha256 or sha512, NULL } + the hash.
        guard let imprint = TS_MSG_IMPRINT_new() else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("TS_MSG_IMPRINT_new failed"))
        }
        defer { TS_MSG_IMPRINT_free(imprint) }
        guard let algorithm = X509_ALGOR_new() else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("X509_ALGOR_new failed"))
        }
        defer { X509_ALGOR_free(algorithm) }
        // X509_ALGOR_set0 takes the (static) hash object; a NULL parameter needs no value.
        guard let object = OBJ_nid2obj(hashAlgorithm.nid),
              X509_ALGOR_set0(algorithm, object, V_ASN1_NULL, nil) == 1 else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("X509_ALGOR_set0(\(hashAlgorithm.rawValue)) failed"))
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

    static func encode(imprint: Imprint, nonce: [UInt8]?, certReq: Bool) throws(TimestampError) -> Data {
        let req = try build(imprint: imprint, nonce: nonce, certReq: certReq)
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
