import ArgumentParser
import Dispatch
import EvidenceConfig
import EvidenceCore
import EvidenceMetrics
import EvidencePipeline
import EvidenceProcess
import Foundation
import Logging
import ServiceLifecycle

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The service: watch the rules' folders, ingest settled files, run the pipeline's jobs.",
        discussion: Help.reflow("""
        Loads evidence.toml and every rule in the rules folder (--rules, the config's `rules`,
        or ./watch-rules), then watches each rule's folder with inotify. A file is taken once it
        stayed unchanged for the rule's `settle` window; files already present at start are
        caught up; each file version is ingested exactly once, even across crashes.

        Signals: SIGTERM/SIGINT stop taking work, let in-flight work finish (bounded) and exit 0;
        SIGUSR1 forces a full rescan of the watched folders; SIGHUP (`systemctl reload`) reads
        evidence.toml again and rebuilds the archive accounts and notaries with their secrets
        read again (a config that no longer loads keeps the old ones, and the log says why),
        resumes paused ones, re-reads the rules (a rule file that no longer parses or checks keeps
        its previous version and is logged as an error; new and removed files add and remove
        rules; jobs read their rule when they run), and rescans.

        Credentials an account or notary refuses (HTTP 401/403, an OAuth grant refused) pause
        it: its jobs wait, no attempt is counted and no request is sent until its secret
        changes (looked at every few seconds), SIGHUP, or `evidence accounts resume NAME`.
        A rule whose folder does not exist is a warning; the folder is watched once it appears.
        Logs go to stderr (text or JSON: config `log_format`, --log-format).

        Metrics: with a [metrics] table in evidence.toml, or --metrics HOST:PORT, it also serves
        Prometheus /metrics, /healthz and /readyz (no authentication; loopback only unless
        [metrics] allow_remote = true) and prints `metrics on http://HOST:PORT/metrics` on stdout
        once listening. Without either, no port is opened.

        Trust anchors: the config file, each TSA's ca_file and the rules (and every folder above
        them) must not be writable by the user evidence runs as: otherwise it refuses to start
        (exit 2, naming each file, its owner and mode, and the chown/chmod that fixes it), or
        only warns with `anchor_permissions = "warn"`. Run as root, it warns and starts.

        Exit codes: 0 stopped cleanly · 1 a service failed (or the metrics address is in use) ·
        2 config/rules invalid, a trust anchor writable by this user, or another `evidence run`
        already serves this home.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Folder of watch rules (*.toml).", valueName: "dir"))
    var rules: String?

    @Option(name: .long, help: ArgumentHelp("text or json (default: config `log_format`).", valueName: "format"))
    var logFormat: LogFormat?

    @Option(name: .long, help: ArgumentHelp("Serve /metrics, /healthz and /readyz on HOST:PORT or [v6]:PORT, like 127.0.0.1:9464 (default: [metrics] listen, if the table is there).",
                                            valueName: "addr"))
    var metrics: ListenAddress?

    /// `[metrics]`, with --metrics overriding its address; nil when neither asks for metrics.
    func metricsConfig(_ config: EvidenceConfig) throws -> MetricsConfig? {
        guard let metrics else { return config.metrics }
        let allowRemote = config.metrics?.allowRemote ?? false
        if !allowRemote && !ServeConfig.isLoopback(metrics.host) {
            throw CLIError.config("--metrics \(metrics): \(metrics.host) is not a loopback address: the metrics would be readable "
                + "from other machines without authentication; set `allow_remote = true` in [metrics] of "
                + "\(config.file ?? "evidence.toml") to allow that")
        }
        return MetricsConfig(listen: metrics.description, allowRemote: allowRemote)
    }

    func run() async throws {
        if let problem = Hardening.disableCoreDumps() { Output.err("warning: \(problem)") }
        let config = try global.loadConfig()
        let metricsConfig = try metricsConfig(config)
        let homePath = try global.homePath(config)
        var folderWarnings: [String] = []
        let rules = try RuleSet.load(explicit: rules, config: config, home: homePath) { folderWarnings.append($0) }
        // Before anything is opened: a service that can rewrite what it is checked against is refused.
        let anchorWarnings = try AnchorGuard.startCheck(config: config, rulesDirectory: RuleSet.directory(explicit: self.rules, config: config))
        let home = try global.openHome()
        let lock: RunLock
        // A shared catalog lets several nodes serve one home (on a shared filesystem): one lock per node.
        do { lock = try RunLock(home: home.path, node: config.catalog == nil ? nil : config.nodeName) } catch { throw CLIError.usage("\(error)") }

        let level: Logger.Level = global.verbose ? .debug : global.quiet ? .warning
            : Logger.Level(rawValue: config.logLevel.rawValue) ?? .info
        let format = logFormat?.handlerFormat ?? StderrLogHandler.Format(rawValue: config.logFormat.rawValue) ?? .text
        StderrLogHandler.bootstrap(level: level, format: format)
        let logger = Logger(label: "evidence")
        for warning in anchorWarnings + folderWarnings { logger.warning("\(warning)") }

        let notaries: Notaries
        do { notaries = try Notaries.build(config: config, logger: logger) } catch { throw CLIError.config(error.description) }
        let archives: Archives
        let usedAccounts = Set(rules.compactMap(\.archive) + (config.custody?.anchorArchive.map { [$0] } ?? []))
        do { archives = try Archives.build(config: config, used: usedAccounts, home: homePath, logger: logger) } catch {
            throw CLIError.config(error.description)
        }
        let configPath = global.config
        let reload = Pipeline.Reload(load: {
            let loaded = try ConfigLoader.load(path: configPath)
            try CAFileRoots.check(loaded)
            return loaded
        }, usedAccounts: usedAccounts, home: homePath)
        // The registry exists only when metrics are served: without them nothing is measured.
        let factory = metricsConfig.map { _ in EvidenceMetricsFactory() }
        factory?.bootstrapProcess()
        let pipeline = Pipeline(home: home, config: config, rules: rules, notaries: notaries, archives: archives,
                                metrics: factory.map { PipelineMetrics(factory: $0) } ?? .disabled,
                                prober: ChildMediaProbe.prober(executable: ProbeCommand.executable), reload: reload,
                                posterExecutable: ProbeCommand.executable, logger: logger)
        var alongside: [any Service] = []
        if let metricsConfig, let factory {
            let endpoint = MetricsEndpoint(
                host: metricsConfig.host, port: metricsConfig.port, registry: factory.registry,
                gauges: CatalogGauges(catalog: home.catalog, registry: factory.registry, jobKinds: pipeline.jobRunner.kinds.map(\.rawValue),
                                      anchorDirectory: config.custody.map { _ in ChainAnchors.directory(home) }),
                checks: ReadinessCheck.pipeline(pipeline))
            alongside.append(endpoint.makeApplication(logger: logger) { port in
                let url = MetricsEndpoint.baseURL(host: metricsConfig.host, port: port) + "/metrics"
                // Logged first, then printed unbuffered: a parent that reads the printed line
                // finds the log line already written.
                logger.notice("serving metrics", metadata: ["url": "\(url)"])
                Output.writeOutput(Data("metrics on \(url)\n".utf8))
            })
        }
        signal(SIGUSR1, SIG_IGN)
        let usr1 = DispatchSource.makeSignalSource(signal: SIGUSR1)
        usr1.setEventHandler { pipeline.watchService.rescan() }
        usr1.resume()
        // SIGHUP (`systemctl reload`): accounts and notaries rebuilt with their secrets read again.
        signal(SIGHUP, SIG_IGN)
        let hup = DispatchSource.makeSignalSource(signal: SIGHUP)
        let rulesDirectory = RuleSet.directory(explicit: self.rules, config: config)
        hup.setEventHandler {
            logger.notice("SIGHUP: reloading accounts, notaries and rules, then a rescan")
            Thread.detachNewThread {   // reads files and the catalog: off the signal queue
                pipeline.reloadCredentials()
                guard let dir = rulesDirectory else { return }
                let (loaded, errors) = ConfigLoader.loadRules(directory: dir)
                let current = (try? reload.load()) ?? config
                let withHome = RuleSet.withHome(current, homePath)
                let report = pipeline.reloadRules(loaded: loaded, errors: errors) { rules in
                    var problems = ConfigLoader.validate(rules: rules, against: withHome)
                    // Accounts are opened at start: a rule may not name one this run does not hold.
                    for r in rules { if let a = r.archive, !usedAccounts.contains(a) {
                        problems.append(ConfigError(file: r.file, field: "archive",
                                                    message: "account \"\(a)\" was not in use when evidence run started: restart to add an account"))
                    } }
                    return problems
                }
                for line in report {
                    if line.contains(" keeps its previous version: ") || line.contains(" is not added: ") { logger.error("\(line)") } else { logger.notice("\(line)") }
                }
            }
            pipeline.watchService.rescan()
        }
        hup.resume()
        logger.notice("evidence run started", metadata: [
            "home": "\(home.path)", "pid": "\(getpid())",
            "rules": "\(rules.map { "\($0.name)=\($0.path)" }.joined(separator: ","))",
        ])
        do {
            try await pipeline.run(alongside: alongside, logger: logger)
        } catch {
            logger.critical("stopped on error: \(error)")
            throw ExitCode(1)
        }
        usr1.cancel()
        hup.cancel()
        try home.catalog.flushHead()
        withExtendedLifetime(lock) {}
        logger.notice("evidence run stopped", metadata: ["ingested": "\(pipeline.watchService.stats.ingested)"])
    }
}

/// Loading and checking the rules, shared by `run` and `rules check`.
enum RuleSet {
    /// The warning for a rule whose watched folder does not exist.
    static func missingFolder(_ r: WatchRule) -> String {
        "\(r.file): field `path`: watched folder \(r.path) does not exist (yet): its files are taken once it appears; the other rules run meanwhile"
    }

    /// `config` with `home` made absolute, as the rules are checked against it.
    static func withHome(_ config: EvidenceConfig, _ home: String) -> EvidenceConfig {
        var c = config
        c.home = home.hasPrefix("/") ? home : FileManager.default.currentDirectoryPath + "/" + home
        return c
    }

    static func directory(explicit: String?, config: EvidenceConfig) -> String? {
        if let explicit { return explicit }
        if let d = config.rulesDir { return d }
        return FileManager.default.fileExists(atPath: "watch-rules") ? "watch-rules" : nil
    }

    /// All rules, or a usage-grade error listing every problem (file, line, field). A watched
    /// folder that does not exist (an unmounted dock, a share not yet attached) is a warning,
    /// the same for `rules check`, `doctor` and `run`: `run` watches the other rules' folders
    /// and that one once it appears.
    static func load(explicit: String?, config: EvidenceConfig, home: String,
                     warnings: ((String) -> Void)? = nil) throws -> [WatchRule] {
        guard let dir = directory(explicit: explicit, config: config) else {
            throw CLIError.config("no watch rules: pass --rules DIR, set `rules` in evidence.toml, or create ./watch-rules (see `evidence rules check --help`)")
        }
        let (rules, errors) = ConfigLoader.loadRules(directory: dir)
        let withHome = withHome(config, home)
        var problems = errors.map(\.description) + ConfigLoader.validate(rules: rules, against: withHome).map(\.description)
        // Another node's folder need not exist here: that node watches it.
        for r in rules where r.isWatched(on: config.nodeName) && !FileManager.default.fileExists(atPath: r.path) {
            warnings?(missingFolder(r))
        }
        if problems.isEmpty && rules.isEmpty { problems.append("\(dir): no rule files (*.toml)") }
        // A folder that is there but is a file (or a link to one) cannot become a folder by waiting.
        for r in rules where r.isWatched(on: config.nodeName) {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: r.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                problems.append("\(r.file): field `path`: \(r.path) is not a folder")
            }
        }
        guard problems.isEmpty else { throw CLIError.config(problems.joined(separator: "\n")) }
        return rules
    }
}
