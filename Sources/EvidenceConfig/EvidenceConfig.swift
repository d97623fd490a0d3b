import Foundation
import EvidenceCore

/// The service configuration (`evidence.toml`), fully validated and with every path absolute.
///
/// Found at `--config FILE`, else `$EVIDENCE_CONFIG`, else `./evidence.toml`; with none,
/// `embeddedDefaults` apply (ingest only). See `ConfigLoader.load`.
public struct EvidenceConfig: Sendable, Equatable {
    /// Absolute path of the `evidence.toml` read; `nil` = embedded defaults.
    public var file: String?
    /// `home`, resolved absolute (relative to the config file's directory). `nil` = not set:
    /// the caller applies `--home`, `$EVIDENCE_HOME`, else `EvidenceConfig.defaultHome`.
    public var home: String?
    /// `rules`, the folder of watch-rule files, resolved absolute. `nil` = not set.
    public var rulesDir: String?
    public var logLevel: LogLevel
    public var logFormat: LogFormat
    public var workers: Workers
    /// Keyed by the table name (`[notaries.qed]` → `"qed"`), which rules refer to.
    public var notaries: [String: NotaryConfig]
    /// Keyed by the table name (`[archives.office]` → `"office"`), which rules refer to.
    public var archives: [String: ArchiveConfig]
    /// `[serve]`: the auditor portal; nil when the file has no such table.
    public var serve: ServeConfig?
    /// `[metrics]`: `/metrics`, `/healthz`, `/readyz` from `evidence run`; nil when the file has no such table.
    public var metrics: MetricsConfig?
    /// `[custody]`: time-stamped anchors of the custody chain; nil = none.
    public var custody: CustodyConfig?
    /// `[catalog]`: a PostgreSQL catalog shared by several nodes; nil = `catalog.sqlite` in the home.
    public var catalog: CatalogConfig?
    /// `[store]`: the content-addressed store; nil = `objects/` in the home.
    public var store: StoreConfig?
    /// `node`: this host's name among the nodes sharing a catalog (job leases, custody actors,
    /// status per node); nil = the host name.
    public var node: String?
    /// `timezone`: the zone local times are shown in beside UTC (certificates, disclosure
    /// indexes, declarations, the portal); UTC alone when not set.
    public var timezone: LocalTime = .utc
    /// `anchor_permissions`: what `run` and `doctor` do when the user they run as could rewrite a
    /// trust anchor (this file, a `ca_file`, the rules): refuse (default) or warn.
    public var anchorPermissions: AnchorPermissions = .refuse

    /// `node`, else the host name.
    public var nodeName: String { node ?? ProcessInfo.processInfo.hostName }

    public init(
        file: String? = nil, home: String? = nil, rulesDir: String? = nil,
        logLevel: LogLevel = .info, logFormat: LogFormat = .text, workers: Workers = Workers(),
        notaries: [String: NotaryConfig] = [:], archives: [String: ArchiveConfig] = [:], serve: ServeConfig? = nil,
        metrics: MetricsConfig? = nil
    ) {
        self.file = file
        self.home = home
        self.rulesDir = rulesDir
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.workers = workers
        self.notaries = notaries
        self.archives = archives
        self.serve = serve
        self.metrics = metrics
    }

    /// No file, no home/rules set, log info/text, workers sized from the host, no notary, no archive (ingest only).
    public static let embeddedDefaults = EvidenceConfig()

    /// The store home when neither `--home`, `$EVIDENCE_HOME` nor `home` is given (relative to the cwd).
    public static let defaultHome = "./.evidence"
}

/// `log_level`: trace | debug | info | notice | warning | error.
public enum LogLevel: String, Sendable, Equatable, CaseIterable {
    case trace, debug, info, notice, warning, error
}

/// `anchor_permissions`: refuse | warn.
public enum AnchorPermissions: String, Sendable, Equatable, CaseIterable {
    case refuse, warn
}

/// `log_format`: text | json.
public enum LogFormat: String, Sendable, Equatable, CaseIterable {
    case text, json
}

/// `[workers]`: concurrency of ingest (hash + copy) and of the other jobs; each 1...64.
public struct Workers: Sendable, Equatable {
    public static let allowedRange = 1...64
    public var ingest: Int
    public var jobs: Int
    /// `lease`: how long a job stays taken by a runner that stops renewing it (renewed every
    /// third of it while the job runs): the time before another node takes over the jobs of
    /// one that died. 10 s to 1 h; default 5 minutes.
    public var lease: Double
    public static let leaseRange = 10.0...3600.0
    /// Sized from the host unless `[workers]` says otherwise. Ingest is I/O-bound (fsyncs): at
    /// least 4 (they overlap well even on 2 cores), one per core beyond. Jobs wait on the network
    /// (notaries, providers) far more than on a core: two per core, at least 2, at most 16.
    public static func hostIngest(cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> Int { min(16, max(4, cores)) }
    public static func hostJobs(cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> Int { min(16, max(2, 2 * cores)) }

    public init(ingest: Int = Workers.hostIngest(), jobs: Int = Workers.hostJobs(), lease: Double = 300) {
        self.ingest = ingest
        self.jobs = jobs
        self.lease = lease
    }
}
