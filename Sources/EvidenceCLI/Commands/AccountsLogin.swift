import ArgumentParser
import EvidenceArchive
import EvidenceConfig
import EvidenceHTTP
import EvidencePipeline
import EvidenceStore
import Foundation
import Logging

struct AccountsLogin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Get an account's credentials interactively and save them (0600); no browser needed on this machine.",
        discussion: Help.reflow("""
        Dropbox and Box: OAuth 2 authorization code with PKCE, pasted back (like `rclone
        authorize`). The command prints an address; open it in a browser on any computer, sign
        in, allow access, and paste the code shown (or, when the browser went on to the app's
        redirect address, that whole address). Dropbox is asked for an offline (refresh) token.
        A code works once and only for minutes (Box: 30 s).

        ShareFile: user name (the config's `username`, else asked) and password, asked without
        echo; the password is sent once and never stored: the refresh token answered is.

        ownCloud/Nextcloud: an app password (Settings → Security), asked without echo, tested
        against the server, then written to the account's `password_file`.

        Tokens go to the account's `token_file` (default <home>/tokens/NAME.json), written
        atomically with mode 0600. Nothing is saved when the provider refuses. A Box account
        with `subject_type` (client credentials) and a local folder need no login.

          evidence accounts login vault
          evidence accounts check vault

        Exit codes: 0 logged in (or nothing to log in) · 1 refused by the provider, or no
        answer given · 2 config or usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The account (a [archives.NAME] table of evidence.toml).", valueName: "name"))
    var name: String

    struct Result: Encodable {
        var name: String
        var kind: String
        var identity: String?
        var saved: String?
        var expires: Date?
        var note: String?
    }

    func run() async throws {
        let config = try global.loadConfig()
        let home = try global.homePath(config)
        guard let account = config.archives[name] else {
            throw CLIError.usage("no archive account \"\(name)\" in \(config.file ?? "the embedded defaults") (have: \(config.archives.keys.sorted().joined(separator: ", ")))")
        }
        StderrLogHandler.bootstrap(level: global.verbose ? .debug : .critical, format: .text)
        let result: Result
        let descriptor = account.descriptor
        do {
            switch descriptor.login(for: account.providerSettings { _ in nil }) {
            case .none:
                if let key = descriptor.signsInWithKey, let value = account[key] {
                    result = Result(name: name, kind: account.kind.rawValue,
                                    note: "signs in by itself (\(key) = \"\(value)\"); there is nothing to log in")
                } else {
                    result = Result(name: name, kind: account.kind.rawValue,
                                    note: "a \(descriptor.title) needs no login (\(descriptor.target(account.providerSettings { _ in nil })))")
                }
            case .authorizationCode(let authorizeURL, let clientIDKey, let extra):
                result = try await codeFlow(config: config, account: account, home: home, defaultAuthorizeURL: authorizeURL,
                                            clientIDKey: clientIDKey, extra: extra.map { ($0.name, $0.value) })
            case .passwordGrant:
                result = try await passwordFlow(config: config, account: account, home: home)
            case .appPassword:
                result = try await appPassword(config: config, account: account)
            }
        } catch let e as ArchiveError {
            Output.err("✗ \(name): \(e.message)")
            throw ExitCode(1)
        }
        if global.json { Output.json(result); return }
        if let note = result.note, result.saved == nil {
            Output.line("✓ \(name) (\(result.kind)) \(note). Check it with: evidence accounts check \(name)")
            return
        }
        Output.line("✓ logged in: \(name) (\(result.kind)) as \(result.identity ?? "?")")
        Output.line("  saved to \(result.saved ?? "?") (mode 0600)" + (result.expires.map { "; access token valid until \(Output.date($0))" } ?? ""))
        if let note = result.note { Output.line("  note: \(note)") }
        Output.line("  next: evidence accounts check \(name)")
    }

    private func archives(_ config: EvidenceConfig, home: String) throws -> Archives {
        try Archives.build(config: config, used: [name], home: home, logger: Logger(label: "evidence"))
    }

    /// Dropbox and Box: print the address, read the pasted code, exchange it with the verifier.
    private func codeFlow(config: EvidenceConfig, account: ArchiveConfig, home: String, defaultAuthorizeURL: String,
                          clientIDKey: String, extra: [(String, String)]) async throws -> Result {
        let built = try archives(config, home: home)
        guard let session = built.sessions[name], let provider = built.providers[name] else {
            throw CLIError.config("account \(name) has no OAuth session")
        }
        let service = account.descriptor.title
        let request = AuthorizationRequest(
            authorizeURL: account.authorizeURL ?? defaultAuthorizeURL,
            clientID: account[clientIDKey] ?? "",
            redirectURI: account.redirectURI,
            extra: extra)
        Output.err("""
            Log in to \(service) for account "\(name)":
              1. Open this address in a browser on any computer and sign in as the account that should hold the archive:

                 \(request.url)

              2. Allow access, then paste the code \(service) shows\(account.redirectURI != nil ? " (or the whole address the browser went on to)" : "").
            """)
        guard let pasted = Prompt.line("Code: ") else { throw ArchiveError(.permanent, "no code given (end of input)") }
        guard let code = AuthorizationRequest.code(fromPasted: pasted) else {
            throw ArchiveError(.permanent, "\"\(pasted.prefix(80))\" is not a code: paste the code \(service) showed, or the address with code=")
        }
        let record = try await session.login(code: code, request: request)
        let identity = try await provider.whoami()
        return Result(name: name, kind: account.kind.rawValue, identity: identity,
                      saved: account.tokenFile ?? Archives.defaultTokenFile(home: home, account: name), expires: record.expiresAt,
                      note: record.refreshToken == nil ? "\(service) answered no refresh token: the login lasts only until the access token expires" : nil)
    }

    /// ShareFile: the password grant, with the password asked without echo.
    private func passwordFlow(config: EvidenceConfig, account: ArchiveConfig, home: String) async throws -> Result {
        let built = try archives(config, home: home)
        guard let session = built.sessions[name], let provider = built.providers[name] else {
            throw CLIError.config("account \(name) has no OAuth session")
        }
        var user = account["username"] ?? ""
        if user.isEmpty {
            guard let typed = Prompt.line("\(account.descriptor.title) user name (e-mail) for \(AccountsCheck.target(account)): "),
                  !typed.trimmingCharacters(in: .whitespaces).isEmpty else { throw ArchiveError(.permanent, "no user name given") }
            user = typed.trimmingCharacters(in: .whitespaces)
        }
        guard let password = Prompt.secret("Password for \(user) (not shown): "), !password.isEmpty else {
            throw ArchiveError(.permanent, "no password given")
        }
        let record = try await session.login(username: user, password: password)
        let identity = try await provider.whoami()
        return Result(name: name, kind: account.kind.rawValue, identity: identity,
                      saved: account.tokenFile ?? Archives.defaultTokenFile(home: home, account: name), expires: record.expiresAt,
                      note: record.refreshToken == nil ? "\(account.descriptor.title) answered no refresh token: the login lasts only until the access token expires" : nil)
    }

    /// ownCloud: ask for an app password, prove it against the server, then write `password_file`.
    private func appPassword(config: EvidenceConfig, account: ArchiveConfig) async throws -> Result {
        let file = config.file ?? "(embedded defaults)"
        guard let target = account["password_file"] else {
            let field = account["password_env"] != nil ? "archives.\(name).password_env" : "archives.\(name).password_file"
            throw CLIError.config("""
                \(file): \(field): login saves the app password to a file, so the account needs password_file, e.g.
                  password_file = "/etc/evidence/secrets/\(name).password"
                """)
        }
        guard let url = account.url, let user = account.user else {
            throw CLIError.config("\(file): archives.\(name): an ownCloud account needs url and user")
        }
        guard let password = Prompt.secret("App password for \(user) at \(url) (Settings → Security → create new app password; not shown): "),
              !password.isEmpty else { throw ArchiveError(.permanent, "no app password given") }
        let http = HTTPClient(configuration: HTTPClientConfiguration(table: "archives.\(name)", caFile: account.tlsCAFile, timeouts: account.timeouts), logger: Logger(label: "evidence"))
        // The account as configured, but with the password just typed (the file is not written yet).
        let typed = account.providerSettings { base in base == "password" ? password : nil }
        let setup = ProviderSetup(settings: typed, http: http, tokenFile: "", resumeDirectory: "", chunkSize: nil)
        let provider: any ArchiveProvider
        do throws(ProviderSetupError) { provider = try account.descriptor.build(setup).provider } catch {
            throw CLIError.config("\(file): archives.\(name).\(error.key): \(error.message)")
        }
        let identity = try await provider.whoami()
        let dir = (target as NSString).deletingLastPathComponent
        do {
            if !FileManager.default.fileExists(atPath: dir) {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            try AtomicFile.write(Data((password + "\n").utf8), to: target, mode: 0o600)
        } catch {
            throw ArchiveError(.local, "cannot save the app password to \(target): \(error)")
        }
        return Result(name: name, kind: account.kind.rawValue, identity: identity, saved: target)
    }
}

struct AccountsLogout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Forget an account's saved credentials on this machine (token file, or ownCloud's password_file).",
        discussion: Help.reflow("""
        Removes what `accounts login` saved: the OAuth token file of a Dropbox, Box or ShareFile
        account, or the password_file of an ownCloud account. The app stays authorized at the
        provider until you revoke it in the provider's web settings; credentials given in
        evidence.toml itself (refresh_token_env/_file, password_env) keep working and are named.

        Exit codes: 0 logged out (or was not logged in) · 1 the file could not be removed · 2 config error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The account.", valueName: "name"))
    var name: String

    func run() async throws {
        let config = try global.loadConfig()
        let home = try global.homePath(config)
        guard let account = config.archives[name] else {
            throw CLIError.usage("no archive account \"\(name)\" in \(config.file ?? "the embedded defaults") (have: \(config.archives.keys.sorted().joined(separator: ", ")))")
        }
        var removed: [String] = []
        var remaining: [String] = []
        var target: String?
        let descriptor = account.descriptor
        // What login saved: the token file of an OAuth account, the password file of an app password.
        var saved: String?
        if descriptor.usesOAuth {
            target = account.tokenFile ?? Archives.defaultTokenFile(home: home, account: name)
        } else if descriptor.login == .appPassword {
            saved = "password_file"
            target = account["password_file"]
        }
        for key in descriptor.credentialKeys where key != saved && account[key] != nil {
            remaining.append("archives.\(name).\(key)" + (key == descriptor.signsInWithKey ? " (signs in by itself)" : ""))
        }
        if let target, FileManager.default.fileExists(atPath: target) {
            guard unlink(target) == 0 else {
                Output.err("✗ \(name): cannot remove \(target): \(String(cString: strerror(errno)))")
                throw ExitCode(1)
            }
            removed.append(target)
        }
        if global.json {
            struct Out: Encodable { var name: String; var removed: [String]; var stillSignsInWith: [String] }
            Output.json(Out(name: name, removed: removed, stillSignsInWith: remaining))
            return
        }
        Output.line(removed.isEmpty ? "\(name) was not logged in on this machine (nothing saved\(target.map { " at \($0)" } ?? ""))"
                                    : "✓ \(name): removed \(removed.joined(separator: ", ")); revoke the app in the provider's settings to end access there too")
        if !remaining.isEmpty {
            Output.line("note: evidence.toml still gives \(name) credentials: \(remaining.joined(separator: ", "))")
        }
    }
}
