import EvidenceHTTP
import Foundation

/// A notary call that did not succeed. `retryable` says whether trying later may help (429,
/// 5xx, timeouts, resets); `retryAfter` is the server's wish in seconds. The message names the
/// notary and what it answered, never a credential.
public struct NotaryError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var retryable: Bool
    public var retryAfter: Double?

    public init(_ message: String, retryable: Bool, retryAfter: Double? = nil) {
        self.message = message; self.retryable = retryable; self.retryAfter = retryAfter
    }

    public var description: String { message }

    init(_ notary: String, _ http: HTTPError) {
        self.init("\(notary): \(http.description)", retryable: http.isRetryable, retryAfter: http.retryAfter)
    }
}
