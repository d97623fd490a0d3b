import EvidenceHTTP
import Foundation

/// `kind` of an archive account.
public enum ProviderKind: String, Sendable, Equatable, CaseIterable {
    case owncloud, dropbox, box, sharefile, local
}

/// How `evidence accounts login` gets an account's credentials.
public enum LoginStyle: Sendable, Equatable {
    /// Nothing to log in (a local folder).
    case none
    /// An app password typed by the operator, proven against the server, saved to `password_file`.
    case appPassword
    /// OAuth 2 authorization code with PKCE, pasted back; `clientIDKey` names the config key of
    /// the client id, `extra` adds parameters to the authorization address.
    case authorizationCode(defaultAuthorizeURL: String, clientIDKey: String, extra: [Parameter])
    /// OAuth 2 password grant: user name and password, sent once; the refresh token is saved.
    case passwordGrant

    public struct Parameter: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) { self.name = name; self.value = value }
    }
}

/// An account's settings as the provider's builder reads them: plain values by key, and
/// secrets by base name (`password` for `password_env`/`password_file`), read on demand.
public struct ProviderSettings: Sendable {
    public var account: String
    public var values: [String: String]
    let readSecret: @Sendable (String) throws(ProviderSetupError) -> String?

    /// `readSecret(base)` returns the secret of `base_env`/`base_file`, nil when neither is set.
    public init(account: String, values: [String: String],
                readSecret: @escaping @Sendable (String) throws(ProviderSetupError) -> String?) {
        self.account = account; self.values = values; self.readSecret = readSecret
    }

    public subscript(key: String) -> String? { values[key] }

    /// A plain value that must be there and not be empty.
    public func required(_ key: String, kind: ProviderKind) throws(ProviderSetupError) -> String {
        guard let v = values[key], !v.isEmpty else {
            throw ProviderSetupError(key: key, message: "a \(kind.rawValue) account needs \(key)")
        }
        return v
    }

    /// The secret `base`; when `required` says why and it is missing, an error naming both keys.
    public func secret(_ base: String, required why: String? = nil) throws(ProviderSetupError) -> String? {
        if let value = try readSecret(base) { return value }
        if let why { throw ProviderSetupError(key: base + "_env", message: "\(why): set \(base)_env or \(base)_file") }
        return nil
    }
}

/// A setting that is missing or wrong, named by its key; `underlying` is the error that said
/// so first (a config error reading a secret file), which callers may rethrow as it is.
public struct ProviderSetupError: Error, Sendable {
    public var key: String
    public var message: String
    public var underlying: (any Error & Sendable)?

    public init(key: String, message: String, underlying: (any Error & Sendable)? = nil) {
        self.key = key; self.message = message; self.underlying = underlying
    }
}

/// What building an account needs beyond its settings.
public struct ProviderSetup: Sendable {
    public var settings: ProviderSettings
    public var http: HTTPClient
    /// Where OAuth tokens are kept (token-based kinds).
    public var tokenFile: String
    /// Where chunked uploads remember their progress.
    public var resumeDirectory: String
    /// `chunk_size` when configured.
    public var chunkSize: Int64?

    public init(settings: ProviderSettings, http: HTTPClient, tokenFile: String, resumeDirectory: String, chunkSize: Int64?) {
        self.settings = settings; self.http = http; self.tokenFile = tokenFile
        self.resumeDirectory = resumeDirectory; self.chunkSize = chunkSize
    }
}

/// A built account: the provider, and its OAuth session when it has one.
public struct BuiltProvider: Sendable {
    public var provider: any ArchiveProvider
    public var session: OAuthSession?
}

