import COpenSSL
import EvidenceCore
import Foundation

/// Checks RFC 3161 replies before they are accepted (and stored tokens when auditing).
public enum TimestampVerifier {
    /// Parses the TimeStampResp, checks PKIStatus granted(0)/grantedWithMods(1), message imprint ==
    /// request digest (SHA-256), nonce == request nonce, and verifies the CMS signature, the ESS
    /// signing-certificate binding and the TSA certificate chain (`TS_RESP_verify_response`)
    /// against `trust`, with extra untrusted certificates from `untrustedFile`. Empty `trust`
    /// throws `.trustConfiguration`: a token whose signature was not checked is never accepted.
    public static func verify(response: Data, for request: TimestampRequest, trust: TSATrust,
                              untrustedFile: String? = nil) throws(TimestampError) -> TimestampToken {
        guard let nonce = Hex.decode(request.nonce), !nonce.isEmpty else {
            throw TimestampError(.requestFailed, "request nonce is not hex: \(request.nonce.prefix(40))")
        }
        return try check(response: response, imprint: request.imprint, nonce: nonce,
                         trust: trust, untrustedFile: untrustedFile)
    }

    /// Offline check of a stored `.tsr` against a file's content digest (for `evidence verify`):
    /// the imprint must be `digest`, and the signature and chain must verify against `trust`
    /// (empty `trust` throws `.trustConfiguration`). The nonce is not checked (the request is not kept).
    /// `at`: check the certificates as of that date instead of now (`evidence verify --at`, and
    /// each renewed time-stamp of an evidence record as of the time-stamp that renewed it).
    public static func verify(response: Data, digest: SHA256Digest, trust: TSATrust,
                              untrustedFile: String? = nil, at: Date? = nil) throws(TimestampError) -> TimestampToken {
        try check(response: response, imprint: Imprint(digest), nonce: nil, trust: trust, untrustedFile: untrustedFile, at: at)
    }

    /// `verify(response:digest:trust:)` for an imprint of either algorithm.
    public static func verify(response: Data, imprint: Imprint, trust: TSATrust, at: Date? = nil) throws(TimestampError) -> TimestampToken {
        try check(response: response, imprint: imprint, nonce: nil, trust: trust, untrustedFile: nil, at: at)
    }

    /// `inspect(response:digest:)` for an imprint of either algorithm.
    public static func inspect(response: Data, imprint: Imprint) throws(TimestampError) -> TimestampToken {
        try check(response: response, imprint: imprint, nonce: nil, trust: nil, untrustedFile: nil)
    }

    /// `verify(response:for:trust:)` with one CA file.
    public static func verify(response: Data, for request: TimestampRequest, caFile: String,
                              untrustedFile: String? = nil) throws(TimestampError) -> TimestampToken {
        try verify(response: response, for: request, trust: TSATrust(caFiles: [caFile]), untrustedFile: untrustedFile)
    }

    /// `verify(response:digest:trust:)` with one CA file.
    public static func verify(response: Data, digest: SHA256Digest, caFile: String,
                              untrustedFile: String? = nil) throws(TimestampError) -> TimestampToken {
        try verify(response: response, digest: digest, trust: TSATrust(caFiles: [caFile]), untrustedFile: untrustedFile)
    }

    /// Status, imprint and nonce against `request`, without the signature: for tests of the
    /// parser and for showing a token, never for accepting one.
    public static func inspect(response: Data, for request: TimestampRequest) throws(TimestampError) -> TimestampToken {
        guard let nonce = Hex.decode(request.nonce), !nonce.isEmpty else {
            throw TimestampError(.requestFailed, "request nonce is not hex: \(request.nonce.prefix(40))")
        }
        return try check(response: response, imprint: request.imprint, nonce: nonce, trust: nil, untrustedFile: nil)
    }

