import EvidenceCatalog
import EvidenceCore
import Foundation

/// The catalog's rows checked against the custody events that must have recorded them.
///
/// Every write method appends its events in the same transaction as its rows, so whoever
/// changes a row by SQL (an item set to `done`, a proof row inserted, an archive copy added)
/// without a matching event is caught here, and whoever adds the event too breaks the chain
/// (and, with `[custody]`, the anchors after it).
public enum CustodyCrossCheck {
    /// An event's details as the strings they were written from.
    static func details(_ e: CustodyEvent) -> [String: String] {
        (try? JSONDecoder().decode([String: String].self, from: Data(e.details.utf8))) ?? [:]
    }

    /// The state an item's events leave it in: `ingested` at its `ingested` event, then each
    /// transition's `to`; a `retry` takes a failed item back to the state it failed from (as
    /// `retryFailed` does). nil when the events never record the item's ingest.
    public static func replayState(_ events: [(CustodyEvent, [String: String])]) -> String? {
        var state: String?
        var failedFrom: String?
        for (e, d) in events {
            if e.is(.ingested) { state = ItemState.ingested.rawValue }
            if let to = d["to"] {
                if to == ItemState.failed.rawValue { failedFrom = d["from"] }
                state = to
            }
            if e.is(.retry), state == ItemState.failed.rawValue { state = failedFrom ?? ItemState.ingested.rawValue }
        }
        return state
    }

    public static func check(items: [Item], proofs: [Proof], certificates: [Certificate], archived: [ArchivedFile],
                             events: [CustodyEvent]) -> [ChainReport.Problem] {
        var byItem: [Int64: [(CustodyEvent, [String: String])]] = [:]
        for e in events { if let id = e.itemID { byItem[id, default: []].append((e, details(e))) } }
        var problems: [ChainReport.Problem] = []
        let lastSeq = events.last?.seq ?? 0
        for item in items {
            let mine = byItem[item.id] ?? []
            let at = mine.last?.0.seq ?? lastSeq
            guard mine.contains(where: { $0.0.is(.ingested) && $0.1["sha256"] == item.sha256.hex }) else {
                problems.append(.init(seq: at, detail: "item #\(item.id) (\(item.sha256.short)) has no ingested event for its SHA-256 "
                                      + "in the custody log: the item row was added or changed without it"))
                continue
            }
            if let replayed = replayState(mine), replayed != item.state.rawValue {
                problems.append(.init(seq: at, detail: "item #\(item.id) is \(item.state.rawValue) in the catalog, but its custody events "
                                      + "leave it \(replayed): the item row was changed without its event"))
            }
        }
        for p in proofs {
            let mine = byItem[p.itemID] ?? []
            // The newest event about this notary's proof must record the row as it stands.
            let last = mine.last { ($0.0.is(.notaryPending) || $0.0.is(.notaryConfirmed) || $0.0.is(.notaryFailed)) && $0.1["notary"] == p.notary }
            let agrees = last.map { $0.0.is(.notary(p.state)) && $0.1["receipt"] == p.receipt?.hex } ?? false
            if !agrees {
                problems.append(.init(seq: last?.0.seq ?? mine.last?.0.seq ?? lastSeq,
                                      detail: "proof of item #\(p.itemID) by \(p.notary) is \(p.state.rawValue)"
                                      + (p.receipt.map { " with receipt \($0.short)" } ?? "")
                                      + " in the catalog, but no custody event records it so: the proof row was inserted or changed without its event"))
            }
        }
        for c in certificates {
            let mine = byItem[c.itemID] ?? []
            if !mine.contains(where: { $0.0.is(.certificate) && $0.1["origin"] == c.origin && $0.1["sha256"] == c.sha256.hex }) {
                problems.append(.init(seq: mine.last?.0.seq ?? lastSeq,
                                      detail: "certificate \(c.origin) of item #\(c.itemID) (\(c.sha256.short)) has no custody event: "
                                      + "the certificate row was inserted or changed without it"))
            }
        }
        for a in archived {
            let mine = byItem[a.itemID] ?? []
            if !mine.contains(where: { $0.0.is(.archivedFile) && $0.1["account"] == a.account && $0.1["remote_path"] == a.remotePath
                                       && $0.1["sha256"] == a.sha256.hex }) {
                problems.append(.init(seq: mine.last?.0.seq ?? lastSeq,
                                      detail: "archive copy \(a.account):\(a.remotePath) of item #\(a.itemID) has no archived-file event: "
                                      + "the archive row was inserted or changed without it"))
            }
        }
        return problems
    }
}
