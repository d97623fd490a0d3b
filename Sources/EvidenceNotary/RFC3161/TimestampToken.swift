import EvidenceCore
import Foundation

/// An accepted RFC 3161 time-stamp: the reply exactly as received plus the fields read from
/// its TSTInfo. `response` is what gets stored as `FILE.tsr` and what auditors check with
/// `openssl ts -verify -data FILE -in FILE.tsr -CAfile ca.crt -untrusted tsa.crt`.
public struct TimestampToken: Sendable, Codable, Equatable {
    /// The full DER `TimeStampResp` as received.
    public let response: Data
    /// TSTInfo genTime (UTC, with the fraction the TSA sent, if any).
    public let genTime: Date
    /// TSTInfo serialNumber as lowercase hex of its big-endian bytes.
    public let serial: String
    /// TSA policy OID in dotted form.
    public let policy: String
    /// The TSTInfo `tsa` name, else the signing certificate's subject (RFC 2253), when known.
    public let tsaName: String?
    /// The message imprint the token covers.
    public let imprint: Imprint
    /// The SHA-256 message imprint the token covers (nil for a SHA-512 token).
    public var digest: SHA256Digest? { imprint.sha256 }
    /// Lowercase hex of the token's nonce (at least 8 bytes, left-padded), "" when it has none.
    public let nonce: String

    public init(response: Data, genTime: Date, serial: String, policy: String, tsaName: String?,
                imprint: Imprint, nonce: String) {
        self.response = response
        self.genTime = genTime
        self.serial = serial
        self.policy = policy
        self.tsaName = tsaName
        self.imprint = imprint
        self.nonce = nonce
    }
}
