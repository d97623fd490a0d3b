import EvidenceArchive
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceMedia
import EvidenceWatch
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// `evidence run` assembled: the watcher with its ingest workers, and the job runner, as
/// services of one group that stops gracefully on SIGTERM/SIGINT.
public struct Pipeline: Sendable {
    public let home: EvidenceHome
    public let rules: [WatchRule]
    public let watchService: WatchService
    public let jobRunner: JobRunner
    /// With `[custody]`: time-stamps the custody head periodically.
    let anchorService: ChainAnchorService?
    /// Renews the rfc3161 notaries' due time-stamp proofs (RFC 4998 §5.2).
    let renewalService: RenewalService
    /// Accounts and notaries whose credentials were refused (with `reload`; else nil).
    public let pauses: Pauses?
    let reloader: CredentialReloader?
    /// The rules the handlers and the ingest read, replaced by `reloadRules`.
    public let ruleSet: LiveRules
    let nodeName: String
    let logger: Logger

    /// How `run` rebuilds its accounts and notaries (SIGHUP, or a paused one's secret changed):
    /// the configuration as it is now, and the accounts it uses.
    public struct Reload: Sendable {
        public var load: @Sendable () throws -> EvidenceConfig
        public var usedAccounts: Set<String>
        public var home: String

        public init(load: @escaping @Sendable () throws -> EvidenceConfig, usedAccounts: Set<String>, home: String) {
            self.load = load; self.usedAccounts = usedAccounts; self.home = home
        }
    }

    /// `notaries` are built from the config by the caller (`Notaries.build`), so that a missing
    /// API key is a config error before the service starts. `metrics` receives the jobs',
    /// watcher's, notaries' and providers' measurements (nothing is measured by default).
    public init(home: EvidenceHome, config: EvidenceConfig, rules: [WatchRule], notaries: Notaries,
                archives: Archives = Archives(), metrics: PipelineMetrics = .disabled,
                prober: @escaping MediaProber = { MediaProbe.probe(path: $0, name: $1) }, reload: Reload? = nil,
                posterExecutable: String? = nil, logger: Logger) {
        self.home = home
        self.rules = rules
        let archives = archives.measured(by: metrics)
        if !metrics.isDisabled, let sqlite = home.catalog as? SQLiteCatalog {
            sqlite.observeCommits { metrics.catalogCommitted(writes: $0) }
        }
        let reloader = reload.map { CredentialReloader(reload: $0, config: config, archives: archives, notaries: notaries, metrics: metrics, logger: logger) }
        self.reloader = reloader
        pauses = reloader.map { r in
            Pauses(catalog: home.catalog, logger: logger, fingerprint: { r.fingerprint($0, $1) }, reload: { r.reload() })
        }
        let owner = Lease.owner(role: "run", node: config.nodeName)
        let ingestor = Ingestor(home: home, actor: "run:\(config.nodeName):\(getpid())", prober: prober)
        // Every rule's jobs run here; only this node's rules are watched here.
        let watched = rules.filter { $0.isWatched(on: config.nodeName) }
        let byName = LiveRules(rules)
        ruleSet = byName
        nodeName = config.nodeName
        self.logger = logger
        watchService = WatchService(watcher: Watcher(specs: Self.specs(watched), logger: logger), rules: watched, ingestor: ingestor,
                                    workers: config.workers.ingest, logger: logger, metrics: metrics)
        let copyTo = config.custody?.anchorArchive.flatMap { archives.providers[$0] }
        jobRunner = JobRunner(catalog: home.catalog,
                              handlers: (copyTo.map { [AnchorCopyHandler(home: home, provider: $0, logger: logger)] } ?? [])
                                + [VerifyHandler(home: home, rules: byName),
                                         NotarizeHandler(home: home, rules: byName, notaries: notaries, metrics: metrics),
                                         StampHandler(home: home, rules: byName, notaries: notaries, metrics: metrics),
                                         CertificateHandler(home: home, rules: byName, notaries: notaries, metrics: metrics,
                                                            timezone: config.timezone, posterExecutable: posterExecutable, logger: logger),
                                         ArchiveHandler(home: home, rules: byName, archives: archives),
                                         ShareHandler(home: home, rules: byName, archives: archives),
                                         AfterActionHandler(home: home, rules: byName)],
                              owner: owner, workers: config.workers.jobs, lease: config.workers.lease, metrics: metrics,
                              pauses: pauses, logger: logger)
        if let custody = config.custody, case .rfc3161(let tsa)? = notaries.entries[custody.anchorTSA]?.client {
            anchorService = ChainAnchorService(home: home, tsa: tsa, every: custody.anchorEvery,
                                               copyTo: copyTo?.account, origin: custody.origin, logger: logger)
        } else {
            anchorService = nil
        }
        renewalService = RenewalService(renewal: RecordRenewal(home: home, notaries: notaries, anchorTSA: config.custody?.anchorTSA,
                                   anchorArchive: config.custody?.anchorArchive, logger: logger),
                                        notaries: notaries, logger: logger)
    }

    /// Runs until SIGTERM/SIGINT, then drains and returns. `alongside` (e.g. the metrics
    /// endpoint) run in the same group: they start with the pipeline, stop gracefully with it,
    /// and one of them failing stops the whole group.
    public func run(alongside: [any Service] = [], logger: Logger) async throws {
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: watchService), .init(service: jobRunner), .init(service: renewalService)]
                + (anchorService.map { [.init(service: $0)] } ?? []) + alongside.map { .init(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
        // The last events of the drain are covered too (bounded: a stopping service must not hang on a TSA).
        if let anchorService {
            await withTaskGroup(of: Void.self) { g in
                g.addTask { await anchorService.anchorOnce() }
                g.addTask { try? await Task.sleep(for: .seconds(15)) }
                await g.next()
                g.cancelAll()
            }
        }
    }
}

