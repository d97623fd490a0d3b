import ArgumentParser
import EvidenceArchive
import EvidenceCore
import EvidenceConfig
import EvidencePipeline
import EvidenceStore
import Foundation
import Logging

struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts",
        abstract: "The archive accounts of evidence.toml: list them, log in and out, prove they work.",
        subcommands: [AccountsList.self, AccountsLogin.self, AccountsLogout.self, AccountsCheck.self, AccountsPut.self,
                      AccountsResume.self],
        defaultSubcommand: AccountsList.self
    )
}

struct AccountsList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Each account: kind, where it points, token state and expiry (never a secret).",
        discussion: "Exit codes: 0 listed · 2 config error."
    )

    @OptionGroup var global: GlobalOptions

    struct Row: Encodable {
        var name: String
        var kind: String
        var target: String
        var tokenFile: String?
        var token: String?
        var tokenExpires: Date?
    }

    func run() async throws {
        let config = try global.loadConfig()
        let home = try global.homePath(config)
        var rows: [Row] = []
        for (name, a) in config.archives.sorted(by: { $0.key < $1.key }) {
            var row = Row(name: name, kind: a.kind.rawValue, target: AccountsCheck.target(a))
            if a.descriptor.usesOAuth {
                let file = a.tokenFile ?? Archives.defaultTokenFile(home: home, account: name)
                row.tokenFile = file
                do {
                    if let r = try TokenStore.load(file, account: name) {
                        row.tokenExpires = r.expiresAt
                        row.token = r.refreshToken != nil ? "refresh token saved" : r.accessToken != nil ? "access token only" : "empty"
                    } else {
                        row.token = "none yet (obtained on first use)"
                    }
                } catch {
                    row.token = "unusable: \(error.message)"
                }
            }
            rows.append(row)
        }
        if global.json { Output.json(rows); return }
        if rows.isEmpty { Output.line("no archive accounts in \(config.file ?? "the embedded defaults")"); return }
        Output.table(["name", "kind", "target", "token", "expires"],
                     rows.map { [$0.name, $0.kind, $0.target, $0.token ?? "-", $0.tokenExpires.map { Output.date($0) } ?? "-"] })
    }
}

