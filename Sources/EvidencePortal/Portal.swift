import EvidenceCore
import EvidenceConfig
import EvidencePipeline
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// `evidence serve`: the auditor portal over one home, read-only.
///
/// Pages: `/` (search by hash prefix, file name, item number or ingest day), `/items/{id}`
/// (state, media, proofs, certificates, archive, custody events), `/items/{id}/certificates/{origin}.pdf`,
/// `/items/{id}/bundle.zip` and `.tar` (the auditor's bundle), `/status` (for operators).
/// Plain HTML, no script. Every request needs the token or the Basic user (`PortalAuth`);
/// failed sign-ins are throttled per client address and per user name (`LoginThrottle`);
/// only GET and HEAD are answered.
public struct Portal: Sendable {
    public struct Options: Sendable {
        public var host: String
        public var port: Int
        public var auth: PortalAuth
        /// RFC 3161 notaries' CA files, by notary name: they go into bundles.
        public var tsaCAFiles: [String: String]
        /// Rows per search or list.
        public var limit: Int
        /// Seconds after which an item on its way is listed as stuck on /status.
        public var stuckAfter: Double
        /// Bundles built at once; more requests get 503 with Retry-After.
        public var bundleBuilds: Int
        /// Failed sign-ins per client address and per user name before 429 (see `LoginThrottle`).
        public var loginThrottle: LoginThrottle
        /// Times are shown in this zone beside UTC (`timezone` in evidence.toml).
        public var timezone: LocalTime = .utc
        /// Items per page of the list.
        public var pageSize = ListFilter.pageSize

        public init(host: String = "127.0.0.1", port: Int = 8480, auth: PortalAuth, tsaCAFiles: [String: String] = [:],
                    limit: Int = 100, stuckAfter: Double = 600, bundleBuilds: Int = 2, loginThrottle: LoginThrottle = LoginThrottle()) {
            self.host = host; self.port = port; self.auth = auth; self.tsaCAFiles = tsaCAFiles
            self.limit = limit; self.stuckAfter = stuckAfter; self.bundleBuilds = bundleBuilds
            self.loginThrottle = loginThrottle
        }
    }

    public let home: EvidenceHome
    public let options: Options

    public init(home: EvidenceHome, options: Options) {
        self.home = home
        self.options = options
    }

    /// Secrets from the `[serve]` table (errors name the config file and field, never the secret).
    public static func auth(from serve: ServeConfig, configFile: String) throws(ConfigError) -> PortalAuth {
        let token = try serve.token.map { source throws(ConfigError) in
            try ConfigLoader.readSecret(source, field: serve.tokenEnv != nil ? "serve.token_env" : "serve.token_file", configFile: configFile)
        }
        let password = try serve.password.map { source throws(ConfigError) in
            try ConfigLoader.readSecret(source, field: serve.passwordEnv != nil ? "serve.password_env" : "serve.password_file", configFile: configFile)
        }
        do {
            return try PortalAuth(token: token, user: serve.user, password: password)
        } catch {
            throw ConfigError(file: configFile, field: "serve", message: "\(error)")
        }
    }

    public func makeResponder() -> PortalResponder {
        let router = Router(context: PortalContext.self, options: .autoGenerateHeadEndpoints)
        PortalRoutes(data: PortalData(home: home, limit: options.limit, timezone: options.timezone, pageSize: options.pageSize), tsaCAFiles: options.tsaCAFiles,
                     stuckAfter: options.stuckAfter, builds: BuildSlots(limit: options.bundleBuilds)).add(to: router)
        return PortalResponder(auth: options.auth, router: router.buildResponder(), throttle: options.loginThrottle)
    }

    /// The HTTP server. `onListening` gets the bound port (useful with port 0).
    public func makeApplication(logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in })
        -> Application<PortalResponder> {
        BundleDownload.removeStaleWorkFolders(home: home)
        return Application(
            responder: makeResponder(),
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: "evidence"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// Serves until SIGTERM or SIGINT, then lets requests in flight finish and returns.
    public func run(logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: makeApplication(logger: logger, onListening: onListening))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}
