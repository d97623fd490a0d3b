import EvidenceArchive
import EvidenceConfig
import EvidenceHTTP
import Foundation
import Logging

/// The configured archive accounts, with their providers, built once per process.
public struct Archives: Sendable {
    public let providers: [String: any ArchiveProvider]

    public init(providers: [String: any ArchiveProvider] = [:]) { self.providers = providers }

    /// Builds the accounts the rules use. Passwords are read here (env or 0600 file); a kind
    /// this version cannot archive to yet is a config error naming the account, not a silent skip.
    public static func build(config: EvidenceConfig, used: Set<String>, logger: Logger) throws(ConfigError) -> Archives {
        var providers: [String: any ArchiveProvider] = [:]
        let file = config.file ?? "(embedded defaults)"
        for name in used.sorted() {
            guard let account = config.archives[name] else {
                throw ConfigError(file: file, field: "archives.\(name)", message: "no such archive account")
            }
            switch account.kind {
            case .local:
                providers[name] = LocalProvider(account: name, root: account.path ?? "")
            case .owncloud:
                guard let source = account.secret("password") else {
                    throw ConfigError(file: file, field: "archives.\(name).password_env", message: "an ownCloud account needs password_env or password_file")
                }
                let password = try ConfigLoader.readSecret(source, field: "archives.\(name).password_\(source.isEnv ? "env" : "file")",
                                                           configFile: file)
                let http = HTTPClient(configuration: HTTPClientConfiguration(caFile: account.tlsCAFile), logger: logger)
                providers[name] = OwnCloudProvider(account: name, url: account.url ?? "", user: account.user ?? "",
                                                   password: password, baseURL: account.baseURL, http: http)
            case .dropbox, .box, .sharefile:
                throw ConfigError(file: file, field: "archives.\(name).kind",
                                  message: "archiving to \(account.kind.rawValue) is not available in this version (local and owncloud are)")
            }
        }
        return Archives(providers: providers)
    }
}
