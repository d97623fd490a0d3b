import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceMedia
import EvidenceWatch
import Foundation
import Logging
import ServiceLifecycle

/// `evidence run` assembled: the watcher with its ingest workers, and the job runner, as
/// services of one group that stops gracefully on SIGTERM/SIGINT.
public struct Pipeline: Sendable {
    public let home: EvidenceHome
    public let rules: [WatchRule]
    public let watchService: WatchService
    public let jobRunner: JobRunner
    /// With `[custody]`: time-stamps the custody head periodically.
    let anchorService: ChainAnchorService?

    /// `notaries` are built from the config by the caller (`Notaries.build`), so that a missing
    /// API key is a config error before the service starts. `metrics` receives the jobs',
    /// watcher's, notaries' and providers' measurements (nothing is measured by default).
    public init(home: EvidenceHome, config: EvidenceConfig, rules: [WatchRule], notaries: Notaries,
                archives: Archives = Archives(), metrics: PipelineMetrics = .disabled,
                prober: @escaping MediaProber = { MediaProbe.probe(path: $0, name: $1) }, logger: Logger) {
        self.home = home
        self.rules = rules
        let archives = archives.measured(by: metrics)
        let owner = Lease.owner(role: "run", node: config.nodeName)
        let ingestor = Ingestor(home: home, actor: "run:\(config.nodeName):\(getpid())", prober: prober)
        // Every rule's jobs run here; only this node's rules are watched here.
        let watched = rules.filter { $0.isWatched(on: config.nodeName) }
        let specs = watched.map {
            WatchSpec(rule: $0.name, root: $0.path, include: $0.include, exclude: $0.exclude,
                      recursive: $0.recursive, settle: $0.settle, pollInterval: $0.pollInterval,
                      maxDepth: $0.maxDepth, settleMax: $0.settleMax)
        }
        let byName = Dictionary(rules.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        watchService = WatchService(watcher: Watcher(specs: specs, logger: logger), rules: watched, ingestor: ingestor,
                                    workers: config.workers.ingest, logger: logger, metrics: metrics)
        let copyTo = config.custody?.anchorArchive.flatMap { archives.providers[$0] }
        jobRunner = JobRunner(catalog: home.catalog,
                              handlers: (copyTo.map { [AnchorCopyHandler(home: home, provider: $0, logger: logger)] } ?? [])
                                + [VerifyHandler(home: home, rules: byName),
                                         NotarizeHandler(home: home, rules: byName, notaries: notaries, metrics: metrics),
                                         CertificateHandler(home: home, rules: byName, notaries: notaries, metrics: metrics),
                                         ArchiveHandler(home: home, rules: byName, archives: archives),
                                         ShareHandler(home: home, rules: byName, archives: archives),
                                         AfterActionHandler(home: home, rules: byName)],
                              owner: owner, workers: config.workers.jobs, lease: config.workers.lease, metrics: metrics,
                              logger: logger)
        if let custody = config.custody, case .rfc3161(let tsa)? = notaries.entries[custody.anchorTSA]?.client {
            anchorService = ChainAnchorService(home: home, tsa: tsa, every: custody.anchorEvery,
                                               copyTo: copyTo?.account, logger: logger)
        } else {
            anchorService = nil
        }
    }

    /// Runs until SIGTERM/SIGINT, then drains and returns. `alongside` (e.g. the metrics
    /// endpoint) run in the same group: they start with the pipeline, stop gracefully with it,
    /// and one of them failing stops the whole group.
    public func run(alongside: [any Service] = [], logger: Logger) async throws {
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: watchService), .init(service: jobRunner)]
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
