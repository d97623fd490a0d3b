/// Durations as operators write them in config and on the command line:
/// `"500ms"`, `"2s"`, `"10m"`, `"1h"`, `"30d"`, or combinations like `"1h30m"`.
public enum DurationText {
    public enum ParseError: Error, CustomStringConvertible, Equatable {
        case invalid(String)
        public var description: String {
            switch self {
            case .invalid(let s):
                return "invalid duration \"\(s)\": expected a number with a unit (ms, s, m, h, d), e.g. \"500ms\", \"2s\", \"10m\", \"30d\""
            }
        }
    }

    /// Parses to seconds. Throws `ParseError.invalid` naming the text.
    public static func seconds(_ text: String) throws(ParseError) -> Double {
        let s = text.trimmingCharacters(in: " \t")
        guard !s.isEmpty else { throw .invalid(text) }
        var total = 0.0
        var number = ""
        var unit = ""
        var sawAny = false
        func flush() throws(ParseError) {
            guard !number.isEmpty, let n = Double(number), n >= 0 else { throw .invalid(text) }
            let mult: Double
            switch unit {
            case "ms": mult = 0.001
            case "s": mult = 1
            case "m": mult = 60
            case "h": mult = 3600
            case "d": mult = 86400
            default: throw .invalid(text)
            }
            total += n * mult
            number = ""; unit = ""; sawAny = true
        }
        for ch in s {
            if ch.isNumber || ch == "." {
                if !unit.isEmpty { try flush() }
                number.append(ch)
            } else if ch.isLetter {
                guard !number.isEmpty else { throw .invalid(text) }
                unit.append(ch)
            } else {
                throw .invalid(text)
            }
        }
        try flush()
        guard sawAny else { throw .invalid(text) }
        return total
    }

    /// Human form for listings: "45s", "12m", "3h", "2d".
    public static func format(seconds: Double) -> String {
        let s = max(0, seconds)
        if s < 1 { return "\(Int((s * 1000).rounded()))ms" }
        if s < 120 { return "\(Int(s.rounded()))s" }
        if s < 7200 { return "\(Int((s / 60).rounded()))m" }
        if s < 172_800 { return "\(Int((s / 3600).rounded()))h" }
        return "\(Int((s / 86400).rounded()))d"
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var sub = Substring(self)
        while let f = sub.first, set.contains(f) { sub.removeFirst() }
        while let l = sub.last, set.contains(l) { sub.removeLast() }
        return String(sub)
    }
}
