import COpenSSL
import Foundation
import Synchronization

/// Certificates around RFC 3161 tokens: SHA-256 fingerprints of PEM files (what an auditor
/// compares with the TSA's published fingerprint) and the signer certificate a token carries
/// (handed to `openssl ts -verify -untrusted`, never trusted by itself).
public enum TSACertificates {
    public struct Info: Sendable, Equatable, Codable {
        /// RFC 2253 subject (`CN=Example TSA,O=Example`).
        public let subject: String
        /// SHA-256 over the DER certificate, upper-case hex in colon-separated pairs, as
        /// `openssl x509 -noout -fingerprint -sha256` prints it.
        public let sha256: String
    }

    /// Every certificate in a PEM file, in file order. Throws when the file cannot be read or holds none.
    public static func read(pemFile: String) throws(TimestampError) -> [Info] {
        guard let data = FileManager.default.contents(atPath: pemFile) else {
            throw TimestampError(.trustConfiguration, "\(pemFile): cannot read")
        }
        let infos = certificates(pem: data).map(info)
        guard !infos.isEmpty else { throw TimestampError(.trustConfiguration, "\(pemFile): no PEM certificate in it") }
        return infos
    }

    /// The self-signed (root) certificates of a PEM file, in file order: a certificate that names
    /// itself as issuer and whose signature its own key verifies (`X509_check_issued(c, c)`).
    /// Throws as `read` does.
    public static func roots(pemFile: String) throws(TimestampError) -> [Info] {
        guard let data = FileManager.default.contents(atPath: pemFile) else {
            throw TimestampError(.trustConfiguration, "\(pemFile): cannot read")
        }
        let certs = certificates(pem: data)
        defer { ERR_clear_error() }
        guard !certs.isEmpty else { throw TimestampError(.trustConfiguration, "\(pemFile): no PEM certificate in it") }
        return certs.compactMap { cert -> Info? in
            defer { X509_free(cert) }
            // X509_check_issued also checks the key identifiers and key usage; 0 is X509_V_OK.
            guard X509_check_issued(cert, cert) == 0, X509_verify(cert, X509_get0_pubkey(cert)) == 1 else { return nil }
            return describe(cert)
        }
    }

    /// The signer certificate embedded in a DER `TimeStampResp`, as PEM; nil when the token
    /// carries none (the request did not set certReq) or the bytes are not a reply.
    public static func signerPEM(response: Data) -> Data? {
        signer(of: response).pem
    }

    /// When the certificate that signed the token in a DER `TimeStampResp` expires (its
    /// notAfter); nil when the token carries none. After that date the token verifies only
    /// as of an earlier one: what time-stamp renewal (RFC 4998 §5.2) is for.
    public static func signerNotAfter(response: Data) -> Date? {
        signer(of: response).notAfter
    }

    /// The subject and SHA-256 fingerprint of the certificate that signed the token in a DER
    /// `TimeStampResp` (what `infos(pem:)` says of `signerPEM`); nil when the token carries none.
    public static func signerInfo(response: Data) -> Info? {
        signer(of: response).info
    }

    /// What `signerPEM`, `signerNotAfter` and `signerInfo` read, kept for the last few tokens: a
    /// batch of items shares one token, and parsing it again for each member's certificate and
    /// renewal date was 3.6% of the pipeline's CPU (and the certificate's fingerprint, parsed
    /// again from its PEM for each, 1.5% more).
    private struct Signer: Sendable {
        let pem: Data?
        let notAfter: Date?
        let info: Info?
    }
    private static let signers = Mutex<[Data: Signer]>([:])
    private static let signersKept = 64
    /// Replies larger than this (a token carries a few certificates) are parsed, not kept.
    private static let signerKeyLimit = 64 << 10

