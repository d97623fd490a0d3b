import ArgumentParser
import EvidenceConfig
import EvidencePipeline
import EvidenceProcess
import EvidencePortal
import Foundation
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "The auditor portal: search items, read proofs and custody, download certificates and bundles.",
        discussion: Help.reflow("""
        A read-only web portal over the home: search by SHA-256 prefix, file name, item number or
        ingest day; an item page with state, media, proofs, custody events and downloads (the
        certificate PDFs, the auditor's bundle as .zip or .tar); /status for operators. Plain
        HTML, no JavaScript. Only GET and HEAD are answered.

        Configure it in evidence.toml (authentication is required):

          [serve]
          listen = "127.0.0.1:8480"            # loopback unless allow_remote = true
          user = "auditor"                     # HTTP Basic user, and its password:
          password_file = "/etc/evidence/portal.pass"  # (or password_env)
          token_env = "EVIDENCE_PORTAL_TOKEN"  # and/or a bearer token (token_file)

        Prints `listening on http://HOST:PORT/` on stdout when ready; logs one line per request
        on stderr (never credentials). SIGTERM/SIGINT stop it after requests in flight.

        Exit codes: 0 stopped by SIGTERM/SIGINT · 1 could not listen · 2 config error (no
        [serve] authentication, a non-loopback address without allow_remote, unreadable secret).
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Address to listen on, HOST:PORT or [v6]:PORT, like 127.0.0.1:8480 (default: [serve] listen, else 127.0.0.1:8480).",
                                            valueName: "addr"))
    var listen: ListenAddress?

    func run() async throws {
        if let problem = Hardening.disableCoreDumps() { Output.err("warning: \(problem)") }
        let config = try global.loadConfig()
        let file = global.config ?? config.file ?? "evidence.toml"   // as the operator named it
        guard let serve = config.serve else {
            let where_ = config.file == nil ? "\(file) (not found: pass --config FILE or set EVIDENCE_CONFIG)" : file
            throw CLIError.config("""
                \(where_): field `serve`: missing: the portal only runs with authentication; add for example:

                \(ServeConfig.exampleTOML)
                """)
        }
        var host = serve.host, port = serve.port
        if let listen {
            (host, port) = (listen.host, listen.port)
            if !serve.allowRemote && !ServeConfig.isLoopback(host) {
                throw CLIError.config("--listen \(listen): \(host) is not a loopback address: the portal would be reachable "
                    + "from other machines; set `allow_remote = true` in [serve] of \(file) to allow that")
            }
        }
        let auth: PortalAuth
        do { auth = try Portal.auth(from: serve, configFile: file) } catch { throw CLIError.config(error.description) }
        let home = try global.openHome(mustExist: true)

        let level: Logger.Level = global.verbose ? .debug : global.quiet ? .warning
            : Logger.Level(rawValue: config.logLevel.rawValue) ?? .info
        let format = StderrLogHandler.Format(rawValue: config.logFormat.rawValue) ?? .text
        StderrLogHandler.bootstrap(level: level, format: format)
        let logger = Logger(label: "evidence.serve")

        var options = Portal.Options(host: host, port: port, auth: auth, tsaCAFiles: config.tsaCAFiles)
        options.timezone = config.timezone
        let portal = Portal(home: home, options: options)
        let shownHost = host.contains(":") ? "[\(host)]" : host
        do {
            try await portal.run(logger: logger) { bound in
                // Unbuffered: a parent reading the pipe sees the line at once.
                Output.writeOutput(Data("listening on http://\(shownHost):\(bound)/\n".utf8))
                logger.notice("evidence serve started", metadata: ["home": "\(home.path)", "pid": "\(getpid())",
                                                                    "url": "http://\(shownHost):\(bound)/"])
            }
        } catch {
            Output.err("evidence serve: \(error)")
            throw ExitCode(1)
        }
        logger.notice("evidence serve stopped")
    }
}