/// Everything `evidence` knows about one kind of provider, in one place: its config keys and
/// secrets, default hosts, the digest it reports, how its accounts log in, and how to build
/// its client. Config validation, `Archives`, the `accounts` commands and `evidence login`
/// ask this instead of switching on the kind themselves.
public struct ProviderDescriptor: Sendable {
    public var kind: ProviderKind
    /// The provider's name for people ("Dropbox").
    public var title: String
    /// Plain keys an account must set.
    public var requiredKeys: [String]
    /// Secrets an account must give (`base_env` or `base_file`).
    public var requiredSecrets: [String]
    /// Other plain keys it may set.
    public var optionalKeys: [String]
    /// Other secrets it may give.
    public var optionalSecrets: [String]
    /// Keys whose value must be one of a list.
    public var choices: [String: [String]]
    /// Keys that must be set together or not at all.
    public var together: [[String]]
    /// Whether the account talks HTTP (and so takes `base_url`, timeouts, a CA file, `chunk_size`).
    public var usesHTTP: Bool
    /// Whether it keeps OAuth tokens in a token file.
    public var usesOAuth: Bool
    /// The digest its `stat` reports.
    public var hashKind: ProviderHashKind
    public var login: LoginStyle
    /// A key whose presence means the account signs in by itself (Box's client credentials).
    public var signsInWithKey: String?
    /// Where an account of this kind points, for `accounts list`.
    public var target: @Sendable (ProviderSettings) -> String
    /// An example account table for `evidence init`'s config (lines without the `# `).
    public var example: [String]
    public var build: @Sendable (ProviderSetup) throws(ProviderSetupError) -> BuiltProvider

    /// Keys an HTTP account may set whatever its kind (timeouts are the config's own).
    public static let httpKeys = ["base_url", "auth_url", "upload_url", "tls_ca_file", "chunk_size"]

    /// Every key an account of this kind may set besides `kind` (timeouts excepted).
    public var allowedKeys: Set<String> {
        var keys = Set(requiredKeys + optionalKeys)
        for base in requiredSecrets + optionalSecrets { keys.insert(base + "_env"); keys.insert(base + "_file") }
        if usesHTTP { keys.formUnion(Self.httpKeys) }
        if usesOAuth { keys.insert("token_file") }
        return keys
    }

    /// Keys through which the account signs in without a saved login (named by `logout`).
    public var credentialKeys: [String] {
        (requiredSecrets + optionalSecrets).filter { $0 != "client_secret" && $0 != "app_secret" }
            .flatMap { [$0 + "_env", $0 + "_file"] } + (signsInWithKey.map { [$0] } ?? [])
    }

    /// How this account logs in: `.none` also when it signs in by itself.
    public func login(for settings: ProviderSettings) -> LoginStyle {
        if let key = signsInWithKey, settings[key] != nil { return .none }
        return login
    }
}

/// The one registry of provider kinds.
public enum ProviderRegistry {
    public static func descriptor(_ kind: ProviderKind) -> ProviderDescriptor {
        switch kind {
        case .local: return local
        case .owncloud: return owncloud
        case .dropbox: return dropbox
        case .box: return box
        case .sharefile: return sharefile
        }
    }

    public static var all: [ProviderDescriptor] { ProviderKind.allCases.map(descriptor) }

    /// Bytes per chunk unless `chunk_size` says otherwise.
    static let defaultChunk: Int64 = 32 << 20

    static let local = ProviderDescriptor(
        kind: .local, title: "local folder", requiredKeys: ["path"], requiredSecrets: [], optionalKeys: [], optionalSecrets: [],
        choices: [:], together: [], usesHTTP: false, usesOAuth: false, hashKind: .sha256, login: .none, signsInWithKey: nil,
        target: { $0["path"] ?? "?" },
        example: ["[archives.vault]", "kind = \"local\"", "path = \"archive\""],
        build: { setup throws(ProviderSetupError) in
            BuiltProvider(provider: LocalProvider(account: setup.settings.account, root: try setup.settings.required("path", kind: .local)))
        })

