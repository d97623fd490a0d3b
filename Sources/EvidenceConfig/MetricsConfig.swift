/// The `[metrics]` table: `/metrics`, `/healthz` and `/readyz` served by `evidence run`.
///
/// ```toml
/// [metrics]
/// listen = "127.0.0.1:9464"          # default; a non-loopback address needs allow_remote = true
/// ```
///
/// Without the table (and without `evidence run --metrics ADDR`) no port is opened. The
/// endpoints have no authentication: they show counts and timings, never paths, hashes or
/// secrets, but are still only for loopback unless the operator says otherwise.
public struct MetricsConfig: Sendable, Equatable {
    /// 9464 is the port Prometheus' default-port list gives to exporters of this kind.
    public static let defaultListen = "127.0.0.1:9464"
    public static let allowedKeys: Set<String> = ["listen", "allow_remote"]

    /// `listen` as written (`host:port`, `[v6]:port`).
    public var listen: String
    public var host: String
    public var port: Int
    /// `allow_remote = true` lets `listen` be an address other machines can reach.
    public var allowRemote: Bool

    public init(listen: String = MetricsConfig.defaultListen, allowRemote: Bool = false) {
        self.listen = listen
        let parsed = ServeConfig.parseListen(listen) ?? (host: "127.0.0.1", port: 9464)
        self.host = parsed.host
        self.port = parsed.port
        self.allowRemote = allowRemote
    }

    /// What to add to evidence.toml to scrape `evidence run` from this machine.
    public static let exampleTOML = """
        [metrics]
        listen = "127.0.0.1:9464"
        """
}

extension ConfigFileParser {
    static func metrics(_ r: TOMLReader, _ t: TOMLTableRef) throws(ConfigError) -> MetricsConfig {
        try r.checkKeys(t, allowed: MetricsConfig.allowedKeys)
        let l = try r.listenSetting(t, default: MetricsConfig.defaultListen,
                                    exposure: "the metrics would be readable from other machines without authentication")
        return MetricsConfig(listen: l.listen, allowRemote: l.allowRemote)
    }
}
