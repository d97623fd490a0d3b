import EvidenceCore

/// How long one HTTP attempt of a notary or an account may wait, from `connect_timeout` and
/// `stall_timeout` in its `[notaries.NAME]` or `[archives.NAME]` table.
///
/// A stall is a reply or an upload moving less than one byte a second. On a slow satellite or
/// cellular uplink raise `stall_timeout` rather than lose attempt after attempt; on a LAN lower
/// it to notice a hung server sooner. Both are per attempt: a timed-out attempt is retried like
/// any other network error, and the item is never lost.
public struct HTTPTimeouts: Sendable, Equatable {
    /// The keys of a table that set these.
    public static let keys: Set<String> = ["connect_timeout", "stall_timeout"]
    /// Limits a config may set, in seconds (curl counts the stall in whole seconds).
    public static let connectRange: ClosedRange<Double> = 0.1...600
    public static let stallRange: ClosedRange<Double> = 1...3600

    /// Seconds to establish the connection, TLS included.
    public var connect: Double
    /// Seconds an attempt may move less than one byte a second before it is abandoned.
    public var stall: Double

    public init(connect: Double = 10, stall: Double = 60) {
        self.connect = connect
        self.stall = stall
    }
}

extension ConfigFileParser {
    /// `connect_timeout` and `stall_timeout` of table `t` (durations), checked against their ranges.
    static func timeouts(_ r: TOMLReader, _ t: TOMLTableRef) throws(ConfigError) -> HTTPTimeouts {
        var timeouts = HTTPTimeouts()
        if let connect = try r.duration(t, "connect_timeout") {
            guard HTTPTimeouts.connectRange.contains(connect) else {
                throw r.error(t.path + ["connect_timeout"], "must be between 100ms and 10m (got \(DurationText.format(seconds: connect)))")
            }
            timeouts.connect = connect
        }
        if let stall = try r.duration(t, "stall_timeout") {
            guard HTTPTimeouts.stallRange.contains(stall) else {
                throw r.error(t.path + ["stall_timeout"], "must be between 1s and 1h (got \(DurationText.format(seconds: stall)))")
            }
            timeouts.stall = stall
        }
        return timeouts
    }
}
