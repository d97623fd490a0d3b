import EvidencePipeline

/// The HELP text of every metric `evidence run` exports, and the buckets of its histograms.
///
/// One table for both ways metrics are made (swift-metrics in the pipeline, the registry
/// directly for what is read from the catalog at scrape time): the registry refuses two help
/// texts for one name.
public enum MetricDescriptions {
    /// Gauge, label `state` (every lifecycle state, 0 when none): items in the catalog.
    public static let items = "evidence_items"
    /// Gauge, label `kind`: jobs waiting in the catalog's queue (due now, or later after a backoff or poll wait).
    public static let jobsQueued = "evidence_jobs_queued"
    /// Gauge: seconds since the oldest item not yet in a final state (done, failed) was created; 0 when none.
    public static let oldestPendingAge = "evidence_oldest_pending_age_seconds"
    /// Gauge, labels `kind` (account, notary) and `name`: 1 while its credentials are refused and its work waits.
    public static let paused = "evidence_paused"

    /// Gauge, label `node`: items each node took in first (several nodes on one catalog).
    public static let nodeItemsTakenIn = "evidence_node_items_taken_in"
    /// Gauge, label `node`: jobs each node is running now (its unexpired leases).
    public static let nodeJobsRunning = "evidence_node_jobs_running"

    /// Gauge (with `[custody] anchor_tsa`): custody events after the newest anchor.
    public static let unanchoredEvents = "evidence_custody_unanchored_events"
    /// Gauge (with `[custody] anchor_tsa`, once an anchor exists): seconds since the newest anchor was written.
    public static let anchorAge = "evidence_custody_anchor_age_seconds"

    typealias P = PipelineMetrics.Name

    static let help: [String: String] = [
        items: "Items in the catalog by lifecycle state (quarantined: files not taken in, as evidence status counts them).",
        jobsQueued: "Jobs waiting in the catalog's queue by kind (due now or after a backoff or poll wait).",
        paused: "1 while an account or notary is paused because its credentials were refused (its work waits; evidence accounts resume NAME).",
        oldestPendingAge: "Age in seconds of the oldest item not yet done, failed or quarantined; 0 when there is none.",
        nodeItemsTakenIn: "Items each node took in first (from the actor of their ingested event; cli for evidence ingest).",
        nodeJobsRunning: "Jobs each node is running now (running jobs by the node of their lease owner).",
        unanchoredEvents: "Custody events after the newest time-stamped anchor ([custody] anchor_tsa): not yet covered.",
        anchorAge: "Seconds since the newest custody anchor was written; rises past anchor_every when the TSA is unreachable.",
        P.jobsInFlight: "Jobs this process is executing now, by kind.",
        P.jobRetries: "Failed job attempts that were scheduled to run again, by kind.",
        P.jobFailures: "Jobs that failed for good (attempts spent or a permanent error), by kind.",
        P.notaryRequestDuration: "Duration of requests to a notary in seconds, successful or not, by notary and operation.",
        P.providerRequestDuration: "Duration of archive provider calls in seconds, successful or not, by account and operation.",
        P.uploadedBytes: "Bytes of files uploaded to an archive account and acknowledged by the provider.",
        P.ingestedFiles: "Files the watcher read and recorded (a new item or a new source of a known item).",
        P.quarantined: "Files the watcher could not take in (left in place and listed as quarantined).",
        P.catalogWrites: "Writes to the SQLite catalog, each an atomic change.",
        P.catalogTransactions: "SQLite catalog transactions; writes queued while another commits share one (group commit).",
    ]

    /// Remote requests take milliseconds (a local folder) to minutes (a large chunked upload).
    public static let requestBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        .seconds(30), .seconds(60), .seconds(120), .seconds(300),
    ]

    static func help(for name: String) -> String { help[name] ?? "" }
}
