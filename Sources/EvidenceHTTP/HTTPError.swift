import Foundation

/// Every failure of `HTTPClient`. Its fields and `description` never carry a secret: the URL is
/// redacted and `message` is redacted against the request's credentials before it is stored.
public struct HTTPError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// A libcurl failure (`CURLcode` number and name), or a local file error around the transfer.
        case transport(code: Int, name: String)
        case timeout
        /// Certificate or handshake failure. Never retried: it does not fix itself.
        case tls
        /// The server answered with a status the caller's classification rejected.
        case status(Int)
        case cancelled
        /// An in-memory response body grew past `HTTPClientConfiguration.maxResponseBytes`.
        case tooLarge
        /// Not sent: the server asked this process to wait (`OriginPause`) longer than
        /// `retry.maxRetryAfter`; `retryAfter` says how long is left.
        case paused
    }

    public var kind: Kind
    public var method: String
    /// Redacted.
    public var url: String
    /// A redacted excerpt of the remote body (≤ 300 characters) or curl's error text.
    public var message: String
    /// Seconds the server asked us to wait (`Retry-After`), if it did.
    public var retryAfter: Double?
    /// The answer, for `.status`.
    public var response: HTTPResponse?
    /// Whether trying again later may succeed.
    public var isRetryable: Bool

    public init(kind: Kind, method: String, url: String, message: String = "", retryAfter: Double? = nil,
                response: HTTPResponse? = nil, isRetryable: Bool? = nil) {
        self.kind = kind
        self.method = method
        self.url = url
        self.message = message
        self.retryAfter = retryAfter
        self.response = response
        self.isRetryable = isRetryable ?? HTTPError.defaultRetryable(kind)
    }

    /// Transport failures, timeouts, 408, 429 and 5xx are worth retrying; TLS, cancellation and
    /// other statuses are not.
    public static func defaultRetryable(_ kind: Kind) -> Bool {
        switch kind {
        case .transport, .timeout, .paused: true
        case .status(let code): code == 408 || code == 429 || (500...599).contains(code)
        case .tls, .cancelled, .tooLarge: false
        }
    }

    public var description: String {
        var text = "\(method) \(Redact.url(url)): "
        switch kind {
        case .status(let code): text += "HTTP \(code)"
        case .transport(let code, let name): text += "transport error \(name) (\(code))"
        case .timeout: text += "timed out"
        case .tls: text += "TLS verification failed"
        case .cancelled: text += "cancelled"
        case .tooLarge: text += "response too large"
        case .paused: text += "not sent: the server asked us to wait"
        }
        if let retryAfter {
            text += " (retry after \(HTTPError.formatSeconds(retryAfter)))"
        }
        if !message.isEmpty {
            text += ": " + message
        }
        return text
    }

    static func formatSeconds(_ seconds: Double) -> String {
        if seconds == seconds.rounded(), seconds < 1e9 {
            return "\(Int(seconds))s"
        }
        return String(format: "%.1fs", seconds)
    }
}
