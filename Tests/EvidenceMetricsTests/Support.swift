import EvidenceCore
import EvidencePipeline
import Foundation
import Prometheus

/// A temp folder with a home (store + SQLite catalog), removed when released.
final class MetricsFixture: Sendable {
    let dir: String
    let home: EvidenceHome

    init() throws {
        dir = NSTemporaryDirectory() + "/evidence-metrics-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/drop", withIntermediateDirectories: true)
        home = try EvidenceHome(path: dir + "/home")
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// Writes `data` as drop/`name` and ingests it (no rule, no jobs); returns the item.
    @discardableResult
    func ingest(_ name: String, _ data: Data) throws -> Item {
        let path = dir + "/drop/" + name
        _ = FileManager.default.createFile(atPath: path, contents: data)
        guard case .ingested(let outcome) = Ingestor(home: home, actor: "test").ingest(path: path) else {
            throw FixtureError.ingest(path)
        }
        return outcome.item
    }

    enum FixtureError: Error { case ingest(String) }
}

extension PrometheusCollectorRegistry {
    /// The exposition's lines (the registry's order is a dictionary's: not meaningful).
    var lines: Set<String> { Set(emitToString().split(separator: "\n").map(String.init)) }
}
