import EvidenceCore
import Foundation

/// Dates as Django REST framework reads and writes them: ISO 8601 in, and out in UTC with a
/// `Z`, microseconds only when there are any (`2026-05-01T12:34:56Z`, `…56.250000Z`).
enum QEDDateFormat {
    static let invalidMessage =
        "Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]."
    static let dateOnlyMessage = "Expected a datetime but got a date."

    enum ParseResult {
        case date(Date)
        case dateOnly
        case invalid
    }

    /// Accepts `YYYY-MM-DD[T ]hh:mm[:ss[.ffffff]][Z|±hh[:mm]]`; no zone means UTC (the
    /// sandbox's server time zone).
    static func parse(_ text: String) -> ParseResult {
        let s = text.trimmingCharacters(in: .whitespaces)
        let u = Array(s.utf8)
        if u.count == 10, Timestamp.parseLenient(s + "T00:00:00Z") != nil { return .dateOnly }
        // Seconds are optional for DRF; the shared parser wants them, so add ":00".
        var normalized = s
        if u.count >= 16, u[13] == UInt8(ascii: ":"), u.count == 16 || !(u[16] == UInt8(ascii: ":")) {
            let idx = s.utf8.index(s.utf8.startIndex, offsetBy: 16)
            normalized = String(s[..<idx]) + ":00" + String(s[idx...])
        }
        guard let date = Timestamp.parseLenient(normalized) else { return .invalid }
        return .date(date)
    }

    static func string(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let seconds = Int64((Double(micros) / 1_000_000).rounded(.down))
        let fraction = micros - seconds * 1_000_000
        var t = time_t(seconds)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        let base = String(format: "%04d-%02d-%02dT%02d:%02d:%02d",
                          Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1, Int(tmv.tm_mday),
                          Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
        return fraction == 0 ? base + "Z" : base + String(format: ".%06dZ", Int(fraction))
    }
}
