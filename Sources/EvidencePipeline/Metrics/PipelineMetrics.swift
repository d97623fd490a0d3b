import CoreMetrics
import Foundation

/// What the pipeline measures while it runs, through swift-metrics.
///
/// The factory is passed in, never read from `MetricsSystem`: `evidence run` bootstraps the
/// process-wide system and hands the same factory here, while tests give each pipeline a
/// factory over a registry of their own, whatever else bootstrapped first. `.disabled`
/// measures nothing. Labels are bounded by configuration (job kinds, notary and account
/// names, a fixed set of operations): never a path or a hash.
public struct PipelineMetrics: Sendable {
    /// Metric names, Prometheus-style: `evidence_` prefix, unit or `_total` suffix.
    public enum Name {
        /// Gauge (swift-metrics Meter), label `kind`: jobs this process is executing now.
        public static let jobsInFlight = "evidence_jobs_in_flight"
        /// Counter, label `kind`: failed attempts that were scheduled to run again.
        public static let jobRetries = "evidence_job_retries_total"
        /// Counter, label `kind`: jobs that failed for good (attempts spent, or a permanent error).
        public static let jobFailures = "evidence_job_failures_total"
        /// Histogram (swift-metrics Timer), labels `notary`, `operation`: one request to a notary.
        public static let notaryRequestDuration = "evidence_notary_request_duration_seconds"
        /// Histogram (swift-metrics Timer), labels `account`, `operation`: one call to an archive provider.
        public static let providerRequestDuration = "evidence_provider_request_duration_seconds"
        /// Counter, label `account`: bytes of files whose upload the provider acknowledged.
        public static let uploadedBytes = "evidence_uploaded_bytes_total"
        /// Counter: files the watcher read and recorded (a new item, or a new source of a known one).
        public static let ingestedFiles = "evidence_ingested_files_total"
        /// Counter: files the watcher could not take in (left in place, recorded in the quarantine list).
        public static let quarantined = "evidence_quarantined_total"
        /// Counter: catalog transactions committed or rolled back (SQLite; group commit makes them
        /// fewer than the writes).
        public static let catalogTransactions = "evidence_catalog_transactions_total"
        /// Counter: catalog writes (each a transaction of its own without group commit).
        public static let catalogWrites = "evidence_catalog_writes_total"
    }

    /// The operations of `evidence_notary_request_duration_seconds`.
    public enum NotaryOperation: String, Sendable, CaseIterable {
        /// QED: reports for a hash (before submitting, so nothing is notarized twice).
        case lookup
        case submit
        /// QED: one report by slug.
        case poll
        /// QED: the PDF certificate.
        case certificate
        /// RFC 3161: one time-stamp request.
        case timestamp
    }

    /// The operations of `evidence_provider_request_duration_seconds`: the `ArchiveProvider` calls.
    public enum ProviderOperation: String, Sendable, CaseIterable {
        case whoami, makeFolders = "make_folders", stat, upload, download, share, delete
    }

    let factory: any MetricsFactory

    /// Measures nothing.
    public static let disabled = PipelineMetrics(factory: NOOPMetricsHandler.instance)

    public init(factory: any MetricsFactory) { self.factory = factory }

    /// True for `.disabled` (nothing is measured: callers may skip the work of measuring).
    var isDisabled: Bool { factory is NOOPMetricsHandler }

    // MARK: Jobs

    /// Creates the per-kind series at 0, so that a kind with nothing to report yet is still
    /// scraped (a missing series and a zero are different things to a Prometheus query).
    func registerJobKinds(_ kinds: [String]) {
        for kind in kinds {
            CoreMetrics.Meter(label: Name.jobsInFlight, dimensions: [("kind", kind)], factory: factory).set(0)
            _ = CoreMetrics.Counter(label: Name.jobRetries, dimensions: [("kind", kind)], factory: factory)
            _ = CoreMetrics.Counter(label: Name.jobFailures, dimensions: [("kind", kind)], factory: factory)
        }
    }

    func jobStarted(kind: String) { CoreMetrics.Meter(label: Name.jobsInFlight, dimensions: [("kind", kind)], factory: factory).increment() }
    func jobEnded(kind: String) { CoreMetrics.Meter(label: Name.jobsInFlight, dimensions: [("kind", kind)], factory: factory).decrement() }
    func jobRetried(kind: String) { CoreMetrics.Counter(label: Name.jobRetries, dimensions: [("kind", kind)], factory: factory).increment() }
    func jobFailed(kind: String) { CoreMetrics.Counter(label: Name.jobFailures, dimensions: [("kind", kind)], factory: factory).increment() }

    // MARK: Watcher

    func fileIngested() { CoreMetrics.Counter(label: Name.ingestedFiles, factory: factory).increment() }
    func fileQuarantined() { CoreMetrics.Counter(label: Name.quarantined, factory: factory).increment() }

    /// One catalog transaction holding `writes` writes.
    func catalogCommitted(writes: Int) {
        CoreMetrics.Counter(label: Name.catalogTransactions, factory: factory).increment()
        CoreMetrics.Counter(label: Name.catalogWrites, factory: factory).increment(by: writes)
    }

    /// Creates the watcher's counters at 0.
    func registerWatcher() {
        _ = CoreMetrics.Counter(label: Name.ingestedFiles, factory: factory)
        _ = CoreMetrics.Counter(label: Name.quarantined, factory: factory)
    }

    // MARK: Requests

    /// Records one notary request's duration, successful or not.
    public func recordNotary(_ notary: String, _ operation: NotaryOperation, duration: Duration) {
        CoreMetrics.Timer(label: Name.notaryRequestDuration, dimensions: [("notary", notary), ("operation", operation.rawValue)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// Records one provider call's duration, successful or not.
    public func recordProvider(_ account: String, _ operation: ProviderOperation, duration: Duration) {
        CoreMetrics.Timer(label: Name.providerRequestDuration, dimensions: [("account", account), ("operation", operation.rawValue)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    public func recordUploaded(bytes: Int64, account: String) {
        CoreMetrics.Counter(label: Name.uploadedBytes, dimensions: [("account", account)], factory: factory).increment(by: bytes)
    }

    /// Runs `body` and records its duration as one request to `notary`, whether it succeeds or throws.
    func timeNotary<T, E: Error>(_ notary: String, _ operation: NotaryOperation,
                                 _ body: () async throws(E) -> T) async throws(E) -> T {
        let start = ContinuousClock.now
        defer { recordNotary(notary, operation, duration: ContinuousClock.now - start) }
        return try await body()
    }

    /// Runs `body` and records its duration as one call to `account`'s provider, whether it succeeds or throws.
    func timeProvider<T, E: Error>(_ account: String, _ operation: ProviderOperation,
                                   _ body: () async throws(E) -> T) async throws(E) -> T {
        let start = ContinuousClock.now
        defer { recordProvider(account, operation, duration: ContinuousClock.now - start) }
        return try await body()
    }
}

extension Duration {
    /// Whole nanoseconds, saturating (a Timer takes Int64 nanoseconds).
    var nanoseconds: Int64 {
        let (s, atto) = components
        let (n, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return s < 0 ? .min : .max }
        return n.addingReportingOverflow(atto / 1_000_000_000).overflow ? .max : n + atto / 1_000_000_000
    }
}
