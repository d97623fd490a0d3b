import Foundation
import Synchronization

/// When a server says "wait" — 429 or 503 with `Retry-After` — every request this process
/// sends to that origin waits until then, not only the one that got the answer.
///
/// Retrying each request after its own `Retry-After` is not enough: with several workers
/// (notarizations, chunked uploads, polls) the others keep knocking while the first waits, and
/// a rate limit counts an account's requests, not one request's retries. That is how a client
/// turns one 429 into a retry storm. The pause is process-wide and per origin
/// (scheme, host, port), shared by every `HTTPClient`.
public final class OriginPause: Sendable {
    public static let shared = OriginPause()

    private let until = Mutex<[String: Date]>([:])

    public init() {}

    /// `scheme://host:port` of `url` (lower-cased, default ports filled in); nil if it has none.
    public static func origin(of url: String) -> String? {
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), let host = c.host?.lowercased(),
              !host.isEmpty else { return nil }
        let port = c.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : 0)
        return "\(scheme)://\(host):\(port)"
    }

    /// Notes the server's wish from `response` to a request of `url`: 429 or 503 with a
    /// `Retry-After` of more than zero. A pause is only ever extended, never shortened.
    public func note(_ response: HTTPResponse, url: String, now: Date = Date()) {
        guard response.status == 429 || response.status == 503,
              let seconds = response.header("retry-after").flatMap({ RetryAfter.seconds($0, now: now) }), seconds > 0,
              let origin = Self.origin(of: url) else { return }
        let end = now.addingTimeInterval(seconds)
        until.withLock { until in
            if until[origin].map({ $0 < end }) ?? true { until[origin] = end }
        }
    }

    /// Seconds until requests to `url`'s origin may go again; 0 when they may now.
    public func remaining(for url: String, now: Date = Date()) -> Double {
        // Nearly always no origin is paused: then the URL is not parsed (for every request).
        // Pauses over are dropped here, so one past pause of an origin asked no more does not
        // keep every request on the slow path.
        let anyPaused = until.withLock { until -> Bool in
            if until.isEmpty { return false }
            until = until.filter { $0.value > now }
            return !until.isEmpty
        }
        guard anyPaused, let origin = Self.origin(of: url) else { return 0 }
        return until.withLock { until in
            guard let end = until[origin] else { return 0 }
            let left = end.timeIntervalSince(now)
            if left <= 0 { until[origin] = nil }
            return max(0, left)
        }
    }

    /// Forgets the pause of `url`'s origin (a test server that stops: a later one may get its
    /// port). Only that origin: tests run in parallel, and another's pause must hold.
    public func reset(origin url: String) {
        guard let origin = Self.origin(of: url) else { return }
        _ = until.withLock { $0.removeValue(forKey: origin) }
    }
}
