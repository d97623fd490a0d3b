import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import Foundation
import Prometheus
import Synchronization

/// The gauges read from the catalog when `/metrics` is scraped: what the durable state is
/// now, whichever process (this one, `evidence ingest`, `evidence retry`) changed it.
public struct CatalogGauges: Sendable {
    let catalog: any Catalog
    let registry: PrometheusCollectorRegistry
    /// Job kinds always exported (0 when none is queued), besides any kind the queue holds.
    let jobKinds: [String]
    /// The home's `anchors/` when `[custody] anchor_tsa` is set: then the anchor gauges are exported.
    let anchorDirectory: String?
    /// Accounts and notaries ever exported as paused: one whose pause ended reads 0.
    final class Seen: Sendable { let scopes = Mutex<Set<String>>([]) }
    let seenPauses = Seen()

    public init(catalog: any Catalog, registry: PrometheusCollectorRegistry, jobKinds: [String], anchorDirectory: String? = nil) {
        self.catalog = catalog
        self.registry = registry
        self.jobKinds = jobKinds
        self.anchorDirectory = anchorDirectory
    }

    func gauge(_ name: String, _ labels: [(String, String)] = []) -> Gauge {
        registry.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: MetricDescriptions.help(for: name)),
                           labels: labels)
    }

    /// Reads the catalog and sets the gauges. Blocking (SQLite): call it off the cooperative pool.
    ///
    /// `evidence_items{state="quarantined"}` counts what `evidence status` lists as quarantined:
    /// the files not taken in (unresolved quarantine entries; no item is ever in that state).
    public func update(now: Date = Date()) throws(CatalogError) {
        let summary = try catalog.summary()
        let jobs = try catalog.jobCountsByKind()
        for state in ItemState.allCases {
            gauge(MetricDescriptions.items, [("state", state.rawValue)]).set(to: Double(summary.byState[state.rawValue] ?? 0))
        }
        gauge(MetricDescriptions.items, [("state", "quarantined")]).set(to: Double(summary.quarantined))
        gauge(MetricDescriptions.items, [("state", CatalogSummary.superseded)]).set(to: Double(summary.byState[CatalogSummary.superseded] ?? 0))
        let paused = try Pauses.all(in: catalog)
        let scopes = seenPauses.scopes.withLock { $0.formUnion(paused.keys); return $0 }
        for scope in scopes.sorted() {
            let parts = scope.split(separator: ":", maxSplits: 1).map(String.init)
            gauge(MetricDescriptions.paused, [("kind", parts.first ?? ""), ("name", parts.last ?? "")]).set(to: paused[scope] == nil ? 0 : 1)
        }
        for kind in Set(jobKinds).union(jobs.keys).sorted() {
            gauge(MetricDescriptions.jobsQueued, [("kind", kind)]).set(to: Double(jobs[kind]?["queued"] ?? 0))
        }
        for (node, n) in summary.takenInByNode {
            gauge(MetricDescriptions.nodeItemsTakenIn, [("node", node)]).set(to: Double(n))
        }
        // Every node seen, so a node whose jobs ended reads 0 rather than its last count.
        for node in Set(summary.takenInByNode.keys).union(summary.runningByNode.keys) {
            gauge(MetricDescriptions.nodeJobsRunning, [("node", node)]).set(to: Double(summary.runningByNode[node] ?? 0))
        }
        let age = summary.oldestPending.map { max(0, now.timeIntervalSince($0)) } ?? 0
        gauge(MetricDescriptions.oldestPendingAge).set(to: age)
        if let anchorDirectory {
            // Custody seqs run 1…n without gaps (the chain check enforces it): the head is the count.
            let head = try catalog.lastEvent()
            let anchors = ChainAnchors.summary(directory: anchorDirectory, headSeq: head?.seq ?? Int64(summary.events),
                                               headIsRecord: head.map(ChainAnchors.isRecordOfPrevious) ?? false, now: now)
            gauge(MetricDescriptions.unanchoredEvents).set(to: Double(anchors.eventsSinceNewest))
            if let age = anchors.newestAgeSeconds { gauge(MetricDescriptions.anchorAge).set(to: age) }
        }
    }
}
