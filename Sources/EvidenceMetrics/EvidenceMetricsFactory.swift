import CoreMetrics
import Prometheus

/// swift-metrics onto one Prometheus registry, with our HELP texts and request buckets.
///
/// Like swift-prometheus' own `PrometheusMetricsFactory` (counters → counters, meters and
/// unaggregated recorders → gauges, timers → duration histograms, aggregated recorders →
/// value histograms), but every metric named in `MetricDescriptions` gets its HELP line, which
/// Prometheus' own lint (`promtool check metrics`) asks for.
public struct EvidenceMetricsFactory: MetricsFactory {
    public let registry: PrometheusCollectorRegistry

    /// A new registry by default: every factory (and so every test) counts on its own.
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
    }

    /// Makes this factory the process's `MetricsSystem` (for libraries that use the global
    /// one). Once per process: a second call traps, as swift-metrics does. Only `evidence run`.
    public func bootstrapProcess() {
        MetricsSystem.bootstrap(self)
    }

    func descriptor(_ label: String) -> MetricNameDescriptor {
        // The descriptor's parts are only joined with "_": the whole name goes in `metricName`.
        MetricNameDescriptor(metricName: label, unitName: "", helpText: MetricDescriptions.help(for: label))
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: descriptor(label), labels: dimensions,
                                           buckets: [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000])
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: MetricDescriptions.requestBuckets)
    }

    public func destroyCounter(_ handler: any CounterHandler) {
        if let c = handler as? Prometheus.Counter { registry.unregisterCounter(c) }
    }

    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let c = handler as? Prometheus.Counter { registry.unregisterCounter(c) }
    }

    public func destroyRecorder(_ handler: any RecorderHandler) {
        if let g = handler as? Prometheus.Gauge { registry.unregisterGauge(g) }
        if let h = handler as? ValueHistogram { registry.unregisterValueHistogram(h) }
    }

    public func destroyMeter(_ handler: any MeterHandler) {
        if let g = handler as? Prometheus.Gauge { registry.unregisterGauge(g) }
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        if let h = handler as? DurationHistogram { registry.unregisterDurationHistogram(h) }
    }
}
