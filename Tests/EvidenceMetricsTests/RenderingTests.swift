import EvidenceCatalog
import EvidenceCore
import EvidenceMetrics
import EvidencePipeline
import Foundation
import Prometheus
import Testing

/// What `/metrics` says for known observations, line by line, on a registry of the test's own.
@Suite("Prometheus exposition of the pipeline's metrics")
struct RenderingTests {
    @Test("request histograms: seconds, our buckets, labels in order; upload bytes; HELP and TYPE once per name")
    func requestsAndUploads() {
        let factory = EvidenceMetricsFactory()
        let metrics = PipelineMetrics(factory: factory)
        metrics.recordNotary("qed", .submit, duration: .milliseconds(20))
        metrics.recordNotary("qed", .submit, duration: .seconds(3))
        metrics.recordNotary("tsa", .timestamp, duration: .milliseconds(400))
        metrics.recordProvider("vault", .upload, duration: .milliseconds(1500))
        metrics.recordUploaded(bytes: 1234, account: "vault")
        metrics.recordUploaded(bytes: 66, account: "vault")
        metrics.recordUploaded(bytes: 5, account: "office")

        let text = factory.registry.emitToString()
        let lines = factory.registry.lines
        let expected = [
            "# HELP evidence_notary_request_duration_seconds Duration of requests to a notary in seconds, successful or not, by notary and operation.",
            "# TYPE evidence_notary_request_duration_seconds histogram",
            #"evidence_notary_request_duration_seconds_bucket{notary="qed",operation="submit",le="0.01"} 0"#,
            #"evidence_notary_request_duration_seconds_bucket{notary="qed",operation="submit",le="0.025"} 1"#,
            #"evidence_notary_request_duration_seconds_bucket{notary="qed",operation="submit",le="2.5"} 1"#,
            #"evidence_notary_request_duration_seconds_bucket{notary="qed",operation="submit",le="5.0"} 2"#,
            #"evidence_notary_request_duration_seconds_bucket{notary="qed",operation="submit",le="300.0"} 2"#,
            #"evidence_notary_request_duration_seconds_bucket{notary="qed",operation="submit",le="+Inf"} 2"#,
            #"evidence_notary_request_duration_seconds_sum{notary="qed",operation="submit"} 3.02"#,
            #"evidence_notary_request_duration_seconds_count{notary="qed",operation="submit"} 2"#,
            #"evidence_notary_request_duration_seconds_bucket{notary="tsa",operation="timestamp",le="0.25"} 0"#,
            #"evidence_notary_request_duration_seconds_bucket{notary="tsa",operation="timestamp",le="0.5"} 1"#,
            #"evidence_notary_request_duration_seconds_count{notary="tsa",operation="timestamp"} 1"#,
            "# TYPE evidence_provider_request_duration_seconds histogram",
            #"evidence_provider_request_duration_seconds_bucket{account="vault",operation="upload",le="1.0"} 0"#,
            #"evidence_provider_request_duration_seconds_bucket{account="vault",operation="upload",le="2.5"} 1"#,
            #"evidence_provider_request_duration_seconds_sum{account="vault",operation="upload"} 1.5"#,
            "# TYPE evidence_uploaded_bytes_total counter",
            #"evidence_uploaded_bytes_total{account="vault"} 1300"#,
            #"evidence_uploaded_bytes_total{account="office"} 5"#,
        ]
        for line in expected { #expect(lines.contains(line), "missing: \(line)\n\(text)") }
        // 15 buckets + Inf + sum + count per series, three series.
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("evidence_notary_request_duration_seconds") }.count == 2 * 18)
        #expect(text.components(separatedBy: "# TYPE evidence_notary_request_duration_seconds ").count == 2)
        #expect(text.components(separatedBy: "# HELP evidence_uploaded_bytes_total ").count == 2)
    }

    @Test("two factories count apart: a test's registry sees only its own observations")
    func registriesAreIndependent() {
        let a = EvidenceMetricsFactory(), b = EvidenceMetricsFactory()
        PipelineMetrics(factory: a).recordUploaded(bytes: 10, account: "x")
        PipelineMetrics(factory: b).recordUploaded(bytes: 7, account: "x")
        #expect(a.registry.lines.contains(#"evidence_uploaded_bytes_total{account="x"} 10"#))
        #expect(b.registry.lines.contains(#"evidence_uploaded_bytes_total{account="x"} 7"#))
    }

    @Test("catalog gauges: every state present (0 when none), quarantine as status counts it, queued jobs per kind, oldest pending age")
    func catalogGauges() throws {
        let f = try MetricsFixture()
        let a = try f.ingest("a.bin", Data(repeating: 1, count: 100))
        try f.ingest("b.bin", Data(repeating: 2, count: 200))
        _ = try f.home.catalog.recordQuarantine(path: f.dir + "/drop/fifo", rule: "cam", reason: "not a regular file (fifo)")
        _ = try f.home.catalog.enqueue(JobSpec(.verify(rule: "cam")), itemID: a.id, dedupeKey: "verify:\(a.id)")
        _ = try f.home.catalog.enqueue(JobSpec(.share(rule: "cam")), itemID: nil, dedupeKey: "share:1")

        let registry = PrometheusCollectorRegistry()
        let gauges = CatalogGauges(catalog: f.home.catalog, registry: registry, jobKinds: [JobKind.verify.rawValue, JobKind.archive.rawValue])
        // The catalog keeps times to the millisecond: the age is counted from what it kept.
        let created = try #require(try f.home.catalog.item(id: a.id)).createdAt
        try gauges.update(now: created.addingTimeInterval(90))
        let lines = registry.lines
        #expect(lines.contains(#"evidence_items{state="ingested"} 2.0"#), "\(registry.emitToString())")
        #expect(lines.contains(#"evidence_items{state="quarantined"} 1.0"#))
        for state in ItemState.allCases where state != .ingested {
            #expect(lines.contains(#"evidence_items{state="\#(state.rawValue)"} 0.0"#), "\(state)")
        }
        #expect(lines.contains(#"evidence_jobs_queued{kind="verify"} 1.0"#))
        #expect(lines.contains(#"evidence_jobs_queued{kind="share"} 1.0"#))
        #expect(lines.contains(#"evidence_jobs_queued{kind="archive"} 0.0"#))
        #expect(lines.contains("evidence_oldest_pending_age_seconds 90.0"))
        #expect(lines.contains("# TYPE evidence_items gauge"))
        let takenIn = lines.filter { $0.hasPrefix("evidence_node_items_taken_in{") }
        #expect(takenIn.count == 1 && takenIn.first?.hasSuffix(" 2.0") == true, "\(takenIn)")
        #expect(lines.contains { $0.hasPrefix("evidence_node_jobs_running{") && $0.hasSuffix(" 0.0") })

        // Done items are not pending: the age falls to 0 and the counts follow at the next scrape.
        for item in try f.home.catalog.allItems() {
            // As each item's last job does when it completes.
            let c = f.home.catalog
            let job = try c.enqueue(JobSpec(.share(rule: "cam")), itemID: item.id, dedupeKey: "test-done:\(item.id)")
            let claimed = try #require(try c.claimJob(id: job.id, owner: "test", lease: 60, now: Date()))
            try c.completeJob(claimed.id, owner: "test", transition: JobTransition(state: .done, event: .shared))
        }
        try gauges.update()
        #expect(registry.lines.contains("evidence_oldest_pending_age_seconds 0.0"))
        #expect(registry.lines.contains(#"evidence_items{state="done"} 2.0"#))
        #expect(registry.lines.contains(#"evidence_items{state="ingested"} 0.0"#))
    }
    @Test("with [custody] anchors: unanchored events and the newest anchor's age; without: neither gauge")
    func anchorGauges() throws {
        let f = try MetricsFixture()
        try f.ingest("a.bin", Data(repeating: 1, count: 100))
        let events = try f.home.catalog.summary().events
        let dir = f.dir + "/anchors"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)

        let plain = PrometheusCollectorRegistry()
        try CatalogGauges(catalog: f.home.catalog, registry: plain, jobKinds: []).update()
        #expect(!plain.emitToString().contains("evidence_custody_"))

        let registry = PrometheusCollectorRegistry()
        let gauges = CatalogGauges(catalog: f.home.catalog, registry: registry, jobKinds: [], anchorDirectory: dir)
        try gauges.update()
        #expect(registry.lines.contains("evidence_custody_unanchored_events \(Double(events))"), "\(registry.emitToString())")
        #expect(!registry.emitToString().contains("evidence_custody_anchor_age_seconds "), "no anchor, no age")

        // An anchor of event #1 written 5 minutes ago (the gauges read names and times, not tokens).
        let file = dir + "/000000000001-" + String(repeating: "ab", count: 32) + ".tsr"
        _ = FileManager.default.createFile(atPath: file, contents: Data("token".utf8))
        let written = Date().addingTimeInterval(-300)
        try FileManager.default.setAttributes([.modificationDate: written], ofItemAtPath: file)
        try gauges.update(now: written.addingTimeInterval(300))
        #expect(registry.lines.contains("evidence_custody_unanchored_events \(Double(events - 1))"), "\(registry.emitToString())")
        let age = registry.lines.first { $0.hasPrefix("evidence_custody_anchor_age_seconds ") }
            .flatMap { Double($0.split(separator: " ")[1]) }
        #expect(age.map { abs($0 - 300) < 1 } == true, "\(registry.emitToString())")
    }
}
