import EvidenceCore
import Foundation

/// Parses `Retry-After` header values.
public enum RetryAfter {
    /// Seconds to wait, from delay-seconds (`"120"`) or an HTTP-date (IMF-fixdate
    /// `"Sun, 06 Nov 1994 08:49:37 GMT"`, and the obsolete RFC 850 and asctime forms). A date in
    /// the past gives 0. Anything else gives nil.
    public static func seconds(_ headerValue: String, now: Date = Date()) -> Double? {
        let value = headerValue.trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty else { return nil }
        if value.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }) {
            guard let seconds = Double(value), seconds.isFinite, seconds >= 0 else { return nil }
            return seconds
        }
        guard let date = httpDate(value) else { return nil }
        return max(0, date - now.timeIntervalSince1970)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun",
                                 "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let weekdays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Seconds since 1970 for the three HTTP-date forms (RFC 9110 §5.6.7).
    static func httpDate(_ s: String) -> Double? {
        var cleaned = ""
        for character in s.lowercased() {
            cleaned.append(character == "," || character == "-" ? " " : character)
        }
        let tokens = cleaned.split(separator: " ").map(String.init)
        var month: Int?
        var numbers: [Int] = []
        var time: [Int]?
        var sawWeekday = false
        for token in tokens {
            if token.contains(":") {
                let parts = token.split(separator: ":", omittingEmptySubsequences: false).compactMap { Int($0) }
                guard parts.count == 3, time == nil else { return nil }
                time = parts
            } else if let number = Int(token), token.allSatisfy({ $0.isASCII }) {
                numbers.append(number)
            } else if let m = months.firstIndex(of: token), month == nil {
                month = m + 1
            } else if token.count >= 3, weekdays.contains(String(token.prefix(3))), !sawWeekday {
                sawWeekday = true
            } else if token == "gmt" || token == "utc" {
                continue
            } else {
                return nil
            }
        }
        guard let month, let time, numbers.count == 2 else { return nil }
        let day = numbers[0]
        var year = numbers[1]
        if year < 100 { year += year < 70 ? 2000 : 1900 }  // RFC 850 two-digit years
        guard (1...31).contains(day), (0...23).contains(time[0]), (0...59).contains(time[1]),
              (0...60).contains(time[2]), year >= 1970 else { return nil }
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        return Double(days * 86_400 + time[0] * 3_600 + time[1] * 60 + time[2])
    }
}
