import EvidenceCore
import EvidenceMetrics
import EvidencePipeline
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Prometheus
import Testing

/// `/metrics`, `/healthz`, `/readyz` through the router, over a real home.
@Suite("Metrics endpoint over HTTP")
struct EndpointTests {
    func endpoint(_ f: MetricsFixture, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
                  checks: [ReadinessCheck]) -> MetricsEndpoint {
        MetricsEndpoint(host: "127.0.0.1", port: 0, registry: registry,
                        gauges: CatalogGauges(catalog: f.home.catalog, registry: registry, jobKinds: [JobKind.verify.rawValue]),
                        checks: checks)
    }

    func app(_ e: MetricsEndpoint) -> some ApplicationProtocol {
        var logger = Logger(label: "metrics-test")
        logger.logLevel = .warning
        return e.makeApplication(logger: logger)
    }

    @Test("/metrics is Prometheus text 0.0.4 with the catalog read at scrape time and the pipeline's own metrics")
    func scrape() async throws {
        let f = try MetricsFixture()
        let factory = EvidenceMetricsFactory()
        PipelineMetrics(factory: factory).recordUploaded(bytes: 42, account: "vault")
        try await app(endpoint(f, registry: factory.registry, checks: [])).test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
                let lines = Set(String(buffer: r.body).split(separator: "\n").map(String.init))
                #expect(lines.contains(#"evidence_items{state="ingested"} 0.0"#))
                #expect(lines.contains(#"evidence_uploaded_bytes_total{account="vault"} 42"#))
            }
            // Ingested after the first scrape: the next one sees it.
            try f.ingest("late.bin", Data("late".utf8))
            try await client.execute(uri: "/metrics", method: .get) { r in
                #expect(String(buffer: r.body).contains(#"evidence_items{state="ingested"} 1.0"#))
            }
        }
    }

    @Test("/healthz answers ok while serving, whatever the readiness checks say")
    func healthz() async throws {
        let f = try MetricsFixture()
        let failing = ReadinessCheck(name: "jobs") { "not running" }
        try await app(endpoint(f, checks: [failing])).test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { r in
                #expect(r.status == .ok && String(buffer: r.body) == "ok\n")
            }
        }
    }

    @Test("/readyz: 200 when the catalog answers and tmp is writable; 503 with one line per failed check")
    func readyz() async throws {
        let f = try MetricsFixture()
        let good = [ReadinessCheck.catalog(f.home.catalog), ReadinessCheck.writable(f.home.store.tmpDir)]
        try await app(endpoint(f, checks: good)).test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { r in
                #expect(r.status == .ok && String(buffer: r.body) == "ready\n")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.home.store.tmpDir).isEmpty, "the probe file is removed")

        let gone = f.dir + "/no-such-folder"
        let bad = good + [ReadinessCheck.writable(gone, name: "scratch"), ReadinessCheck(name: "watcher") { "initial scan not done" }]
        try await app(endpoint(f, checks: bad)).test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { r in
                #expect(r.status == .serviceUnavailable)
                #expect(String(buffer: r.body) == "scratch: \(gone) is not writable: No such file or directory\nwatcher: initial scan not done\n")
            }
        }
    }
}
