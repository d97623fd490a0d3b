import EvidenceConfig
import EvidenceHTTP

extension HTTPClientConfiguration {
    /// The HTTP settings of one `[notaries.NAME]` or `[archives.NAME]` table: its extra CA,
    /// its `connect_timeout`, `stall_timeout` and `request_timeout`, and its name for TLS error messages.
    public init(table: String, caFile: String?, timeouts: HTTPTimeouts) {
        self.init(connectTimeout: timeouts.connect, totalTimeout: timeouts.request, lowSpeedTime: timeouts.stall,
                  caFile: caFile, settingsTable: table)
    }
}
