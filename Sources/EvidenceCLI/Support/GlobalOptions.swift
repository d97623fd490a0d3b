import ArgumentParser
import EvidenceCatalog
import EvidenceConfig
import EvidencePipeline
import EvidenceS3
import Foundation

/// Options every command takes: where the home and config are, and how to report.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Evidence home (store + catalog). Default: $EVIDENCE_HOME, the config's `home`, or ./.evidence.", valueName: "dir"))
    var home: String?

    @Option(name: .long, help: ArgumentHelp("Config file. Default: $EVIDENCE_CONFIG, else ./evidence.toml if present, else embedded defaults.", valueName: "file"))
    var config: String?

    @Flag(name: .long, help: "Print machine-readable JSON on stdout.")
    var json = false

    @Flag(name: [.customShort("v"), .long], help: "More detail on stderr.")
    var verbose = false

    @Flag(name: [.customShort("q"), .long], help: "Only errors on stderr; no progress.")
    var quiet = false

    /// `evidence --home X status` means `evidence status --home X`: global options written
    /// before the subcommand are moved after it (before any `--`), where every command
    /// declares them.
    static func hoist(_ args: [String]) -> [String] {
        let withValue: Set<String> = ["--home", "--config"]
        let flags: Set<String> = ["--json", "-v", "--verbose", "-q", "--quiet"]
        var hoisted: [String] = []
        var i = 0
        while i < args.count {
            let a = args[i]
            let name = String(a.split(separator: "=", maxSplits: 1).first ?? "")
            if withValue.contains(name) {
                hoisted.append(a)
                if !a.contains("="), i + 1 < args.count { hoisted.append(args[i + 1]); i += 1 }
            } else if flags.contains(a) {
                hoisted.append(a)
            } else {
                break
            }
            i += 1
        }
        guard !hoisted.isEmpty, i < args.count else { return args }
        var rest = Array(args[i...])
        let at = rest.firstIndex(of: "--") ?? rest.count
        rest.insert(contentsOf: hoisted, at: at)
        return rest
    }

    func loadConfig() throws -> EvidenceConfig {
        do {
            let loaded = try ConfigLoader.load(path: config)
            try CAFileRoots.check(loaded)
            return loaded
        } catch {
            throw CLIError.config(error.description)
        }
    }

    /// The home folder, by precedence: --home, $EVIDENCE_HOME, config `home`, ./.evidence.
    func homePath(_ cfg: EvidenceConfig? = nil) throws -> String {
        if let home { return home }
        if let env = CommandEnvironment.current["EVIDENCE_HOME"], !env.isEmpty { return env }
        let c = try cfg ?? loadConfig()
        return c.home ?? ".evidence"
    }

    /// Where the config puts the catalog: `[catalog]`'s PostgreSQL database (its password read
    /// from `password_env`/`password_file` now), else the SQLite file in the home.
    func catalogLocation(_ cfg: EvidenceConfig) throws -> EvidenceHome.CatalogLocation {
        guard let c = cfg.catalog else { return .sqlite }
        var password: String?
        if let source = c.password {
            let field: String
            if case .env = source { field = "[catalog] password_env" } else { field = "[catalog] password_file" }
            do {
                password = try ConfigLoader.readSecret(source, field: field, configFile: cfg.file ?? "evidence.toml")
            } catch {
                throw CLIError.config(error.description)
            }
        }
        return .postgres(PostgresTarget(host: c.host, port: c.port, database: c.database, user: c.user, password: password,
                                        tlsCAFile: c.tlsCAFile))
    }

    /// Where the config puts the store: `[store] kind = "s3"`'s bucket (its keys read from
    /// their `*_env`/`*_file` now), else `objects/` in the home.
    func storeLocation(_ cfg: EvidenceConfig) throws -> EvidenceHome.StoreLocation {
        guard let c = cfg.store, c.kind == .s3, let endpoint = c.endpoint, let bucket = c.bucket,
              let accessSource = c.accessKey, let secretSource = c.secretKey else { return .local }
        func read(_ source: SecretSource, _ base: String) throws -> String {
            let field: String
            if case .env = source { field = "[store] \(base)_env" } else { field = "[store] \(base)_file" }
            do { return try ConfigLoader.readSecret(source, field: field, configFile: cfg.file ?? "evidence.toml") } catch {
                throw CLIError.config(error.description)
            }
        }
        let access = try read(accessSource, "access_key"), secret = try read(secretSource, "secret_key")
        var lock: S3ObjectLock?
        if let mode = c.objectLock, let retain = c.retain {
            let r: S3ObjectLock.Retain
            switch retain {
            case .years(let y): r = .years(y)
            case .seconds(let s): r = .seconds(s)
            }
            lock = S3ObjectLock(mode: mode == .compliance ? .compliance : .governance, retain: r)
        }
        var settings = S3StoreSettings(endpoint: S3Endpoint(url: endpoint, bucket: bucket, region: c.region, accessKey: access,
                                                            secretKey: secret, caFile: c.tlsCAFile),
                                       objectLock: lock)
        // For tests and benchmarks: smaller multipart parts (S3's minimum is 5 MiB).
        if let part = CommandEnvironment.current["EVIDENCE_S3_PART_SIZE"].flatMap(Int64.init), part >= 5 << 20 {
            settings.partSize = part
            settings.singlePutLimit = part
        }
        return .s3(settings)
    }

    func openHome(mustExist: Bool = false) throws -> EvidenceHome {
        // The config decides where the catalog is: one that does not load is an error, never a
        // reason to open (or create) a SQLite catalog beside a PostgreSQL one.
        let cfg = try loadConfig()
        let location = try catalogLocation(cfg)
        do {
            return try EvidenceHome(path: try homePath(cfg), mustExist: mustExist, catalog: location, store: try storeLocation(cfg))
        } catch let e as EvidenceHome.OpenError {
            if case .catalog(.locked) = e { throw CLIError.busy(e.description) }
            throw CLIError.home(e.description)
        }
    }
}

enum CLIError: Error, CustomStringConvertible {
    case config(String)
    case home(String)
    case usage(String)
    /// The home is fine but another process holds it (a locked catalog): exit 1, try again.
    case busy(String)

    var description: String {
        switch self {
        case .config(let s), .home(let s), .usage(let s), .busy(let s): return s
        }
    }
}
