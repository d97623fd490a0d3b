/// The `[serve]` table: the auditor portal (`evidence serve`).
///
/// ```toml
/// [serve]
/// listen = "127.0.0.1:8480"          # default; a non-loopback address needs allow_remote = true
/// user = "auditor"                   # HTTP Basic: user + password_env / password_file
/// password_file = "/etc/evidence/portal.pass"
/// token_env = "EVIDENCE_PORTAL_TOKEN"   # and/or a bearer token (token_env / token_file)
/// ```
///
/// At least one way to authenticate is required: a bearer token, or `user` with a password.
/// Secrets are only named here (`*_env`, `*_file`); read them with `ConfigLoader.readSecret`.
public struct ServeConfig: Sendable, Equatable {
    public static let defaultListen = "127.0.0.1:8480"
    public static let allowedKeys: Set<String> = [
        "listen", "allow_remote", "token_env", "token_file", "user", "password_env", "password_file",
    ]

    /// `listen` as written (`host:port`, `[v6]:port`).
    public var listen: String
    public var host: String
    public var port: Int
    /// `allow_remote = true` lets `listen` be an address other machines can reach.
    public var allowRemote: Bool
    public var tokenEnv: String?
    public var tokenFile: String?
    public var user: String?
    public var passwordEnv: String?
    public var passwordFile: String?

    public init(listen: String = ServeConfig.defaultListen, allowRemote: Bool = false, tokenEnv: String? = nil,
                tokenFile: String? = nil, user: String? = nil, passwordEnv: String? = nil, passwordFile: String? = nil) {
        self.listen = listen
        let parsed = Self.parseListen(listen) ?? (host: "127.0.0.1", port: 8480)
        self.host = parsed.host
        self.port = parsed.port
        self.allowRemote = allowRemote
        self.tokenEnv = tokenEnv
        self.tokenFile = tokenFile
        self.user = user
        self.passwordEnv = passwordEnv
        self.passwordFile = passwordFile
    }

    /// Where the bearer token comes from, if one is configured.
    public var token: SecretSource? {
        if let tokenEnv { return .env(tokenEnv) }
        if let tokenFile { return .file(tokenFile) }
        return nil
    }

    /// Where the Basic-auth password comes from, if one is configured.
    public var password: SecretSource? {
        if let passwordEnv { return .env(passwordEnv) }
        if let passwordFile { return .file(passwordFile) }
        return nil
    }

    /// `host:port`, `[v6]:port` or `:port` (= loopback), port 0…65535; nil if malformed.
    public static func parseListen(_ text: String) -> (host: String, port: Int)? {
        let host: Substring, portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }  // a bare IPv6 address needs brackets
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = Int(portText), (0...65535).contains(port) else { return nil }
        guard !host.contains(where: { $0 == " " || $0 == "/" }) else { return nil }
        return (host.isEmpty ? "127.0.0.1" : String(host), port)
    }

    /// True for addresses only this machine can reach: 127.0.0.0/8, ::1 and `localhost`.
    public static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased()
        if h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
        let octets = h.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// What to add to evidence.toml for a portal reachable by an auditor with a password.
    public static let exampleTOML = """
        [serve]
        listen = "127.0.0.1:8480"
        user = "auditor"
        password_file = "/etc/evidence/portal.pass"     # mode 0600; or password_env = "VAR"
        # token_env = "EVIDENCE_PORTAL_TOKEN"           # and/or a bearer token
        """
}

extension ConfigFileParser {
    static func serve(_ r: TOMLReader, _ t: TOMLTableRef) throws(ConfigError) -> ServeConfig {
        try r.checkKeys(t, allowed: ServeConfig.allowedKeys)
        let l = try r.listenSetting(t, default: ServeConfig.defaultListen,
                                    exposure: "the portal would be reachable from other machines (put TLS in front of it)")
        var s = ServeConfig(listen: l.listen, allowRemote: l.allowRemote)
        let token = try r.secret(t, "token")
        s.tokenEnv = token.env
        s.tokenFile = token.file
        s.user = try r.string(t, "user")
        if let user = s.user, user.contains(":") || user.contains(where: \.isNewline) {
            throw r.error(t.path + ["user"], "must not contain `:` or line breaks (HTTP Basic)")
        }
        let password = try r.secret(t, "password")
        s.passwordEnv = password.env
        s.passwordFile = password.file
        if s.user != nil && s.password == nil {
            throw r.error(t.path + ["password_env"], "`user` needs a password: set `password_env` or `password_file`")
        }
        if s.user == nil && s.password != nil {
            throw r.error(t.path + ["user"], "a password needs `user` (the HTTP Basic user name)")
        }
        if s.token == nil && s.user == nil {
            throw r.error(t.path, "no authentication: set `user` with `password_env`/`password_file` (HTTP Basic), "
                + "and/or `token_env`/`token_file` (bearer token)")
        }
        return s
    }
}

/// `listen` and `allow_remote` of a table that opens a port (`[serve]`, `[metrics]`).
struct ListenSetting {
    var listen: String
    var host: String
    var port: Int
    var allowRemote: Bool
}

extension TOMLReader {
    /// Reads `listen` (default `defaultListen`) and `allow_remote`; a host other machines can
    /// reach is refused unless `allow_remote = true`, saying what `exposure` would follow.
    func listenSetting(_ t: TOMLTableRef, default defaultListen: String, exposure: String) throws(ConfigError) -> ListenSetting {
        let listen = try string(t, "listen") ?? defaultListen
        guard let parsed = ServeConfig.parseListen(listen) else {
            throw error(t.path + ["listen"], "invalid address \"\(listen)\": expected HOST:PORT like \"\(defaultListen)\" or \"[::1]:\(defaultListen.split(separator: ":").last ?? "")\"")
        }
        let allowRemote = try bool(t, "allow_remote") ?? false
        if !allowRemote && !ServeConfig.isLoopback(parsed.host) {
            let table = t.path.joined(separator: ".")
            throw error(t.path + ["listen"], "\(parsed.host) is not a loopback address: \(exposure); "
                + "set `allow_remote = true` in [\(table)] to allow that")
        }
        return ListenSetting(listen: listen, host: parsed.host, port: parsed.port, allowRemote: allowRemote)
    }
}