extension Pipeline {
    /// What the watcher watches for these rules.
    static func specs(_ rules: [WatchRule]) -> [WatchSpec] {
        rules.map {
            var spec = WatchSpec(rule: $0.name, root: $0.path, include: $0.include, exclude: $0.exclude,
                                 recursive: $0.recursive, settle: $0.settle, pollInterval: $0.pollInterval,
                                 maxDepth: $0.maxDepth, settleMax: $0.settleMax)
            spec.waitForRoot = true   // an unmounted dock does not stop the other rules
            return spec
        }
    }

    /// SIGHUP: the rules as `loaded` now (with `errors` for the files that did not parse, and
    /// `validate` for the checks against the configuration). A rule whose file no longer parses
    /// or checks keeps its previous version; a new file adds a rule, a removed one removes it
    /// (its items' remaining jobs wait until it is back). Jobs read their rule when they run; if
    /// what is watched changed, the watcher is replaced and its initial scan finds every file
    /// again (those already taken are skipped). Returns one line per change or problem.
    @discardableResult
    public func reloadRules(loaded: [WatchRule], errors: [ConfigError], validate: ([WatchRule]) -> [ConfigError]) -> [String] {
        func ruleName(_ file: String) -> String { ((file as NSString).lastPathComponent as NSString).deletingPathExtension }
        let before = ruleSet.all
        var next = before
        var report: [String] = []
        var broken = Set<String>()
        for e in errors + validate(loaded) {
            let name = ruleName(e.file)
            broken.insert(name)
            report.append("rule \(name)" + (before[name] != nil ? " keeps its previous version" : " is not added") + ": \(e)")
        }
        for r in loaded where !broken.contains(r.name) {
            if before[r.name] == nil { report.append("rule \(r.name) added") } else if before[r.name] != r { report.append("rule \(r.name) changed") }
            next[r.name] = r
        }
        let present = Set(loaded.map(\.name)).union(broken)
        for name in before.keys.sorted() where !present.contains(name) {
            next[name] = nil
            report.append("rule \(name) removed (its file is gone): its items' remaining jobs wait until it is back")
        }
        guard next != before else { return report + ["rules unchanged"] }
        ruleSet.replace(next)
        let watched = next.values.filter { $0.isWatched(on: nodeName) }.sorted { $0.name < $1.name }
        let oldWatched = before.values.filter { $0.isWatched(on: nodeName) }.sorted { $0.name < $1.name }
        if Self.specs(watched) != Self.specs(oldWatched) {
            watchService.replace(watcher: Watcher(specs: Self.specs(watched), logger: logger), rules: watched)
        } else {
            watchService.update(rules: watched)
        }
        return report
    }

    /// SIGHUP: the accounts and notaries rebuilt from the configuration as it is now (their
    /// secrets read again; a configuration that no longer loads keeps the old ones, and says
    /// why), and every paused one given its chance again. The rules: `reloadRules`.
    public func reloadCredentials() {
        guard let reloader, reloader.reload() else { return }
        pauses?.checkSecrets(reloaded: true)
    }
}

/// Rebuilds accounts and notaries in place (`Archives.replace`, `Notaries.replace`), and tells a
/// pause whether the secrets it was refused with have changed.
final class CredentialReloader: Sendable {
    let load: Pipeline.Reload
    let config: Mutex<EvidenceConfig>
    let archives: Archives
    let notaries: Notaries
    let metrics: PipelineMetrics
    let logger: Logger

    init(reload: Pipeline.Reload, config: EvidenceConfig, archives: Archives, notaries: Notaries, metrics: PipelineMetrics, logger: Logger) {
        self.load = reload; self.config = Mutex(config); self.archives = archives; self.notaries = notaries
        self.metrics = metrics; self.logger = logger
    }

    @discardableResult
    func reload() -> Bool {
        do {
            let config = try load.load()
            let newArchives = try Archives.build(config: config, used: load.usedAccounts, home: load.home, logger: logger)
            let newNotaries = try Notaries.build(config: config, logger: logger)
            archives.replace(with: newArchives.measured(by: metrics))
            notaries.replace(with: newNotaries)
            self.config.withLock { $0 = config }
            logger.notice("accounts and notaries reloaded from \(config.file ?? "the embedded defaults"): secrets read again")
            return true
        } catch {
            logger.error("reload failed, the accounts and notaries stay as they were: \(error)")
            return false
        }
    }

    /// SHA-256 over the secrets `name` reads (and an OAuth account's token file); nil: none.
    func fingerprint(_ kind: CredentialPause.Kind, _ name: String) -> String? {
        let config = self.config.withLock { $0 }
        switch kind {
        case .account:
            guard let account = config.archives[name] else { return nil }
            let d = account.descriptor
            let secrets = (d.requiredSecrets + d.optionalSecrets).compactMap { account.secret($0) }
            let tokens = d.usesOAuth ? [account.tokenFile ?? Archives.defaultTokenFile(home: load.home, account: name)] : []
            return Pauses.fingerprint(secrets: secrets, files: tokens)
        case .notary:
            return config.notaries[name]?.apiKey.flatMap { Pauses.fingerprint(secrets: [$0], files: []) }
        }
    }
}