    static let owncloud = ProviderDescriptor(
        kind: .owncloud, title: "ownCloud", requiredKeys: ["url", "user"], requiredSecrets: ["password"], optionalKeys: ["etag"],
        // etag = "sha1": a plain WebDAV server whose ETag is the SHA-1 of the bytes (rclone serve webdav --etag-hash SHA1).
        optionalSecrets: [], choices: ["etag": ["sha1"]], together: [], usesHTTP: true, usesOAuth: false, hashKind: .sha1, login: .appPassword,
        signsInWithKey: nil,
        target: { $0["base_url"] ?? $0["url"] ?? "?" },
        example: ["[archives.office]", "kind = \"owncloud\"", "url = \"https://cloud.example.org\"", "user = \"evidence\"",
                  "password_file = \"/etc/evidence/owncloud.pass\"   # an app password"],
        build: { setup throws(ProviderSetupError) in
            let s = setup.settings
            let password = try s.secret("password", required: "an ownCloud account needs its app password")
            return BuiltProvider(provider: OwnCloudProvider(account: s.account, url: try s.required("url", kind: .owncloud),
                                                            user: try s.required("user", kind: .owncloud), password: password ?? "",
                                                            baseURL: s["base_url"], http: setup.http,
                                                            chunkSize: setup.chunkSize ?? defaultChunk, etagIsSHA1: s["etag"] == "sha1"))
        })

    static let dropbox = ProviderDescriptor(
        kind: .dropbox, title: "Dropbox", requiredKeys: ["app_key"], requiredSecrets: [],
        optionalKeys: ["authorize_url", "redirect_uri"], optionalSecrets: ["app_secret", "refresh_token"],
        choices: [:], together: [], usesHTTP: true, usesOAuth: true, hashKind: .dropbox,
        // An offline (refresh) token, not one that lasts four hours.
        login: .authorizationCode(defaultAuthorizeURL: DropboxProvider.defaultAuthorizeURL, clientIDKey: "app_key",
                                  extra: [.init(name: "token_access_type", value: "offline")]),
        signsInWithKey: nil,
        target: { $0["base_url"] ?? "api.dropboxapi.com" },
        example: ["[archives.dropbox]", "kind = \"dropbox\"", "app_key = \"…\"", "app_secret_file = \"/etc/evidence/dropbox.secret\"",
                  "refresh_token_file = \"/etc/evidence/dropbox.refresh\""],
        build: { setup throws(ProviderSetupError) in
            let s = setup.settings
            let session = OAuthSession(account: s.account, tokenURL: s["auth_url"] ?? DropboxProvider.defaultTokenURL,
                                       clientID: try s.required("app_key", kind: .dropbox), clientSecret: try s.secret("app_secret"),
                                       grant: .refreshToken(initial: try s.secret("refresh_token")), tokenFile: setup.tokenFile, http: setup.http)
            return BuiltProvider(provider: DropboxProvider(account: s.account, session: session, http: setup.http, baseURL: s["base_url"],
                                                           uploadURL: s["upload_url"], resumeDirectory: setup.resumeDirectory,
                                                           chunkSize: setup.chunkSize ?? defaultChunk),
                                 session: session)
        })