    /// Only status, imprint and (when given) nonce: what a token claims, with nothing proving who
    /// signed it. For showing a token that could not be verified, never for accepting one.
    public static func inspect(response: Data, digest: SHA256Digest) throws(TimestampError) -> TimestampToken {
        try check(response: response, imprint: Imprint(digest), nonce: nil, trust: nil, untrustedFile: nil)
    }

    // MARK: - Implementation

    /// `trust` nil: no signature check (only `inspect`); empty: refused.
    private static func check(response: Data, imprint: Imprint, nonce: [UInt8]?,
                              trust: TSATrust?, untrustedFile: String?, at: Date? = nil) throws(TimestampError) -> TimestampToken {
        if let trust, trust.isEmpty {
            throw TimestampError(.trustConfiguration, "no trust anchor for the TSA's signature: "
                + "give the TSA's CA certificate (obtained from the TSA) or its signing certificate's SHA-256 fingerprint")
        }
        ERR_clear_error()
        defer { ERR_clear_error() }

        let resp = try parse(response)
        defer { TS_RESP_free(resp) }

        try checkStatus(resp)

        guard let tst = TS_RESP_get_tst_info(resp), TS_RESP_get_token(resp) != nil else {
            throw TimestampError(.malformedResponse, "not a TimeStampResp (granted reply carries no time-stamp token)")
        }
        let version = TS_TST_INFO_get_version(tst)
        guard version == 1 else {
            throw TimestampError(.malformedResponse, "unsupported TSTInfo version \(version)")
        }

        let tokenImprint = try checkImprint(tst, expected: imprint)
        let tokenNonce = try checkNonce(tst, expected: nonce)

        if let trust {
            try verifySignature(resp, imprint: imprint, nonce: nonce, trust: trust, untrustedFile: untrustedFile, at: at)
        }

        guard let time = TS_TST_INFO_get_time(tst), let genTime = generalizedTime(time) else {
            throw TimestampError(.malformedResponse, "time-stamp token has an unreadable genTime")
        }
        if trust != nil, let at, genTime > at {
            // A token cannot be checked as of a date before it existed.
            throw TimestampError(.verificationFailed, "time-stamped \(Timestamp.string(genTime)), after the date it is to be checked as of "
                + "(\(Timestamp.string(at)))")
        }
        guard let serialInteger = TS_TST_INFO_get_serial(tst),
              let serialBytes = OpenSSLSupport.integerBytes(serialInteger) else {
            throw TimestampError(.malformedResponse, "time-stamp token has no serial number")
        }
        guard let policy = OpenSSLSupport.oidText(TS_TST_INFO_get_policy_id(tst)) else {
            throw TimestampError(.malformedResponse, "time-stamp token has no policy")
        }
        let tsaName = tsaName(tst, token: TS_RESP_get_token(resp))

        return TimestampToken(response: response, genTime: genTime, serial: Hex.encode(serialBytes),
                              policy: policy, tsaName: tsaName, imprint: tokenImprint, nonce: tokenNonce)
    }

    /// d2i of the whole buffer; trailing bytes after the DER are rejected.
    private static func parse(_ response: Data) throws(TimestampError) -> OpaquePointer {
        let bytes = [UInt8](response)
        guard !bytes.isEmpty else {
            throw TimestampError(.malformedResponse, "not a TimeStampResp (DER parse error): empty reply")
        }
        var consumed = 0
        let resp: OpaquePointer? = bytes.withUnsafeBufferPointer { buf in
            var cursor: UnsafePointer<UInt8>? = buf.baseAddress
            let parsed = d2i_TS_RESP(nil, &cursor, buf.count)
            if parsed != nil, let cursor, let base = buf.baseAddress { consumed = cursor - base }
            return parsed
        }
        guard let resp else {
            throw TimestampError(.malformedResponse, OpenSSLSupport.withErrors("not a TimeStampResp (DER parse error)"))
        }
        guard consumed == bytes.count else {
            TS_RESP_free(resp)
            throw TimestampError(.malformedResponse,
                                 "not a TimeStampResp (DER parse error): \(bytes.count - consumed) trailing bytes")
        }
        return resp
    }