struct AccountsCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Prove each account works: sign in, then write, stat, verify and delete a probe file.",
        discussion: Help.reflow("""
        For each account (or just NAME): reads its secrets, gets a token (OAuth accounts),
        asks who it is, then writes `.evidence-check/probe-<pid>.txt` at the account's root,
        checks the provider's hash of it, and deletes it. One line per account with ✓ or ✗
        and, on ✗, what the provider answered and what to fix.

          evidence accounts check
          evidence accounts check office --json

        Exit codes: 0 every account works · 1 at least one does not · 2 config error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("One account (default: all).", valueName: "name"))
    var name: String?

    struct Result: Encodable {
        var name: String
        var kind: String
        var ok: Bool
        var identity: String?
        var error: String?
        var milliseconds: Int
    }

    static func target(_ a: ArchiveConfig) -> String {
        a.descriptor.target(a.providerSettings { _ in nil })
    }

    func run() async throws {
        let config = try global.loadConfig()
        let home = try global.homePath(config)
        StderrLogHandler.bootstrap(level: global.verbose ? .debug : .critical, format: .text)
        let names = name.map { [$0] } ?? config.archives.keys.sorted()
        if let name, config.archives[name] == nil {
            throw CLIError.usage("no archive account \"\(name)\" in \(config.file ?? "the embedded defaults") (have: \(config.archives.keys.sorted().joined(separator: ", ")))")
        }
        var results: [Result] = []
        for n in names {
            let started = Date()
            var r = Result(name: n, kind: config.archives[n]?.kind.rawValue ?? "?", ok: false, milliseconds: 0)
            do {
                let archives = try Archives.build(config: config, used: [n], home: home, logger: Logger(label: "evidence"))
                guard let p = archives.providers[n] else { throw CLIError.config("account \(n) was not built") }
                r.identity = try await p.whoami()
                try await Self.probe(p)
                r.ok = true
            } catch let e as ArchiveError {
                r.error = e.message
            } catch {
                r.error = "\(error)"
            }
            r.milliseconds = Int(Date().timeIntervalSince(started) * 1000)
            results.append(r)
            if !global.json {
                Output.line(r.ok ? "✓ \(n) (\(r.kind)): \(r.identity ?? ""); write, hash and delete work (\(r.milliseconds) ms)"
                                 : "✗ \(n) (\(r.kind)): \(r.error ?? "")")
            }
        }
        if global.json { Output.json(results) }
        if names.isEmpty && !global.json { Output.line("no archive accounts in \(config.file ?? "the embedded defaults")") }
        if results.contains(where: { !$0.ok }) { throw ExitCode(1) }
    }

    /// Writes, stats (hash compared) and deletes a small file at the account's root.
    static func probe(_ p: any ArchiveProvider) async throws {
        let dir = ".evidence-check"
        let remote = "\(dir)/probe-\(getpid())-\(Int(Date().timeIntervalSince1970)).txt"
        let local = NSTemporaryDirectory() + "evidence-probe-\(UUID().uuidString)"
        defer { unlink(local) }
        _ = FileManager.default.createFile(atPath: local, contents: Data("evidence accounts check \(Date())\n".utf8))
        let size = Int64((try? FileManager.default.attributesOfItem(atPath: local)[.size] as? NSNumber)??.int64Value ?? 0)
        let hash = try p.hashKind.digest(of: local)
        try await p.makeFolders(dir)
        _ = try await p.upload(local: local, size: size, hash: hash, to: remote, progress: nil)
        let st = try await p.stat(remote)
        try await p.delete(remote)
        guard let st, st.size == size, st.hash == nil || st.hash == hash else {
            throw ArchiveError(.permanent, "\(p.account): the probe file came back different (size \(st?.size ?? -1), hash \(st?.hash ?? "none"))")
        }
    }
}

struct AccountsResume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume an account or notary paused because its credentials were refused.",
        discussion: Help.reflow("""
        When an archive account or a notary answers 401/403 (or refuses an OAuth grant),
        `evidence run` pauses it: its jobs wait, no attempt is counted and no further request
        is sent, so a server that locks accounts after repeated failures is not provoked.
        `status`, `doctor`, the portal and /metrics show one alert naming what to fix.

        The pause ends by itself when the secret changes (the password or key file, the token
        file after `evidence accounts login NAME`), or on SIGHUP. This command ends it now, for
        a fix the service cannot see (a password reset on the server's side); the waiting jobs
        run at once.

          evidence accounts resume vault
          evidence accounts resume --all

        Exit codes: 0 resumed (or nothing was paused under that name) · 1 no such name paused ·
        2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The [archives.NAME] or [notaries.NAME] name.", valueName: "name"))
    var name: String?

    @Flag(help: "Resume every paused account and notary.")
    var all = false

    func validate() throws {
        if (name == nil) == !all { throw ValidationError("name an account or notary, or pass --all") }
    }

    func run() async throws {
        let home = try global.openHome(mustExist: true)
        let pauses = try Pauses.all(in: home.catalog).values.sorted { $0.scope < $1.scope }
        let chosen = all ? pauses : pauses.filter { $0.name == name }
        if chosen.isEmpty {
            if all { Output.line("nothing is paused"); return }
            Output.err("\(name ?? ""): not paused" + (pauses.isEmpty ? " (nothing is)" : " (paused: \(pauses.map(\.name).joined(separator: ", ")))"))
            throw ExitCode(1)
        }
        for p in chosen {
            try Pauses.resume(p, in: home.catalog)
            if !global.json { Output.line("✓ \(p.kind.rawValue) \(p.name) resumed (paused since \(Output.date(p.since)): \(p.reason))") }
        }
        if global.json { Output.json(chosen) }
    }
}
