import EvidenceArchive

/// One `[archives.NAME]` table: a provider account.
///
/// `settings` holds every key but `kind`, as strings (integers and booleans converted).
/// Values of keys ending in `_file` and of `path` are absolute (resolved relative to the
/// config file's directory). Secrets appear only as `*_env` (a variable name) or `*_file`.
/// The keys allowed per kind come from the provider registry (`ProviderRegistry`, through
/// `ArchiveConfig.allowedKeys(for:)`); unknown keys are rejected at load. Provider-specific keys
/// are read by the provider's descriptor, not here.
public struct ArchiveConfig: Sendable, Equatable {
    public var name: String
    public var kind: ArchiveKind
    public var settings: [String: String]
    /// `connect_timeout` and `stall_timeout` (kept out of `settings`: they are durations).
    public var timeouts: HTTPTimeouts

    public init(name: String, kind: ArchiveKind, settings: [String: String] = [:], timeouts: HTTPTimeouts = HTTPTimeouts()) {
        self.name = name
        self.kind = kind
        self.settings = settings
        self.timeouts = timeouts
    }

    public subscript(key: String) -> String? { settings[key] }

    /// `local`: the archive folder (absolute).
    public var path: String? { settings["path"] }
    /// `owncloud`: server URL.
    public var url: String? { settings["url"] }
    /// `owncloud`: account name.
    public var user: String? { settings["user"] }
    public var baseURL: String? { settings["base_url"] }
    /// `dropbox`, `box`: the provider's authorization page for `evidence accounts login`.
    public var authorizeURL: String? { settings["authorize_url"] }
    /// `dropbox`, `box`: redirect URI registered for the app (Box needs one; Dropbox then
    /// redirects instead of showing the code, and the operator pastes the address).
    public var redirectURI: String? { settings["redirect_uri"] }
    /// Extra trusted CA (PEM) for private deployments.
    public var tlsCAFile: String? { settings["tls_ca_file"] }
    /// Bytes per chunk of a resumable upload (`"32MiB"`, `"8M"`, `"4194304"`); files larger go chunked.
    public var chunkSize: String? { settings["chunk_size"] }
    /// Where OAuth tokens obtained at run time are persisted (0600, atomically).
    public var tokenFile: String? { settings["token_file"] }

    /// The source of secret `base` (e.g. `"password"`, `"app_secret"`, `"client_secret"`,
    /// `"refresh_token"`) from `base_env` or `base_file`; nil when neither is set.
    public func secret(_ base: String) -> SecretSource? {
        if let v = settings[base + "_env"] { return .env(v) }
        if let v = settings[base + "_file"] { return .file(v) }
        return nil
    }

    /// The keys an account of `kind` may set (besides `kind`): its provider's, and the HTTP
    /// timeouts for a kind that speaks HTTP.
    public static func allowedKeys(for kind: ArchiveKind) -> Set<String> {
        let d = ProviderRegistry.descriptor(kind)
        return d.usesHTTP ? d.allowedKeys.union(HTTPTimeouts.keys) : d.allowedKeys
    }

    /// Keys that must be present for `kind`; a secret base name means "`base_env` or `base_file`".
    static func requiredKeys(for kind: ArchiveKind) -> (plain: [String], secrets: [String]) {
        let d = ProviderRegistry.descriptor(kind)
        return (d.requiredKeys, d.requiredSecrets)
    }

    /// The account's settings as its provider's builder reads them, secrets read through `readSecret`.
    public func providerSettings(readSecret: @escaping @Sendable (String) throws(ProviderSetupError) -> String?) -> ProviderSettings {
        ProviderSettings(account: name, values: settings, readSecret: readSecret)
    }

    /// What the provider registry knows about this account's kind.
    public var descriptor: ProviderDescriptor { ProviderRegistry.descriptor(kind) }
}

/// `kind` of an archive account: the provider kinds of the registry.
public typealias ArchiveKind = ProviderKind