    private static let statusNames = ["granted", "grantedWithMods", "rejection", "waiting",
                                      "revocationWarning", "revocationNotification"]
    private static let failureBits: [(Int32, String)] = [
        (TS_INFO_BAD_ALG, "badAlg"), (TS_INFO_BAD_REQUEST, "badRequest"),
        (TS_INFO_BAD_DATA_FORMAT, "badDataFormat"), (TS_INFO_TIME_NOT_AVAILABLE, "timeNotAvailable"),
        (TS_INFO_UNACCEPTED_POLICY, "unacceptedPolicy"), (TS_INFO_UNACCEPTED_EXTENSION, "unacceptedExtension"),
        (TS_INFO_ADD_INFO_NOT_AVAILABLE, "addInfoNotAvailable"), (TS_INFO_SYSTEM_FAILURE, "systemFailure"),
    ]

    private static func checkStatus(_ resp: OpaquePointer) throws(TimestampError) {
        guard let info = TS_RESP_get_status_info(resp), let statusInteger = TS_STATUS_INFO_get0_status(info) else {
            throw TimestampError(.malformedResponse, "not a TimeStampResp (no PKIStatusInfo)")
        }
        let status = ASN1_INTEGER_get(statusInteger)
        if status == Int(TS_STATUS_GRANTED) || status == Int(TS_STATUS_GRANTED_WITH_MODS) { return }

        let name = (0..<statusNames.count).contains(status) ? statusNames[status] : "unknown(\(status))"
        var failures: [String] = []
        if let bits = TS_STATUS_INFO_get0_failure_info(info) {
            for (bit, label) in failureBits where ASN1_BIT_STRING_get_bit(bits, bit) == 1 {
                failures.append(label)
            }
        }
        var texts: [String] = []
        if let stack = TS_STATUS_INFO_get0_text(info) {
            let count = evidence_sk_ASN1_UTF8STRING_num(stack)
            for i in 0..<max(count, 0) {
                if let s = evidence_sk_ASN1_UTF8STRING_value(stack, i) {
                    texts.append(String(OpenSSLSupport.stringText(s).prefix(200)))
                }
            }
        }
        var message = "TSA refused: status \(name)"
        if !failures.isEmpty { message += " (\(failures.joined(separator: ", ")))" }
        if !texts.isEmpty { message += ": " + texts.joined(separator: " ") }
        throw TimestampError(.refused, message, pkiStatus: status, failureInfo: failures)
    }

    /// The token's imprint must be the expected algorithm (parameters absent or NULL) over exactly
    /// the expected hash.
    private static func checkImprint(_ tst: OpaquePointer, expected: Imprint) throws(TimestampError) -> Imprint {
        guard let imprint = TS_TST_INFO_get_msg_imprint(tst),
              let algorithm = TS_MSG_IMPRINT_get_algo(imprint),
              let message = TS_MSG_IMPRINT_get_msg(imprint) else {
            throw TimestampError(.malformedResponse, "time-stamp token has no message imprint")
        }
        var object: OpaquePointer? = nil
        var parameterType: Int32 = 0
        var parameter: UnsafeRawPointer? = nil
        X509_ALGOR_get0(&object, &parameterType, &parameter, algorithm)
        let wanted = expected.algorithm
        guard let object, OBJ_obj2nid(object) == wanted.nid,
              parameterType == V_ASN1_UNDEF || parameterType == V_ASN1_NULL else {
            let oid = OpenSSLSupport.oidText(object) ?? "unknown"
            throw TimestampError(.imprintMismatch,
                                 "reply imprint does not match the request (hash algorithm \(oid), expected \(wanted.label))")
        }
        let length = Int(ASN1_STRING_length(message))
        guard length == wanted.size, let data = ASN1_STRING_get0_data(message),
              let got = Imprint(algorithm: wanted, bytes: Array(UnsafeBufferPointer(start: data, count: length))) else {
            throw TimestampError(.imprintMismatch,
                                 "reply imprint does not match the request (\(length)-byte hash, expected \(wanted.size))")
        }
        guard got == expected else {
            throw TimestampError(.imprintMismatch,
                                 "reply imprint does not match the request (token \(got.hex), expected \(expected.hex))")
        }
        return got
    }

