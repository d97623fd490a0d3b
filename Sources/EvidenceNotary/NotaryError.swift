import EvidenceHTTP
import Foundation

/// A notary call that did not succeed. `retryable` says whether trying later may help (429,
/// 5xx, timeouts, resets); `retryAfter` is the server's wish in seconds. The message names the
/// notary and what it answered, never a credential.
public struct NotaryError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var retryable: Bool
    public var retryAfter: Double?
    /// The notary's HTTP status, when an answer came.
    public var httpStatus: Int?

    public init(_ message: String, retryable: Bool, retryAfter: Double? = nil, httpStatus: Int? = nil) {
        self.message = message; self.retryable = retryable; self.retryAfter = retryAfter; self.httpStatus = httpStatus
    }

    /// The notary refused the API key (401/403): its work pauses until the key changes.
    public var credentialsRefused: Bool { httpStatus == 401 || httpStatus == 403 }

    public var description: String { message }

    /// An answer too large to hold is retryable here (unlike in the HTTP client's own retry
    /// loop, which would fetch it again at once): the job backs off and asks again later,
    /// when the server may answer normally.
    init(_ notary: String, _ http: HTTPError) {
        self.init("\(notary): \(http.description)", retryable: http.isRetryable || http.kind == .tooLarge,
                  retryAfter: http.retryAfter)
    }
}
