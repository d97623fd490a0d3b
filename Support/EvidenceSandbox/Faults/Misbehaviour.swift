import Foundation
import Synchronization

/// Malformed, oversized, slow or mistyped answers the sandbox gives in place of the real one,
/// armed through `POST /_sandbox/misbehave?path=PREFIX&mode=MODE&count=N`: the next N requests
/// whose path starts with PREFIX get MODE instead of reaching the emulation (which therefore
/// changes no state for them). Every mode but `locked` answers HTTP 200, so the client cannot
/// tell from the status line alone that something is wrong.
public final class Misbehaviour: Sendable {
    public enum Mode: String, CaseIterable, Sendable {
        /// `application/json` with bytes that are not JSON (nor UTF-8).
        case garbage
        /// `text/html`: a proxy's or captive portal's login page.
        case html
        /// A JSON answer whose `Content-Length` promises more than is sent before the
        /// connection closes.
        case truncated
        /// A JSON-typed body larger than the client's in-memory limit (`oversizeBytes`), streamed
        /// in small pieces so the sandbox itself never holds it.
        case oversized
        /// Headers at once, then one byte every `slowInterval` seconds: slower than any
        /// client's low-speed timeout, for up to `slowLimit` seconds.
        case slow
        /// A well-formed body of the wrong kind: a PNG (`image/png`) where JSON or a PDF is due.
        case wrongType = "wrong-type"
        /// `423 Locked` with the body Sabre (ownCloud, Nextcloud) writes: WebDAV's temporary
        /// "someone else holds this path", e.g. a second MKCOL racing the first for one folder.
        case locked
        /// Well-formed JSON of a shape no endpoint answers (`{"detail":…,"items":null}`): what
        /// a maintenance page or another API version behind the same URL may say.
        case wrongJSON = "wrong-json"
        /// `301 Moved Permanently` to the same path with a trailing slash added (or removed),
        /// as Django's APPEND_SLASH answers: same origin, same API root.
        case redirect
        /// `302 Found` to another host (`http://elsewhere.invalid/…`): never to be followed.
        case redirectAway = "redirect-away"
    }

    struct Rule {
        var prefix: String
        var mode: Mode
        var remaining: Int
    }

    /// 64 MiB (the client's default `maxResponseBytes`) plus 1 MiB.
    public static let oversizeBytes = (64 << 20) + (1 << 20)
    public let slowInterval: Double
    public let slowLimit: Double
    private let rules = Mutex<[Rule]>([])
    private let served = Mutex<[String: Int]>([:])

    public init(slowInterval: Double = 2, slowLimit: Double = 600) {
        self.slowInterval = slowInterval
        self.slowLimit = slowLimit
    }

    /// Arms `mode` for the next `count` requests under `prefix` (replacing an earlier rule
    /// for the same prefix; `count` 0 disarms it).
    public func arm(prefix: String, mode: Mode, count: Int) {
        rules.withLock { rules in
            rules.removeAll { $0.prefix == prefix }
            if count > 0 { rules.append(Rule(prefix: prefix, mode: mode, remaining: count)) }
        }
    }

    /// The mode the request to `path` gets, if any; consumes one of its rule's count.
    public func take(path: String) -> Mode? {
        let mode: Mode? = rules.withLock { rules in
            // The longest matching prefix wins, so a narrow rule can sit beside a broad one.
            guard let i = rules.indices.filter({ path.hasPrefix(rules[$0].prefix) })
                .max(by: { rules[$0].prefix.count < rules[$1].prefix.count }) else { return nil }
            let mode = rules[i].mode
            rules[i].remaining -= 1
            if rules[i].remaining <= 0 { rules.remove(at: i) }
            return mode
        }
        if let mode { served.withLock { $0[mode.rawValue, default: 0] += 1 } }
        return mode
    }

    /// Requests answered with each mode since start or the last reset.
    public var servedCounts: [String: Int] { served.withLock { $0 } }

    /// Requests still to misbehave, per prefix.
    public var pending: [String: Int] {
        rules.withLock { Dictionary($0.map { ($0.prefix, $0.remaining) }, uniquingKeysWith: +) }
    }

    /// Disarms every rule and zeroes the counts.
    public func reset() {
        rules.withLock { $0.removeAll() }
        served.withLock { $0.removeAll() }
    }
}