    /// Returns the token's nonce as hex ("" when absent); throws when `expected` is set and differs.
    private static func checkNonce(_ tst: OpaquePointer, expected: [UInt8]?) throws(TimestampError) -> String {
        let tokenNonce = TS_TST_INFO_get_nonce(tst)
        let text = tokenNonce.flatMap { OpenSSLSupport.integerBytes($0, minimumCount: 8) }.map { Hex.encode($0) } ?? ""
        guard let expected else { return text }
        guard let tokenNonce else {
            throw TimestampError(.nonceMismatch, "nonce mismatch (reply carries no nonce, expected \(Hex.encode(expected)))")
        }
        guard let wanted = OpenSSLSupport.makeInteger(expected) else {
            throw TimestampError(.requestFailed, OpenSSLSupport.withErrors("nonce encoding failed"))
        }
        defer { ASN1_INTEGER_free(wanted) }
        guard ASN1_INTEGER_cmp(tokenNonce, wanted) == 0 else {
            throw TimestampError(.nonceMismatch, "nonce mismatch (reply \(text), expected \(Hex.encode(expected)))")
        }
        return text
    }

    // TS_VFY_* are `(1u << n)` macros; spelled out here so the flags do not depend on macro import.
    private static let verifySignature: Int32 = 1 << 0
    private static let verifyVersion: Int32 = 1 << 1
    private static let verifyImprint: Int32 = 1 << 3
    private static let verifyNonce: Int32 = 1 << 5
    private static let verifySigner: Int32 = 1 << 6

