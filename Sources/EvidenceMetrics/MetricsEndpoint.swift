import EvidenceCatalog
import EvidencePipeline
import Foundation
import Hummingbird
import Logging
import Prometheus

/// The small HTTP server `evidence run` adds to its service group when `[metrics]` (or
/// `--metrics ADDR`) asks for it. GET only, no authentication (loopback by default):
///
/// - `/metrics` — Prometheus text format: the registry's metrics, with the catalog gauges
///   (`CatalogGauges`) refreshed for each scrape; 500 with the reason when the catalog fails.
/// - `/healthz` — 200 `ok` while the process serves.
/// - `/readyz` — 200 `ready` when every `ReadinessCheck` holds, else 503 with one line per
///   failed check (`name: reason`).
public struct MetricsEndpoint: Sendable {
    /// Prometheus text exposition format 0.0.4.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public let host: String
    public let port: Int
    let registry: PrometheusCollectorRegistry
    let gauges: CatalogGauges?
    let checks: [ReadinessCheck]

    public init(host: String, port: Int, registry: PrometheusCollectorRegistry, gauges: CatalogGauges?, checks: [ReadinessCheck]) {
        self.host = host
        self.port = port
        self.registry = registry
        self.gauges = gauges
        self.checks = checks
    }

    /// `http://host:port` (IPv6 in brackets).
    public static func baseURL(host: String, port: Int) -> String {
        "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
        let (registry, gauges, checks) = (self.registry, self.gauges, self.checks)
        router.get("metrics") { _, _ -> Response in
            if let gauges {
                let failure = await onIOThread { () -> String? in
                    do { try gauges.update(); return nil } catch { return "\(error)" }
                }
                if let failure { return Self.text(.internalServerError, "cannot read the catalog: \(failure)\n") }
            }
            var body = ByteBuffer()
            body.writeBytes(registry.emitToBuffer())
            return Response(status: .ok, headers: [.contentType: Self.contentType], body: .init(byteBuffer: body))
        }
        router.get("healthz") { _, _ in Self.text(.ok, "ok\n") }
        router.get("readyz") { _, _ -> Response in
            var failed: [String] = []
            for c in checks {
                if let reason = await c.check() { failed.append("\(c.name): \(reason)") }
            }
            return failed.isEmpty ? Self.text(.ok, "ready\n") : Self.text(.serviceUnavailable, failed.joined(separator: "\n") + "\n")
        }
        return router
    }

    /// The server as a `Service`. `onListening` gets the bound port (useful with port 0).
    public func makeApplication(logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in })
        -> some ApplicationProtocol {
        Application(router: makeRouter(),
                    configuration: .init(address: .hostname(host, port: port), serverName: "evidence"),
                    onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
                    logger: logger)
    }

    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
