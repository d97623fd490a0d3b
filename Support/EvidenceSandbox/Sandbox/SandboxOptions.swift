/// Everything that shapes one sandbox server: where it listens, where it keeps state, and
/// which faults it injects. The `evidence-sandbox` flags map one-to-one onto these fields.
public struct SandboxOptions: Sendable {
    /// Address to bind; loopback only by default (the sandbox has no authentication worth the name).
    public var host: String
    /// TCP port; 0 lets the system choose (the chosen port is reported to `onListening`).
    public var port: Int
    /// Folder for `reports.json`, `requests.log` and the TSA's keys (`tsa/`); created if missing.
    public var stateDirectory: String
    /// The only API key QED accepts (`Authorization: app-token <key>`).
    public var apiKey: String
    /// How long a QED report stays `pending` after creation before it is `confirmed`/`failed`.
    public var pendingSeconds: Double
    /// Probability that a faulty-path request is answered with a random 500, 502 or 503.
    public var failRate: Double
    /// Requests per second and client (token, else IP) before 429; 0 = unlimited.
    public var rateLimit: Int
    /// `Retry-After` seconds sent with injected 503s, and the minimum sent with 429s.
    public var retryAfter: Int
    /// Delay added before each faulty-path request is handled.
    public var latency: LatencySpec
    /// Probability that a faulty-path request's connection is closed without any response.
    public var dropRate: Double
    /// Probability that a faulty-path request is held `spike` seconds on top of `latency`: the
    /// rare stall a loaded server or a congested link causes.
    public var spikeRate: Double
    public var spike: Double
    /// Path prefixes fault injection applies to (the emulated APIs, not the control routes).
    public var faultPathPrefixes: [String]
    /// Seconds an emulated provider's access token stays valid.
    public var tokenLifetime: Double
    /// How QED's report list answers: DRF's paginated object (default) or a bare JSON array.
    public var qedListShape: QEDEmulator.ListShape
    /// QED lists every report whatever `?hash=` asks (a server without that filter).
    public var qedIgnoresHashFilter: Bool
    /// Seed for every random choice (faults, slugs, transaction hashes); nil = random.
    public var seed: UInt64?
    /// Which server `/owncloud/` is: ownCloud 10 (computes and checks checksums) or Nextcloud
    /// (stores and echoes the client's `OC-Checksum`).
    public var owncloudFlavour: OwnCloudFlavour
    /// Seconds before a calendar's commitment is mined into a block when asked for (`--ots-confirm`).
    public var otsConfirmSeconds: Double = 0

    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        stateDirectory: String,
        apiKey: String = "sandbox-key",
        pendingSeconds: Double = 2,
        failRate: Double = 0,
        rateLimit: Int = 0,
        retryAfter: Int = 1,
        latency: LatencySpec = .none,
        dropRate: Double = 0,
        spikeRate: Double = 0,
        spike: Double = 0,
        faultPathPrefixes: [String] = ["/v1/"],
        seed: UInt64? = nil,
        tokenLifetime: Double = 3600,
        owncloudFlavour: OwnCloudFlavour = .owncloud,
        qedListShape: QEDEmulator.ListShape = .paginated,
        qedIgnoresHashFilter: Bool = false
    ) {
        self.owncloudFlavour = owncloudFlavour
        self.qedListShape = qedListShape
        self.qedIgnoresHashFilter = qedIgnoresHashFilter
        self.tokenLifetime = tokenLifetime
        self.host = host
        self.port = port
        self.stateDirectory = stateDirectory
        self.apiKey = apiKey
        self.pendingSeconds = pendingSeconds
        self.failRate = failRate
        self.rateLimit = rateLimit
        self.retryAfter = retryAfter
        self.latency = latency
        self.dropRate = dropRate
        self.spikeRate = spikeRate
        self.spike = spike
        self.faultPathPrefixes = faultPathPrefixes
        self.seed = seed
    }
}
