import Foundation
import Hummingbird
import Logging

/// One sandbox: the QED emulation, the RFC 3161 TSA and the `/_sandbox/` control routes on
/// one Hummingbird server, with fault injection in front of the emulated APIs.
///
/// The `evidence-sandbox` executable is a thin wrapper around this type; tests can also run
/// it in-process with `makeApplication(…)` in a `ServiceGroup` (or `runService()`).
///
/// Endpoints (all on `options.host`, loopback by default):
/// - QED, behind `Authorization: app-token <key>` — see `QEDEmulator`:
///   `POST /v1/reports/`, `GET /v1/reports/<slug>`, `GET /v1/reports/?hash=<hex>`,
///   `POST /v1/reports/<slug>/pdf`.
/// - RFC 3161 — see `TSAEndpoint`: `POST /tsa`, `GET /tsa/ca.pem`, `/tsa/tsa.pem`, `/tsa/chain.pem`.
/// - OpenTimestamps calendars `/ots/NAME/…` and an Esplora-style header source `/esplora/…` — see `OTSEmulator`.
/// - Archive providers, each under its own prefix with its own auth: `/dropbox/…`
///   (`DropboxEmulator`), `/box/…` (`BoxEmulator`), `/sharefile/…` (`ShareFileEmulator`),
///   `/owncloud/…` (`OwnCloudEmulator`).
/// - Control, no auth — see `SandboxControlRoutes`: `GET /_sandbox/counters`, `POST /_sandbox/reset`,
///   `POST /_sandbox/expire-tokens`, `POST /_sandbox/corrupt-next-upload?provider=`,
///   `POST /_sandbox/misbehave?path=&mode=&count=` (see `Misbehaviour`).
///
/// Faults (`FaultInjectionMiddleware`) apply to paths under `options.faultPathPrefixes`
/// (`/v1/` by default), before authentication and routing.
///
/// State lives in `options.stateDirectory`: `reports.json` (QED reports, a journal appended to
/// on every change), `requests.log` (one JSON line per request) and `tsa/` (the test TSA's
/// CA and keys). Restarting on the same folder keeps reports and the TSA's identity.
public final class SandboxServer: Sendable {
    public let options: SandboxOptions
    public let counters: SandboxCounters
    public let qed: QEDEmulator
    public let faults: FaultInjector
    /// Malformed, oversized, slow or mistyped answers armed by `POST /_sandbox/misbehave`.
    public let misbehaviour: Misbehaviour
    public let requestLog: RequestLog
    let tsa: TSAEndpoint
    /// OpenTimestamps calendars and Bitcoin block headers (`OTSEmulator`).
    public let ots: OTSEmulator
    public let providerControl: ProviderControl
    public let dropbox: DropboxEmulator
    public let box: BoxEmulator
    public let sharefile: ShareFileEmulator
    public let owncloud: OwnCloudEmulator

    /// Creates the state folder if needed and loads stored reports.
    /// Throws `SandboxError` when the folder or its files cannot be used.
    public init(options: SandboxOptions, clock: @escaping @Sendable () -> Date = { Date() }) throws {
        self.options = options
        let dir = options.stateDirectory
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw SandboxError.stateDirectory("cannot create \(dir): \(error)")
        }
        let counters = SandboxCounters()
        // Two independent streams from one seed: fault decisions stay the same whatever
        // number of identifiers the handled requests consumed.
        let faultRandom = SandboxRandom(seed: options.seed)
        let idRandom = SandboxRandom(seed: options.seed.map { $0 &+ 0x5EED_1D5 })
        self.counters = counters
        self.requestLog = try RequestLog(path: (dir as NSString).appendingPathComponent("requests.log"))
        let store = try QEDReportStore(path: (dir as NSString).appendingPathComponent("reports.json"))
        self.qed = QEDEmulator(store: store, apiKey: options.apiKey, pendingSeconds: options.pendingSeconds,
                               random: idRandom, counters: counters, clock: clock,
                               listShape: options.qedListShape, ignoresHashFilter: options.qedIgnoresHashFilter)
        self.faults = FaultInjector(options: options, random: faultRandom, counters: counters)
        self.misbehaviour = Misbehaviour()
        self.tsa = TSAEndpoint(directory: (dir as NSString).appendingPathComponent("tsa"), counters: counters)
        self.ots = OTSEmulator(confirmSeconds: options.otsConfirmSeconds, clock: clock)
        let control = ProviderControl()
        self.providerControl = control
        func env(_ name: String) throws -> ProviderEnvironment {
            let sub = (dir as NSString).appendingPathComponent(name)
            do { try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true) } catch {
                throw SandboxError.stateDirectory("cannot create \(sub): \(error)")
            }
            return ProviderEnvironment(stateDirectory: sub, counters: counters, random: idRandom,
                                       clock: { clock().addingTimeInterval(control.clockOffset) },
                                       tokenLifetime: options.tokenLifetime, control: control)
        }
        self.dropbox = try DropboxEmulator(environment: env("dropbox"))
        self.box = try BoxEmulator(environment: env("box"))
        self.sharefile = try ShareFileEmulator(environment: env("sharefile"))
        self.owncloud = try OwnCloudEmulator(environment: env("owncloud"), flavour: options.owncloudFlavour)
    }

    /// All routes, in the order requests meet them: recorder, misbehaviour, fault injection, then the
    /// emulations (QED adds its own token check).
    public func makeRouter() -> Router<SandboxRequestContext> {
        let router = Router(context: SandboxRequestContext.self)
        router.add(middleware: RequestRecorderMiddleware(counters: counters, log: requestLog))
        router.add(middleware: MisbehaviourMiddleware(misbehaviour: misbehaviour))
        router.add(middleware: FaultInjectionMiddleware(injector: faults, prefixes: options.faultPathPrefixes))
        SandboxControlRoutes(counters: counters, store: qed.store, injector: faults, providers: providerControl,
                             misbehaviour: misbehaviour).add(to: router)
        qed.addRoutes(to: router)
        tsa.addRoutes(to: router)
        ots.addRoutes(to: router)
        dropbox.addRoutes(to: router)
        box.addRoutes(to: router)
        sharefile.addRoutes(to: router)
        owncloud.addRoutes(to: router)
        return router
    }

    /// The server as a Hummingbird application bound to `options.host:options.port`.
    /// `onListening` receives the bound port once the server accepts connections.
    public func makeApplication(
        logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> Application<HostRoutingResponder<RouterResponder<SandboxRequestContext>>> {
        Application(
            responder: HostRoutingResponder(makeRouter().buildResponder()),
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: "evidence-sandbox"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }
}
