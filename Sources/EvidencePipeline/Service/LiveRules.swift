import EvidenceConfig
import Synchronization

/// The rules by name, shared by the job handlers and the watcher's ingest, and replaced in
/// place when SIGHUP reloads them (`Pipeline.reloadRules`): a job reads its rule when it runs.
public final class LiveRules: Sendable {
    private let byName: Mutex<[String: WatchRule]>

    public init(_ rules: [String: WatchRule]) { byName = Mutex(rules) }

    public convenience init(_ rules: [WatchRule]) {
        self.init(Dictionary(rules.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a }))
    }

    public subscript(name: String) -> WatchRule? { byName.withLock { $0[name] } }

    public var all: [String: WatchRule] { byName.withLock { $0 } }

    func replace(_ rules: [String: WatchRule]) { byName.withLock { $0 = rules } }
}
