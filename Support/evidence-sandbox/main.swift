import ArgumentParser
import EvidenceCore
import EvidenceSandbox
import Foundation
import Hummingbird
import Logging

/// `evidence-sandbox`: the QED emulation, an RFC 3161 TSA and fault injection on loopback,
/// so demos and tests run with no account and no network. Prints exactly one line,
/// `listening on http://127.0.0.1:PORT`, to stdout when ready; logs go to stderr.
/// SIGTERM or SIGINT stop it gracefully (exit 0).
@main
struct EvidenceSandbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evidence-sandbox",
        abstract: "Emulated notary services with fault injection, for demos and tests.",
        discussion: """
            Endpoints: /v1/reports/… (QED, header "Authorization: app-token KEY"), POST /tsa \
            (RFC 3161), GET /tsa/ca.pem, /tsa/tsa.pem and /tsa/chain.pem, /dropbox/…, /box/…, /sharefile/…, /owncloud/… (the archive providers, fixed sandbox credentials), \
            GET /_sandbox/counters, POST /_sandbox/reset, POST /_sandbox/expire-tokens, POST /_sandbox/corrupt-next-upload?provider=NAME, \
            POST /_sandbox/advance-clock?seconds=N, POST /_sandbox/quirk?quirk=QUIRK&count=N|always (a provider's rarer answers: \
            \(ProviderControl.Quirk.allCases.map(\.rawValue).joined(separator: ", "))), \
            POST /_sandbox/misbehave?path=PREFIX&mode=MODE&count=N (the next N requests under PREFIX answer 200 with MODE instead: \
            garbage = not JSON, html = a login page, truncated = connection closed before Content-Length, oversized = a 65 MiB body \
            streamed (over the client's 64 MiB limit), slow = headers then one byte every 2 s, wrong-type = a PNG, \
            wrong-json = JSON of an unexpected shape; locked = 423 Locked with a WebDAV error body, the one mode that is not a 200). \
            Faults apply to /v1/ unless --fault-path says otherwise. Exit codes: 0 stopped by SIGTERM/SIGINT; 1 failed to start (state folder, port); 64 usage error.

            Fixed credentials (public: for tests and demos only; put secrets in 0600 files as evidence.toml asks):
              QED        api key: --api-key (default sandbox-key)
              Dropbox    app_key \(DropboxEmulator.appKey), app secret \(DropboxEmulator.appSecret), refresh token \(DropboxEmulator.refreshToken)
              Box        client_id \(BoxEmulator.clientId), client secret \(BoxEmulator.clientSecret) (subject_type enterprise, subject_id sandbox-enterprise)
              ShareFile  client_id \(ShareFileEmulator.clientId), client secret \(ShareFileEmulator.clientSecret), \
            user \(ShareFileEmulator.username), password \(ShareFileEmulator.password), subdomain sandbox
              ownCloud   user \(OwnCloudEmulator.user), app password \(OwnCloudEmulator.password), url http://127.0.0.1:PORT/owncloud
            """
    )

    @Option(help: "TCP port on 127.0.0.1; 0 picks a free one.")
    var port: Int = 0

    @Option(help: "Folder for reports.json, requests.log and the TSA's keys (created if missing).")
    var stateDir: String

    @Option(help: "The API key QED accepts.")
    var apiKey: String = "sandbox-key"

    @Option(help: "Seconds a report stays pending before it is confirmed (or failed).")
    var pendingSeconds: Double = 2

    @Option(help: "How QED's report list answers: \"paginated\" ({count, next, previous, results}) or \"bare\" (a JSON array).")
    var qedList: String = "paginated"

    @Flag(help: "QED lists every report whatever ?hash= asks (a server without that filter).")
    var qedIgnoreHashFilter = false

    @Option(help: "Seconds before an OpenTimestamps calendar's commitment is mined into a sandbox Bitcoin block (when it is asked for).")
    var otsConfirm: Double = 0

    @Option(help: "Probability (0…1) of answering a request with 500, 502 or 503.")
    var failRate: Double = 0

    @Option(help: "Requests per second and client before 429 (0 = unlimited).")
    var rateLimit: Int = 0

    @Option(help: "Seconds sent in Retry-After with 429 and 503 answers.")
    var retryAfter: Int = 1

    @Option(help: "Delay before each request: \"0ms\", \"200ms\" or a range \"50ms..300ms\".")
    var latency: String = "0ms"

    @Option(help: "Probability (0…1) of closing a request's connection without an answer.")
    var dropRate: Double = 0

    @Option(help: "Probability (0…1) of holding a request for --spike on top of --latency (a stall).")
    var spikeRate: Double = 0

    @Option(help: "How long a latency spike holds a request, e.g. \"3s\".")
    var spike: String = "2s"

    @Option(name: .customLong("fault-path"),
            help: "Path prefix faults apply to; repeat for several (default /v1/, e.g. add /tsa).")
    var faultPaths: [String] = []

    @Option(help: "Seconds an emulated provider's access token stays valid (then 401 until refreshed).")
    var tokenLifetime: Double = 3600

    @Option(help: "Which server /owncloud/ emulates: owncloud (ownCloud 10: computes checksums, refuses a wrong OC-Checksum) or nextcloud (stores and echoes the client's OC-Checksum).")
    var owncloudFlavour: String = "owncloud"

    @Option(help: "Seed for fault decisions, slugs and transaction hashes (reproducible runs).")
    var seed: UInt64?

    @Option(help: "Log level on stderr: trace, debug, info, notice, warning, error.")
    var logLevel: String = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        guard (0...1).contains(failRate) else { throw ValidationError("--fail-rate must be between 0 and 1") }
        guard (0...1).contains(dropRate) else { throw ValidationError("--drop-rate must be between 0 and 1") }
        guard (0...1).contains(spikeRate) else { throw ValidationError("--spike-rate must be between 0 and 1") }
        do { _ = try DurationText.seconds(spike) } catch { throw ValidationError("--spike: \(error)") }
        guard otsConfirm >= 0 else { throw ValidationError("--ots-confirm must not be negative") }
        guard pendingSeconds >= 0 else { throw ValidationError("--pending-seconds must not be negative") }
        guard rateLimit >= 0 else { throw ValidationError("--rate-limit must not be negative") }
        guard faultPaths.allSatisfy({ $0.hasPrefix("/") }) else { throw ValidationError("--fault-path must start with /") }
        guard tokenLifetime > 0 else { throw ValidationError("--token-lifetime must be positive") }
        guard retryAfter >= 1 else { throw ValidationError("--retry-after must be at least 1") }
        guard OwnCloudFlavour(rawValue: owncloudFlavour) != nil else { throw ValidationError("--owncloud-flavour must be owncloud or nextcloud") }
        guard QEDEmulator.ListShape(rawValue: qedList) != nil else { throw ValidationError("--qed-list must be paginated or bare") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level: unknown level \"\(logLevel)\"") }
        do { _ = try LatencySpec(parsing: latency) } catch { throw ValidationError("--latency: \(error)") }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "evidence-sandbox")
        let options = SandboxOptions(
            port: port, stateDirectory: stateDir, apiKey: apiKey, pendingSeconds: pendingSeconds,
            failRate: failRate, rateLimit: rateLimit, retryAfter: retryAfter,
            latency: try LatencySpec(parsing: latency), dropRate: dropRate,
            spikeRate: spikeRate, spike: try DurationText.seconds(spike),
            faultPathPrefixes: faultPaths.isEmpty ? ["/v1/"] : faultPaths, seed: seed, tokenLifetime: tokenLifetime,
            owncloudFlavour: OwnCloudFlavour(rawValue: owncloudFlavour) ?? .owncloud,
            qedListShape: QEDEmulator.ListShape(rawValue: qedList) ?? .paginated, qedIgnoresHashFilter: qedIgnoreHashFilter)
        var withOTS = options
        withOTS.otsConfirmSeconds = otsConfirm
        let server: SandboxServer
        do {
            server = try SandboxServer(options: withOTS)
        } catch {
            logger.error("cannot start: \(error)")
            throw ExitCode(1)
        }
        let app = server.makeApplication(logger: logger) { port in
            // Unbuffered, so a parent reading the pipe sees the line at once.
            FileHandle.standardOutput.write(Data("listening on http://127.0.0.1:\(port)\n".utf8))
        }
        try await app.runService()
    }
}
