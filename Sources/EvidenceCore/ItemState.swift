/// The lifecycle of an evidence item (`ItemLifecycle` says which event moves it where). Raw
/// values are the names shown in `status --json` / `show --json` and stored in the catalog:
/// never rename them.
///
/// A file is an item only once it is ingested: the watcher's "detected" and "settled" are not
/// item states. `quarantined` is never an item's state either: it names the files the watcher
/// or `ingest` refused (the catalog's quarantine table), counted beside the items in `status`,
/// `/metrics` and the portal.
public enum ItemState: String, Codable, Sendable, CaseIterable, Comparable {
    case ingested, submitted, confirmed, certified, archived, done
    case failed, quarantined

    /// Position along the happy path; failed/quarantined sort last.
    public var rank: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (a: Self, b: Self) -> Bool { a.rank < b.rank }

    /// States in which nothing more will happen without an operator.
    public var isTerminal: Bool { self == .done || self == .failed || self == .quarantined }

    /// The state stored for an item; an unknown name (a catalog written by hand or by a newer
    /// version) is an error naming the item, never taken for another state.
    public static func stored(_ name: String, item: Int64) throws(ItemStateError) -> ItemState {
        guard let state = ItemState(rawValue: name) else { throw ItemStateError(item: item, name: name) }
        return state
    }
}

public struct ItemStateError: Error, CustomStringConvertible, Sendable {
    public var item: Int64
    public var name: String
    public var description: String { "item \(item) has the unknown state \"\(name)\"" }
}
