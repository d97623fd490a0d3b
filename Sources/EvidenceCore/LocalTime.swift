import Foundation

/// Times shown in the operator's zone beside UTC (`timezone` in evidence.toml): a court reads
/// "15:16 Europe/Berlin", the proof says 14:16Z, and both are printed.
public struct LocalTime: Sendable, Equatable {
    public let identifier: String
    private let zone: TimeZone

    /// Nil for a name the zone database does not know.
    public init?(identifier: String) {
        guard let z = TimeZone(identifier: identifier) else { return nil }
        self.identifier = identifier
        zone = z
    }

    public static let utc = LocalTime(identifier: "UTC")!

    /// `2026-11-27 15:16:37 UTC+01:00`
    public func string(_ date: Date) -> String {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = zone
        let c = cal.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let offset = zone.secondsFromGMT(for: date)
        let sign = offset < 0 ? "-" : "+"
        let a = abs(offset)
        func two(_ n: Int?) -> String { let v = n ?? 0; return v < 10 ? "0\(v)" : "\(v)" }
        return "\(c.year ?? 0)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) "
            + "UTC\(sign)\(two(a / 3600)):\(two(a % 3600 / 60))"
    }

    /// `2026-11-27 14:16:37 UTC (15:16:37 Europe/Berlin, UTC+01:00)`; UTC alone when the zone is UTC.
    public func both(_ date: Date) -> String {
        let utc = Self.utc.string(date).replacingOccurrences(of: " UTC+00:00", with: " UTC")
        if identifier == "UTC" || identifier == "Etc/UTC" { return utc }
        let local = string(date)
        let time = local.split(separator: " ")
        return "\(utc) (\(time.count == 3 ? String(time[1]) : local) \(identifier), \(time.last ?? ""))"
            + (local.prefix(10) != utc.prefix(10) ? " on \(local.prefix(10))" : "")
    }
}
