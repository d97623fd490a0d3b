import EvidenceArchive
import EvidenceConfig
import EvidenceHTTP
import Foundation
import Logging

/// The configured archive accounts, with their providers, built once per process.
public struct Archives: Sendable {
    public let providers: [String: any ArchiveProvider]
    /// The OAuth sessions of the token-based accounts (for `accounts list/check`).
    public let sessions: [String: OAuthSession]

    public init(providers: [String: any ArchiveProvider] = [:], sessions: [String: OAuthSession] = [:]) {
        self.providers = providers
        self.sessions = sessions
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
            let field = { (key: String) in "archives.\(name).\(key)" }
            func secret(_ base: String, required: Bool, why: String) throws(ConfigError) -> String? {
                guard let source = account.secret(base) else {
                    if required { throw ConfigError(file: file, field: field("\(base)_env"), message: "\(why): set \(base)_env or \(base)_file") }
                    return nil
                }
                return try ConfigLoader.readSecret(source, field: field("\(base)_\(source.isEnv ? "env" : "file")"), configFile: file)
            }
            func plain(_ key: String) throws(ConfigError) -> String {
                guard let v = account[key], !v.isEmpty else {
                    throw ConfigError(file: file, field: field(key), message: "a \(account.kind.rawValue) account needs \(key)")
                }
                return v
            }
            let chunk = try chunkSize(account, file: file, field: field("chunk_size"))
            let http = HTTPClient(configuration: HTTPClientConfiguration(table: "archives.\(name)", caFile: account.tlsCAFile, timeouts: account.timeouts), logger: logger)
            let tokenFile = account.tokenFile ?? defaultTokenFile(home: home, account: name)
            let resume = resumeDirectory(home: home, account: name)
            switch account.kind {
            case .local:
                providers[name] = LocalProvider(account: name, root: account.path ?? "")
            case .owncloud:
                let password = try secret("password", required: true, why: "an ownCloud account needs its app password")
                providers[name] = OwnCloudProvider(account: name, url: try plain("url"), user: try plain("user"),
                                                   password: password ?? "", baseURL: account.baseURL, http: http,
                                                   chunkSize: chunk ?? 32 << 20)
            case .dropbox:
                let session = OAuthSession(account: name, tokenURL: account.authURL ?? DropboxProvider.defaultTokenURL,
                                           clientID: try plain("app_key"),
                                           clientSecret: try secret("app_secret", required: false, why: ""),
                                           grant: .refreshToken(initial: try secret("refresh_token", required: false, why: "")),
                                           tokenFile: tokenFile, http: http)
                sessions[name] = session
                providers[name] = DropboxProvider(account: name, session: session, http: http, baseURL: account.baseURL,
                                                  uploadURL: account.uploadURL, resumeDirectory: resume, chunkSize: chunk ?? 32 << 20)
            case .box:
                let grant: OAuthSession.Grant
                if let type = account.subjectType {
                    guard ["enterprise", "user"].contains(type) else {
                        throw ConfigError(file: file, field: field("subject_type"), message: "must be \"enterprise\" or \"user\", not \"\(type)\"")
                    }
                    grant = .clientCredentials(extra: [("box_subject_type", type), ("box_subject_id", try plain("subject_id"))])
                } else {
                    grant = .refreshToken(initial: try secret("refresh_token", required: false, why: ""))
                }
                let session = OAuthSession(account: name, tokenURL: account.authURL ?? BoxProvider.defaultTokenURL,
                                           clientID: try plain("client_id"),
                                           clientSecret: try secret("client_secret", required: true, why: "a Box account needs its client secret"),
                                           grant: grant, tokenFile: tokenFile, http: http)
                sessions[name] = session
                providers[name] = BoxProvider(account: name, session: session, http: http, baseURL: account.baseURL,
                                              uploadURL: account.uploadURL, resumeDirectory: resume)
            case .sharefile:
                let subdomain = try plain("subdomain")
                let grant: OAuthSession.Grant
                if let user = account.username {
                    let password = try secret("password", required: true, why: "a ShareFile account with username needs its password")
                    grant = .password(username: user, password: password ?? "")
                } else {
                    grant = .refreshToken(initial: try secret("refresh_token", required: false, why: ""))
                }
                let session = OAuthSession(account: name, tokenURL: account.authURL ?? ShareFileProvider.defaultTokenURL(subdomain: subdomain),
                                           clientID: try plain("client_id"),
                                           clientSecret: try secret("client_secret", required: true, why: "a ShareFile account needs its client secret"),
                                           grant: grant, tokenFile: tokenFile, http: http)
                sessions[name] = session
                providers[name] = ShareFileProvider(account: name, session: session, http: http,
                                                    baseURL: account.baseURL, subdomain: subdomain,
                                                    resumeDirectory: resume, chunkSize: chunk ?? 32 << 20)
            }
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
