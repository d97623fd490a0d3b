import Foundation

/// Settings of one `HTTPClient`. Timeouts are per attempt, in seconds.
public struct HTTPClientConfiguration: Sendable {
    public var connectTimeout = 10.0
    /// Whole attempt of a small API call. 0 = no limit. Never applied to a file body (an upload
    /// from a file, a download to a file) or an in-memory body over `bulkBodyBytes`: those are
    /// bounded by the low-speed guard and the connect timeout only, so a large original on a
    /// slow link arrives however long it takes while it keeps moving.
    public var totalTimeout = 300.0
    /// An attempt slower than `lowSpeedLimit` bytes/s for `lowSpeedTime` seconds times out.
    public var lowSpeedLimit = 1
    public var lowSpeedTime = 60.0
    /// Transfers running at once (dedicated threads); more requests wait in a queue.
    public var maxConcurrentTransfers = 4
    /// An extra trusted CA bundle (PEM) for private deployments. The system store stays trusted
    /// (Debian's libcurl also reads `/etc/ssl/certs`). Verification of peer and host name is
    /// always on; there is deliberately no switch to turn it off.
    public var caFile: String?
    /// The config table these settings come from (`"notaries.qed"`, `"archives.vault"`), so a
    /// TLS failure can say which `tls_ca_file` or URL to fix. nil: the message says only what failed.
    public var settingsTable: String?
    /// In-memory bodies above this fail with `.tooLarge`; downloads to a file are unlimited.
    public var maxResponseBytes = 64 << 20
    public var userAgent = "evidence/0.1"
    /// An in-memory request body at least this large counts as a file body (no total cap).
    public static let bulkBodyBytes = 1 << 20
    public var retry = RetryPolicy()

    public init(connectTimeout: Double = 10.0, totalTimeout: Double = 300.0, lowSpeedLimit: Int = 1,
                lowSpeedTime: Double = 60.0, maxConcurrentTransfers: Int = 4, caFile: String? = nil,
                maxResponseBytes: Int = 64 << 20, userAgent: String = "evidence/0.1",
                retry: RetryPolicy = RetryPolicy(), settingsTable: String? = nil) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.lowSpeedLimit = lowSpeedLimit
        self.lowSpeedTime = lowSpeedTime
        self.maxConcurrentTransfers = maxConcurrentTransfers
        self.caFile = caFile
        self.maxResponseBytes = maxResponseBytes
        self.userAgent = userAgent
        self.retry = retry
        self.settingsTable = settingsTable
    }
}
