import Foundation

/// A sliding one-second window per client: the `limit`-th request within any second is the
/// last one let through; later ones are throttled until the oldest leaves the window.
/// Throttled requests do not count toward the window (as Django REST framework's throttles).
public final class RateLimiter: @unchecked Sendable {
    public enum Decision: Equatable, Sendable {
        case allowed
        /// Seconds until a request would be allowed again (always ≥ 1, rounded up).
        case throttled(retryAfter: Int)
    }

    private let limit: Int
    private let window: Double
    private let lock = NSLock()
    private var recent: [String: [Double]] = [:]

    /// - Parameters:
    ///   - limit: requests per window and client; 0 or less disables limiting.
    ///   - window: window length in seconds.
    public init(limit: Int, window: Double = 1) {
        self.limit = limit
        self.window = window
    }

    public func check(client: String, now: Double = Date().timeIntervalSince1970) -> Decision {
        guard limit > 0 else { return .allowed }
        lock.lock()
        defer { lock.unlock() }
        var stamps = recent[client, default: []].filter { now - $0 < window }
        defer { recent[client] = stamps }
        if stamps.count < limit {
            stamps.append(now)
            return .allowed
        }
        let wait = window - (now - stamps[0])
        return .throttled(retryAfter: max(1, Int(wait.rounded(.up))))
    }

    public func reset() {
        lock.lock()
        recent.removeAll()
        lock.unlock()
    }
}
