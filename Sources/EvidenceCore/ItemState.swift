/// The lifecycle of an evidence item (`ItemLifecycle` says which event moves it where). Raw
/// values are the names shown in `status --json` / `show --json` and stored in the catalog:
/// never rename them.
///
/// A file is an item only once it is ingested: the watcher's "detected" and "settled" are not
/// item states. Nor is "quarantined": the files the watcher or `ingest` refused are rows of the
/// catalog's quarantine table (`CatalogSummary.quarantined` counts them), shown beside the item
/// states in `status`, `/metrics` and the portal.
public enum ItemState: String, Codable, Sendable, CaseIterable, Comparable {
    case ingested, submitted, confirmed, certified, archived, done
    case failed

    /// Position along the happy path; failed sorts last.
    public var rank: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (a: Self, b: Self) -> Bool { a.rank < b.rank }

    /// States in which nothing more will happen without an operator.
    public var isTerminal: Bool { self == .done || self == .failed }
}
