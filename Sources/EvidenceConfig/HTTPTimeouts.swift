import EvidenceCore

/// How long one HTTP attempt of a notary or an account may wait, from `connect_timeout`,
/// `stall_timeout` and `request_timeout` in its `[notaries.NAME]` or `[archives.NAME]` table.
///
/// File bodies (uploads, downloads, read-backs) have no whole-transfer cap: a 2 GB video over a
/// 20 Mbit/s uplink takes 15 minutes and must arrive. They end only on a stall. Small API calls
/// (JSON, XML, folder listings) also have `request_timeout` as a total.
///
/// A stall is a reply or an upload moving less than one byte a second. On a slow satellite or
/// cellular uplink raise `stall_timeout` rather than lose attempt after attempt; on a LAN lower
/// it to notice a hung server sooner. Both are per attempt: a timed-out attempt is retried like
/// any other network error, and the item is never lost.
public struct HTTPTimeouts: Sendable, Equatable {
    /// The keys of a table that set these.
    public static let keys: Set<String> = ["connect_timeout", "stall_timeout", "request_timeout"]
    /// Limits a config may set, in seconds (curl counts the stall in whole seconds).
    public static let connectRange: ClosedRange<Double> = 0.1...600
    public static let stallRange: ClosedRange<Double> = 1...3600
    public static let requestRange: ClosedRange<Double> = 1...3600

    /// Seconds to establish the connection, TLS included.
    public var connect: Double
    /// Seconds an attempt may move less than one byte a second before it is abandoned.
    public var stall: Double
    /// Seconds a small API call (no file body) may take in all; never applied to file bodies.
    public var request: Double

    public init(connect: Double = 10, stall: Double = 60, request: Double = 300) {
        self.connect = connect
        self.stall = stall
        self.request = request
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
        if let request = try r.duration(t, "request_timeout") {
            guard HTTPTimeouts.requestRange.contains(request) else {
                throw r.error(t.path + ["request_timeout"], "must be between 1s and 1h (got \(DurationText.format(seconds: request)))")
            }
            timeouts.request = request
        }
        return timeouts
    }
}