    private static func signer(of response: Data) -> Signer {
        let keep = response.count <= signerKeyLimit
        if keep, let known = signers.withLock({ $0[response] }) { return known }
        let read = withSigner(of: response) { cert -> Signer? in
            var notAfter: Date?
            if let t = X509_get0_notAfter(cert) {
                var parts = tm()
                if ASN1_TIME_to_tm(t, &parts) == 1 { notAfter = Date(timeIntervalSince1970: TimeInterval(timegm(&parts))) }
            }
            return Signer(pem: pem(cert), notAfter: notAfter, info: describe(cert))
        } ?? Signer(pem: nil, notAfter: nil, info: nil)
        guard keep else { return read }
        let key = Data(response)  // its own bytes: a slice would keep a larger buffer alive
        signers.withLock { kept in
            if kept.count >= signersKept { kept.removeAll(keepingCapacity: true) }
            kept[key] = read
        }
        return read
    }

    /// `body` with the certificate that signed the token in a DER `TimeStampResp` (it belongs to
    /// the token: valid only inside `body`); nil when there is none or the bytes are not a reply.
    private static func withSigner<T>(of response: Data, _ body: (OpaquePointer) -> T?) -> T? {
        ERR_clear_error()
        defer { ERR_clear_error() }
        let bytes = [UInt8](response)
        let resp: OpaquePointer? = bytes.withUnsafeBufferPointer { buf in
            var cursor: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_TS_RESP(nil, &cursor, buf.count)
        }
        guard let resp else { return nil }
        defer { TS_RESP_free(resp) }
        guard let token = TS_RESP_get_token(resp), let signers = PKCS7_get0_signers(token, nil, 0) else { return nil }
        defer { evidence_sk_X509_free(signers) }  // the certificates belong to the token
        guard evidence_sk_X509_num(signers) > 0, let cert = evidence_sk_X509_value(signers, 0) else { return nil }
        return body(cert)
    }

    /// The SHA-256 fingerprint of the DER certificate(s) in `pem`.
    public static func infos(pem: Data) -> [Info] { certificates(pem: pem).map(info) }

    /// `AB:CD:…` from any spelling (`abcd…`, `ab:cd:…`, with spaces); nil unless 32 bytes of hex.
    public static func normalizedFingerprint(_ text: String) -> String? {
        let hex = text.uppercased().filter { $0.isHexDigit }
        let stripped = text.filter { !$0.isWhitespace && $0 != ":" }
        guard hex.count == 64, stripped.count == 64 else { return nil }
        var pairs: [String] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            pairs.append(String(hex[i..<j]))
            i = j
        }
        return pairs.joined(separator: ":")
    }

    // MARK: - Implementation

    /// Certificates parsed from PEM; each one freed once its Info is taken.
    private static func certificates(pem data: Data) -> [OpaquePointer] {
        ERR_clear_error()
        defer { ERR_clear_error() }
        var out: [OpaquePointer] = []
        let bytes = [UInt8](data)
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, let bio = BIO_new_mem_buf(base, Int32(raw.count)) else { return }
            defer { BIO_free(bio) }
            while let cert = PEM_read_bio_X509(bio, nil, nil, nil) { out.append(cert) }
        }
        return out
    }

    private static func info(_ cert: OpaquePointer) -> Info {
        defer { X509_free(cert) }
        return describe(cert)
    }

    static func describe(_ cert: OpaquePointer) -> Info {
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        _ = X509_digest(cert, evidence_evp_sha256(), &digest, &length)
        let hex = digest.prefix(Int(length)).map { String(format: "%02X", $0) }.joined(separator: ":")
        let subject = X509_get_subject_name(cert).flatMap(OpenSSLSupport.nameText) ?? "(no subject)"
        return Info(subject: subject, sha256: hex)
    }

    private static func pem(_ cert: OpaquePointer) -> Data? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, cert) == 1 else { return nil }
        var pointer: UnsafeMutablePointer<CChar>? = nil
        let length = evidence_bio_get_mem_data(bio, &pointer)
        guard length > 0, let pointer else { return nil }
        return Data(bytes: pointer, count: length)
    }
}
