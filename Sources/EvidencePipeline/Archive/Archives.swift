import EvidenceArchive
import EvidenceConfig
import EvidenceHTTP
import Foundation
import Logging
import Synchronization

/// The configured archive accounts, with their providers. Every copy of one value shares its
/// accounts: `replace(with:)` (a reload: SIGHUP, or a paused account's secret changed) puts
/// new ones in place for all of them, so handlers built once see the new credentials.
public struct Archives: Sendable {
    final class Box: Sendable {
        let state: Mutex<(providers: [String: any ArchiveProvider], sessions: [String: OAuthSession])>
        init(_ providers: [String: any ArchiveProvider], _ sessions: [String: OAuthSession]) { state = Mutex((providers, sessions)) }
    }
    private let box: Box

    public var providers: [String: any ArchiveProvider] { box.state.withLock { $0.providers } }
    /// The OAuth sessions of the token-based accounts (for `accounts list/check`).
    public var sessions: [String: OAuthSession] { box.state.withLock { $0.sessions } }

    public init(providers: [String: any ArchiveProvider] = [:], sessions: [String: OAuthSession] = [:]) {
        box = Box(providers, sessions)
    }

    /// Puts `other`'s accounts in place of these, for every copy of this value.
    public func replace(with other: Archives) {
        let new = other.box.state.withLock { $0 }
        box.state.withLock { $0 = new }
    }

    /// Where an account keeps its OAuth tokens unless `token_file` says otherwise.
    public static func defaultTokenFile(home: String, account: String) -> String { "\(home)/tokens/\(account).json" }
    /// Where chunked uploads of an account remember their progress.
    public static func resumeDirectory(home: String, account: String) -> String { "\(home)/uploads/\(account)" }

    /// Builds the accounts named in `used`. Secrets are read here (env or 0600 file); what is
    /// missing or wrong is a config error naming the file and the field.
    public static func build(config: EvidenceConfig, used: Set<String>, home: String, logger: Logger) throws(ConfigError) -> Archives {
        var providers: [String: any ArchiveProvider] = [:]
        var sessions: [String: OAuthSession] = [:]
        let file = config.file ?? "(embedded defaults)"
        for name in used.sorted() {
            guard let account = config.archives[name] else {
                throw ConfigError(file: file, field: "archives.\(name)", message: "no such archive account")
            }
            let field = { @Sendable (key: String) in "archives.\(name).\(key)" }
            let chunk = try chunkSize(account, file: file, field: field("chunk_size"))
            let http = HTTPClient(configuration: HTTPClientConfiguration(table: "archives.\(name)", caFile: account.tlsCAFile, timeouts: account.timeouts), logger: logger)
            let settings = account.providerSettings { base throws(ProviderSetupError) -> String? in
                guard let source = account.secret(base) else { return nil }
                let key = "\(base)_\(source.isEnv ? "env" : "file")"
                do throws(ConfigError) { return try ConfigLoader.readSecret(source, field: field(key), configFile: file) } catch {
                    throw ProviderSetupError(key: key, message: error.message, underlying: error)
                }
            }
            let setup = ProviderSetup(settings: settings, http: http,
                                      tokenFile: account.tokenFile ?? defaultTokenFile(home: home, account: name),
                                      resumeDirectory: resumeDirectory(home: home, account: name), chunkSize: chunk)
            let built: BuiltProvider
            do throws(ProviderSetupError) { built = try account.descriptor.build(setup) } catch {
                if let config = error.underlying as? ConfigError { throw config }
                throw ConfigError(file: file, field: field(error.key), message: error.message)
            }
            providers[name] = built.provider
            if let session = built.session { sessions[name] = session }
        }
        return Archives(providers: providers, sessions: sessions)
    }

    /// `chunk_size`: bytes, or with a unit (`K`/`KiB`, `M`/`MiB`, `G`/`GiB`, powers of 1024), at least 1 MiB.
    static func chunkSize(_ account: ArchiveConfig, file: String, field: String) throws(ConfigError) -> Int64? {
        guard let text = account.chunkSize?.trimmingCharacters(in: .whitespaces) else { return nil }
        let digits = text.prefix { $0.isNumber }
        let unit = text.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        let scale: Int64? = ["": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30][unit]
        guard let n = Int64(digits), let scale, n * scale >= 1 << 20 else {
            throw ConfigError(file: file, field: field, message: "\"\(text)\" is not a size of at least 1MiB (e.g. \"32MiB\")")
        }
        return n * scale
    }
}