    static let box = ProviderDescriptor(
        kind: .box, title: "Box", requiredKeys: ["client_id"], requiredSecrets: ["client_secret"],
        optionalKeys: ["subject_type", "subject_id", "authorize_url", "redirect_uri"], optionalSecrets: ["refresh_token"],
        choices: ["subject_type": ["user", "enterprise"]], together: [["subject_type", "subject_id"]],
        usesHTTP: true, usesOAuth: true, hashKind: .sha1,
        login: .authorizationCode(defaultAuthorizeURL: BoxProvider.defaultAuthorizeURL, clientIDKey: "client_id", extra: []),
        signsInWithKey: "subject_type",
        target: { $0["base_url"] ?? "api.box.com" },
        example: ["[archives.box]", "kind = \"box\"", "client_id = \"…\"", "client_secret_file = \"/etc/evidence/box.secret\"",
                  "subject_type = \"enterprise\"                # Client Credentials Grant", "subject_id = \"…\""],
        build: { setup throws(ProviderSetupError) in
            let s = setup.settings
            let grant: OAuthSession.Grant
            if let type = s["subject_type"] {
                guard ["enterprise", "user"].contains(type) else {
                    throw ProviderSetupError(key: "subject_type", message: "must be \"enterprise\" or \"user\", not \"\(type)\"")
                }
                grant = .clientCredentials(extra: [("box_subject_type", type), ("box_subject_id", try s.required("subject_id", kind: .box))])
            } else {
                grant = .refreshToken(initial: try s.secret("refresh_token"))
            }
            let session = OAuthSession(account: s.account, tokenURL: s["auth_url"] ?? BoxProvider.defaultTokenURL,
                                       clientID: try s.required("client_id", kind: .box),
                                       clientSecret: try s.secret("client_secret", required: "a Box account needs its client secret"),
                                       grant: grant, tokenFile: setup.tokenFile, http: setup.http)
            return BuiltProvider(provider: BoxProvider(account: s.account, session: session, http: setup.http, baseURL: s["base_url"],
                                                       uploadURL: s["upload_url"], resumeDirectory: setup.resumeDirectory),
                                 session: session)
        })

    static let sharefile = ProviderDescriptor(
        kind: .sharefile, title: "ShareFile", requiredKeys: ["subdomain", "client_id"], requiredSecrets: ["client_secret"],
        optionalKeys: ["username", "root_folder_id"], optionalSecrets: ["password", "refresh_token"],
        choices: [:], together: [], usesHTTP: true, usesOAuth: true, hashKind: .md5, login: .passwordGrant, signsInWithKey: nil,
        target: { $0["base_url"] ?? "\($0["subdomain"] ?? "?").sf-api.com" },
        example: ["[archives.sharefile]", "kind = \"sharefile\"", "subdomain = \"…\"", "client_id = \"…\"", "client_secret_file = \"/etc/evidence/sharefile.secret\"",
                  "username = \"…\"", "password_file = \"/etc/evidence/sharefile.pass\""],
        build: { setup throws(ProviderSetupError) in
            let s = setup.settings
            let subdomain = try s.required("subdomain", kind: .sharefile)
            let root = s["root_folder_id"]
            if let root, !ShareFileProvider.isItemID(root) {
                throw ProviderSetupError(key: "root_folder_id", message: "\"\(root)\" is not a ShareFile item id "
                                         + "(letters, digits and '-', e.g. fo1a2b3c-…, as the folder's web address shows it)")
            }
            let grant: OAuthSession.Grant
            if let user = s["username"] {
                let password = try s.secret("password", required: "a ShareFile account with username needs its password")
                grant = .password(username: user, password: password ?? "")
            } else {
                grant = .refreshToken(initial: try s.secret("refresh_token"))
            }
            let session = OAuthSession(account: s.account, tokenURL: s["auth_url"] ?? ShareFileProvider.defaultTokenURL(subdomain: subdomain),
                                       clientID: try s.required("client_id", kind: .sharefile),
                                       clientSecret: try s.secret("client_secret", required: "a ShareFile account needs its client secret"),
                                       grant: grant, tokenFile: setup.tokenFile, http: setup.http,
                                       // A configured auth_url is kept; else the answer's control plane is followed.
                                       tokenURLFromAnswer: s["auth_url"] == nil ? ShareFileProvider.tokenURL(fromAnswer:) : nil)
            return BuiltProvider(provider: ShareFileProvider(account: s.account, session: session, http: setup.http, baseURL: s["base_url"],
                                                             subdomain: subdomain, rootFolderID: root, resumeDirectory: setup.resumeDirectory,
                                                             chunkSize: setup.chunkSize ?? defaultChunk),
                                 session: session)
        })
}
