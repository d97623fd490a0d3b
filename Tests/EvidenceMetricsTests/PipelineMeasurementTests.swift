import EvidenceArchive
import EvidenceCatalog
import EvidenceCore
import EvidenceMetrics
import EvidencePipeline
import Foundation
import Logging
import Prometheus
import Synchronization
import Testing

/// The pipeline's parts measure into the factory they were given: the job runner (in flight,
/// retries, failures) and the archive providers (timings, uploaded bytes).
@Suite("Pipeline measurements")
struct PipelineMeasurementTests {
    /// Fails its first attempt (retryable, retry at once), then succeeds; records what the
    /// registry said about jobs in flight while it ran.
    final class Flaky: JobHandler {
        let kind = "flaky"
        let registry: PrometheusCollectorRegistry
        let attempts = Mutex(0)
        let seenInFlight = Mutex<[Bool]>([])
        init(registry: PrometheusCollectorRegistry) { self.registry = registry }

        func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
            seenInFlight.withLock { $0.append(registry.lines.contains(#"evidence_jobs_in_flight{kind="flaky"} 1.0"#)) }
            let n = attempts.withLock { $0 += 1; return $0 }
            if n == 1 { throw JobError("first attempt fails", retryable: true, retryAfter: 0) }
            return .done(nil)
        }
    }

    struct Broken: JobHandler {
        let kind = "broken"
        func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome { throw JobError("permanent", retryable: false) }
    }

    @Test("job runner: in-flight gauge while a job runs and back to 0, one retry for the flaky kind, one failure for the broken one")
    func jobRunner() async throws {
        let catalog = try SQLiteCatalog.inMemory()
        let factory = EvidenceMetricsFactory()
        let flaky = Flaky(registry: factory.registry)
        _ = try catalog.enqueue(JobSpec(kind: "flaky"), itemID: nil, dedupeKey: "flaky:1")
        _ = try catalog.enqueue(JobSpec(kind: "broken"), itemID: nil, dedupeKey: "broken:1")
        // One worker: a job's attempt ends (and leaves the in-flight gauge) before the next is claimed.
        let runner = JobRunner(catalog: catalog, handlers: [flaky, Broken()], owner: "test", workers: 1,
                               backoff: Backoff(base: 0.01, cap: 0.01), idlePoll: 0.02,
                               metrics: PipelineMetrics(factory: factory), logger: Logger(label: "test"))
        // Before any job ran, every kind is exported at 0.
        #expect(factory.registry.lines.isSuperset(of: [
            #"evidence_jobs_in_flight{kind="flaky"} 0.0"#, #"evidence_job_retries_total{kind="broken"} 0"#,
            #"evidence_job_failures_total{kind="flaky"} 0"#,
        ]))
        #expect(!runner.isRunning)
        let task = Task { try await runner.run() }
        // Generous: the loop ends as soon as both jobs are done (well under a second alone).
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let counts = try catalog.jobCountsByKind()
            if counts["flaky"]?["done"] == 1 && counts["broken"]?["failed"] == 1 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(runner.isRunning)
        task.cancel()
        _ = try? await task.value
        #expect(try catalog.jobCountsByKind() == ["flaky": ["done": 1], "broken": ["failed": 1]])
        #expect(flaky.seenInFlight.withLock { $0 } == [true, true])
        let lines = factory.registry.lines
        for line in [#"evidence_jobs_in_flight{kind="flaky"} 0.0"#, #"evidence_jobs_in_flight{kind="broken"} 0.0"#,
                     #"evidence_job_retries_total{kind="flaky"} 1"#, #"evidence_job_failures_total{kind="flaky"} 0"#,
                     #"evidence_job_retries_total{kind="broken"} 0"#, #"evidence_job_failures_total{kind="broken"} 1"#] {
            #expect(lines.contains(line), "missing \(line)\n\(factory.registry.emitToString())")
        }
    }

    @Test("providers measured by Archives.measured: each call timed by account and operation, acknowledged uploads counted in bytes, failures timed but not counted")
    func provider() async throws {
        let f = try MetricsFixture()
        let root = f.dir + "/archive"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let factory = EvidenceMetricsFactory()
        let archives = Archives(providers: ["vault": LocalProvider(account: "vault", root: root)])
            .measured(by: PipelineMetrics(factory: factory))
        let provider = try #require(archives.providers["vault"])
        #expect(provider.account == "vault" && provider.hashKind == .sha256)

        let data = Data(repeating: 9, count: 12_345)
        let local = f.dir + "/upload.bin"
        _ = FileManager.default.createFile(atPath: local, contents: data)
        let hash = try provider.hashKind.digest(of: local)
        #expect(try await provider.stat("a/upload.bin") == nil)
        try await provider.makeFolders("a")
        _ = try await provider.upload(local: local, size: Int64(data.count), hash: hash, to: "a/upload.bin", progress: nil)
        #expect(try await provider.stat("a/upload.bin")?.size == Int64(data.count))
        // A local file that vanished: the upload fails, is timed, and counts no bytes.
        await #expect(throws: ArchiveError.self) {
            _ = try await provider.upload(local: f.dir + "/vanished.bin", size: 99, hash: hash, to: "a/other.bin", progress: nil)
        }

        let lines = factory.registry.lines
        #expect(lines.contains(#"evidence_uploaded_bytes_total{account="vault"} 12345"#), "\(factory.registry.emitToString())")
        #expect(lines.contains(#"evidence_provider_request_duration_seconds_count{account="vault",operation="stat"} 2"#))
        #expect(lines.contains(#"evidence_provider_request_duration_seconds_count{account="vault",operation="make_folders"} 1"#))
        #expect(lines.contains(#"evidence_provider_request_duration_seconds_count{account="vault",operation="upload"} 2"#))
        #expect(!lines.contains { $0.contains("upload.bin") }, "no path in any label")
    }
}
