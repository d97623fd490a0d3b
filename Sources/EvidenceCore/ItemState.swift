/// The lifecycle of an evidence item (DESIGN.md). Raw values are the names shown in
/// `status --json` / `show --json` and stored in the catalog: never rename them.
public enum ItemState: String, Codable, Sendable, CaseIterable, Comparable {
    case detected, settled, ingested, submitted, confirmed, certified, archived, shared, done
    case failed, quarantined

    /// Position along the happy path; failed/quarantined sort last.
    public var rank: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (a: Self, b: Self) -> Bool { a.rank < b.rank }

    /// States in which nothing more will happen without an operator.
    public var isTerminal: Bool { self == .done || self == .failed || self == .quarantined }
}
