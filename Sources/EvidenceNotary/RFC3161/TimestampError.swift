/// Why a time-stamp request could not be built or a TSA reply was not accepted.
///
/// `message` is meant for people (logs, `evidence verify` output); `kind` is for code.
public struct TimestampError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, Codable {
        /// The request could not be built (random source or ASN.1 encoding failed).
        case requestFailed
        /// The bytes are not a DER `TimeStampResp`, or a granted reply carries no usable token.
        case malformedResponse
        /// The TSA answered with a PKIStatus other than granted / grantedWithMods.
        case refused
        /// The token's message imprint is not the SHA-256 digest that was asked for.
        case imprintMismatch
        /// The token's nonce is not the request's nonce.
        case nonceMismatch
        /// The CMS signature, the ESS signing-certificate binding or the TSA certificate chain did not verify.
        case verificationFailed
        /// The CA / untrusted certificate files could not be loaded (a configuration problem, not bad evidence).
        case trustConfiguration
    }

    public let kind: Kind
    public let message: String
    /// For `.refused`: the PKIStatus value (0 granted … 5 revocationNotification).
    public let pkiStatus: Int?
    /// For `.refused`: the PKIFailureInfo bit names (`badAlg`, `systemFailure`, …).
    public let failureInfo: [String]

    public init(_ kind: Kind, _ message: String, pkiStatus: Int? = nil, failureInfo: [String] = []) {
        self.kind = kind
        self.message = message
        self.pkiStatus = pkiStatus
        self.failureInfo = failureInfo
    }

    public var description: String { message }

    /// True when asking the same TSA again later may succeed: status `waiting`, or a refusal
    /// for `timeNotAvailable` / `systemFailure`. Everything else is permanent.
    public var isTransient: Bool {
        guard kind == .refused else { return false }
        if pkiStatus == 3 { return true }
        return failureInfo.contains("timeNotAvailable") || failureInfo.contains("systemFailure")
    }
}