    /// TS_RESP_verify_response with signature, version, imprint, nonce (when known) and signer checks
    /// against an X509_STORE holding every certificate of `trust.caFiles` and, when the token's
    /// signer certificate has a pinned fingerprint, that certificate (as a partial-chain anchor).
    private static func verifySignature(_ resp: OpaquePointer, imprint: Imprint, nonce: [UInt8]?,
                                        trust: TSATrust, untrustedFile: String?, at: Date? = nil) throws(TimestampError) {
        ERR_clear_error()
        // The verify context is derived from an equivalent request: it carries the imprint,
        // its algorithm and the nonce (TS_VERIFY_CTX has no nonce setter in OpenSSL 3.0).
        let req = try RFC3161Request.build(imprint: imprint, nonce: nonce, certReq: true)
        let ctx = TS_REQ_to_TS_VERIFY_CTX(req, nil)
        TS_REQ_free(req)
        guard let ctx else {
            throw TimestampError(.verificationFailed, OpenSSLSupport.withErrors("cannot create TS_VERIFY_CTX"))
        }
        defer { TS_VERIFY_CTX_free(ctx) }  // also frees the store and certs handed over below

        var flags = verifySignature | verifyVersion | verifyImprint | verifySigner
        if nonce != nil { flags |= verifyNonce }
        _ = TS_VERIFY_CTX_set_flags(ctx, flags)

        guard let store = X509_STORE_new() else {
            throw TimestampError(.trustConfiguration, OpenSSLSupport.withErrors("X509_STORE_new failed"))
        }
        _ = TS_VERIFY_CTX_set_store(ctx, store)  // ctx owns the store now
        if let at, let param = X509_STORE_get0_param(store) {
            // Certificates are checked as of `at` (sets X509_V_FLAG_USE_CHECK_TIME).
            X509_VERIFY_PARAM_set_time(param, time_t(at.timeIntervalSince1970.rounded(.down)))
        }
        for caFile in trust.caFiles {
            guard X509_STORE_load_file(store, caFile) == 1 else {
                throw TimestampError(.trustConfiguration, OpenSSLSupport.withErrors("cannot load CA file \(caFile)"))
            }
        }
        var pinned = false
        if !trust.pinnedSigners.isEmpty, let token = TS_RESP_get_token(resp), let signers = PKCS7_get0_signers(token, nil, 0) {
            defer { evidence_sk_X509_free(signers) }  // the certificates belong to the token
            if evidence_sk_X509_num(signers) > 0, let signer = evidence_sk_X509_value(signers, 0),
               trust.pinnedSigners.contains(TSACertificates.describe(signer).sha256) {
                _ = X509_STORE_add_cert(store, signer)  // the store takes its own reference
                pinned = true
            }
        }
        ERR_clear_error()
        guard !trust.caFiles.isEmpty || pinned else {
            throw TimestampError(.verificationFailed,
                                 "signature or chain verification failed: the token's signing certificate is not the pinned one")
        }
        // A pinned signing certificate is an anchor by itself, without its issuer.
        if pinned { _ = X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN)) }

        if let untrustedFile {
            guard let certs = TS_CONF_load_certs(untrustedFile) else {
                throw TimestampError(.trustConfiguration,
                                     OpenSSLSupport.withErrors("cannot load untrusted certificates \(untrustedFile)"))
            }
            _ = TS_VERIFY_CTX_set_certs(ctx, certs)  // ctx owns the stack now
        }

        guard TS_RESP_verify_response(ctx, resp) == 1 else {
            let detail = OpenSSLSupport.drainErrors()
            throw TimestampError(.verificationFailed, "signature or chain verification failed: "
                + (detail.isEmpty ? "TS_RESP_verify_response returned failure" : detail))
        }
    }

    /// TSTInfo `tsa` (directory name, DNS or URI), else the subject of the certificate that signed the token.
    private static func tsaName(_ tst: OpaquePointer, token: UnsafeMutablePointer<PKCS7>?) -> String? {
        if let name = TS_TST_INFO_get_tsa(tst) {
            var type: Int32 = -1
            if let value = GENERAL_NAME_get0_value(name, &type) {
                switch type {
                case GEN_DIRNAME:
                    if let text = OpenSSLSupport.nameText(OpaquePointer(value)) { return text }
                case GEN_DNS, GEN_URI, GEN_EMAIL:
                    return OpenSSLSupport.stringText(value.assumingMemoryBound(to: ASN1_STRING.self))
                default:
                    break
                }
            }
        }
        guard let token else { return nil }
        defer { ERR_clear_error() }  // no embedded signer certificate is not an error here
        guard let signers = PKCS7_get0_signers(token, nil, 0) else { return nil }
        defer { evidence_sk_X509_free(signers) }  // the certificates belong to the token
        guard evidence_sk_X509_num(signers) > 0, let cert = evidence_sk_X509_value(signers, 0),
              let subject = X509_get_subject_name(cert) else { return nil }
        return OpenSSLSupport.nameText(subject)
    }

    /// `YYYYMMDDHHMMSS[.fff…]Z` (the only form RFC 3161 allows) to a Date.
    private static func generalizedTime(_ time: UnsafePointer<ASN1_GENERALIZEDTIME>) -> Date? {
        let length = Int(ASN1_STRING_length(time))
        guard length >= 15, length <= 64, let data = ASN1_STRING_get0_data(time) else { return nil }
        let s = Array(UnsafeBufferPointer(start: data, count: length))
        guard s.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for i in range {
                guard s[i] >= 48, s[i] <= 57 else { return nil }
                value = value * 10 + Int(s[i] - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8),
              let hour = number(8..<10), let minute = number(10..<12), let second = number(12..<14),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var fraction = 0.0
        if length > 15 {
            guard s[14] == UInt8(ascii: "."), length > 16 else { return nil }
            var scale = 0.1
            for i in 15..<(length - 1) {
                guard s[i] >= 48, s[i] <= 57 else { return nil }
                fraction += Double(s[i] - 48) * scale
                scale /= 10
            }
        }
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second) + fraction
        return Date(timeIntervalSince1970: seconds)
    }
}
