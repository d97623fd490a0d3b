import ArgumentParser
import Dispatch
import EvidenceConfig
import EvidenceCore
import EvidencePipeline
import Foundation
import Logging

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The service: watch the rules' folders, ingest settled files, run the pipeline's jobs.",
        discussion: """
        Loads evidence.toml and every rule in the rules folder (--rules, the config's `rules`,
        or ./watch-rules), then watches each rule's folder with inotify. A file is taken once it
        stayed unchanged for the rule's `settle` window; files already present at start are
        caught up; each file version is ingested exactly once, even across crashes.

        Signals: SIGTERM/SIGINT stop taking work, let in-flight work finish (bounded) and exit 0;
        SIGUSR1 forces a full rescan of the watched folders.
        Logs go to stderr (text or JSON: config `log_format`, --log-format).

        Exit codes: 0 stopped cleanly · 1 a service failed · 2 config/rules invalid, or another
        `evidence run` already serves this home.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Folder of watch rules (*.toml).", valueName: "dir"))
    var rules: String?

    @Option(name: .long, help: ArgumentHelp("text or json (default: config `log_format`).", valueName: "format"))
    var logFormat: String?

    func validate() throws {
        if let f = logFormat, f != "text", f != "json" { throw ValidationError("--log-format must be text or json") }
    }

    func run() async throws {
        let config = try global.loadConfig()
        let homePath = try global.homePath(config)
        let rules = try RuleSet.load(explicit: rules, config: config, home: homePath)
        let home = try global.openHome()
        let lock: RunLock
        do { lock = try RunLock(home: home.path) } catch { throw CLIError.usage("\(error)") }

        let level: Logger.Level = global.verbose ? .debug : global.quiet ? .warning
            : Logger.Level(rawValue: config.logLevel.rawValue) ?? .info
        let format = StderrLogHandler.Format(rawValue: logFormat ?? config.logFormat.rawValue) ?? .text
        LoggingSystem.bootstrap { StderrLogHandler(label: $0, level: level, format: format) }
        let logger = Logger(label: "evidence")

        let notaries: Notaries
        do { notaries = try Notaries.build(config: config, logger: logger) } catch { throw CLIError.config(error.description) }
        let archives: Archives
        do { archives = try Archives.build(config: config, used: Set(rules.compactMap(\.archive)), home: homePath, logger: logger) } catch {
            throw CLIError.config(error.description)
        }
        let pipeline = Pipeline(home: home, config: config, rules: rules, notaries: notaries, archives: archives, logger: logger)
        signal(SIGUSR1, SIG_IGN)
        let usr1 = DispatchSource.makeSignalSource(signal: SIGUSR1)
        usr1.setEventHandler { pipeline.watchService.rescan() }
        usr1.resume()
        logger.notice("evidence run started", metadata: [
            "home": "\(home.path)", "pid": "\(getpid())",
            "rules": "\(rules.map { "\($0.name)=\($0.path)" }.joined(separator: ","))",
        ])
        do {
            try await pipeline.run(logger: logger)
        } catch {
            logger.critical("stopped on error: \(error)")
            throw ExitCode(1)
        }
        usr1.cancel()
        try home.catalog.flushHead()
        withExtendedLifetime(lock) {}
        logger.notice("evidence run stopped", metadata: ["ingested": "\(pipeline.watchService.stats.ingested)"])
    }
}

/// Loading and checking the rules, shared by `run` and `rules check`.
enum RuleSet {
    static func directory(explicit: String?, config: EvidenceConfig) -> String? {
        if let explicit { return explicit }
        if let d = config.rulesDir { return d }
        return FileManager.default.fileExists(atPath: "watch-rules") ? "watch-rules" : nil
    }

    /// All rules, or a usage-grade error listing every problem (file, line, field). A watched
    /// folder that does not exist is an error for `run` and a warning for `rules check`.
    static func load(explicit: String?, config: EvidenceConfig, home: String,
                     requireFolders: Bool = true, warnings: ((String) -> Void)? = nil) throws -> [WatchRule] {
        guard let dir = directory(explicit: explicit, config: config) else {
            throw CLIError.config("no watch rules: pass --rules DIR, set `rules` in evidence.toml, or create ./watch-rules (see `evidence rules check --help`)")
        }
        let (rules, errors) = ConfigLoader.loadRules(directory: dir)
        var withHome = config
        withHome.home = home.hasPrefix("/") ? home : FileManager.default.currentDirectoryPath + "/" + home
        var problems = errors.map(\.description) + ConfigLoader.validate(rules: rules, against: withHome).map(\.description)
        for r in rules where !FileManager.default.fileExists(atPath: r.path) {
            let message = "\(r.file): field `path`: watched folder \(r.path) does not exist"
            if requireFolders { problems.append(message) } else { warnings?(message + " (yet)") }
        }
        if problems.isEmpty && rules.isEmpty { problems.append("\(dir): no rule files (*.toml)") }
        guard problems.isEmpty else { throw CLIError.config(problems.joined(separator: "\n")) }
        return rules
    }
}
