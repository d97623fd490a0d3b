import EvidenceCore

/// Added delay before a request is handled: none, fixed (`"200ms"`) or uniform in a range
/// (`"50ms..300ms"`). Durations use the project's duration syntax (`ms`, `s`, `m`).
public struct LatencySpec: Sendable, Equatable, CustomStringConvertible {
    /// Seconds; `lower == upper` for a fixed delay.
    public let lower: Double
    public let upper: Double

    public static let none = LatencySpec(lower: 0, upper: 0)

    public init(lower: Double, upper: Double) {
        self.lower = lower
        self.upper = max(lower, upper)
    }

    public enum ParseError: Error, CustomStringConvertible, Equatable {
        case invalid(String)
        public var description: String {
            switch self {
            case .invalid(let text):
                return "invalid latency \"\(text)\": expected a duration (\"200ms\") or a range (\"50ms..300ms\")"
            }
        }
    }

    /// Parses `"0ms"`, `"250ms"`, `"1s"`, `"50ms..300ms"`.
    public init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: "..", omittingEmptySubsequences: false)
        do {
            switch parts.count {
            case 1:
                let s = try DurationText.seconds(String(parts[0]))
                self.init(lower: s, upper: s)
            case 2:
                let a = try DurationText.seconds(String(parts[0]))
                let b = try DurationText.seconds(String(parts[1]))
                guard a <= b else { throw ParseError.invalid(text) }
                self.init(lower: a, upper: b)
            default:
                throw ParseError.invalid(text)
            }
        } catch {
            throw .invalid(text)
        }
    }

    public var isZero: Bool { upper <= 0 }

    /// A delay for one request; `unit` is a uniform draw in [0, 1).
    public func seconds(unit: Double) -> Double {
        lower + (upper - lower) * unit
    }

    public var description: String {
        lower == upper ? DurationText.format(seconds: lower)
            : "\(DurationText.format(seconds: lower))..\(DurationText.format(seconds: upper))"
    }
}
