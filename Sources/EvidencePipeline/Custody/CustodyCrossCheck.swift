import EvidenceCatalog
import EvidenceCore
import EvidenceStore
import Foundation

/// The catalog's rows and the store's objects checked against the custody events, in both
/// directions.
///
/// Every write method appends its events in the same transaction as its rows, so the events
/// say exactly which rows must exist and what they hold:
/// - every row must be recorded by its event (an item set to `done`, a proof row inserted, an
///   archive copy added by SQL shows), and
/// - every item, source, proof, certificate, archived file and share link an event records
///   must still have its row as recorded, and every store object it names must be there with
///   its size (a row deleted, a source renamed, a proof's link repointed, a whole item removed
///   with its object shows).
/// Whoever adds or rewrites events to match breaks the chain (and, with `[custody]`, the
/// anchors after it). Pure: the caller reads the rows, the events and the objects' sizes.
public enum CustodyCrossCheck {
    /// The catalog rows the check compares with the events.
    public struct Rows: Sendable {
        public var items: [Item]
        public var sources: [SourceSighting]
        public var proofs: [Proof]
        public var certificates: [Certificate]
        public var archived: [ArchivedFile]
        public var links: [SharedLink]

        public init(items: [Item] = [], sources: [SourceSighting] = [], proofs: [Proof] = [], certificates: [Certificate] = [],
                    archived: [ArchivedFile] = [], links: [SharedLink] = []) {
            self.items = items; self.sources = sources; self.proofs = proofs; self.certificates = certificates
            self.archived = archived; self.links = links
        }
    }

    /// What the store answered for one object.
    public enum StoredObject: Sendable, Equatable {
        case present(size: Int64)
        case missing
        /// The store could not be asked (an unreachable bucket): not checked, and said so.
        case unreadable(String)
    }

    /// A store object the events or the rows say must be there.
    public struct ExpectedObject: Sendable, Equatable {
        public var digest: SHA256Digest
        /// The size recorded with it, when one is.
        public var size: Int64?
        /// The event that records it (the newest about its row), or the newest event of its item.
        public var seq: Int64
        /// What it is, for messages: "the original of item #1", "the receipt of item #1 by tsa", …
        public var what: String
        /// Whether an event (not only a row) records it: such an object with no row referring
        /// to it was left behind by a deleted row, not by a crash.
        public var recordedByEvent: Bool
    }

    /// An event's details as the strings they were written from.
    public static func details(_ e: CustodyEvent) -> [String: String] {
        e.fields
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

    /// The events parsed once and grouped by what they record; the newest event per row key.
    struct Log {
        typealias Entry = (event: CustodyEvent, details: [String: String])
        var byItem: [Int64: [Entry]] = [:]
        var ingested: [Entry] = []
        var sightings: [Entry] = []
        var proofs: [ProofKey: Entry] = [:]
        var certificates: [CertificateKey: Entry] = [:]
        var archived: [ArchiveKey: Entry] = [:]
        var links: [LinkKey: Entry] = [:]
        var lastSeq: Int64 = 0

        init(_ events: [CustodyEvent]) {
            lastSeq = events.last?.seq ?? 0
            for e in events {
                guard let item = e.itemID else { continue }
                let entry: Entry = (e, CustodyCrossCheck.details(e))
                let d = entry.details
                byItem[item, default: []].append(entry)
                if e.is(.ingested) { ingested.append(entry) }
                if e.is(.ingested) || e.is(.seenAgain) { sightings.append(entry) }
                if e.is(.notaryPending) || e.is(.notaryConfirmed) || e.is(.notaryFailed), let n = d["notary"] {
                    proofs[ProofKey(item: item, notary: n)] = entry
                }
                if e.is(.certificate), let o = d["origin"] { certificates[CertificateKey(item: item, origin: o)] = entry }
                if e.is(.archivedFile), let a = d["account"], let p = d["remote_path"] {
                    archived[ArchiveKey(item: item, account: a, remotePath: p)] = entry
                }
                if e.is(.shareLink), let a = d["account"] { links[LinkKey(item: item, account: a)] = entry }
            }
        }

        /// The seq to name for a row with no event of its own: its item's newest, else the head.
        func seq(item: Int64) -> Int64 { byItem[item]?.last?.event.seq ?? lastSeq }
    }

    struct ProofKey: Hashable { var item: Int64; var notary: String }
    struct CertificateKey: Hashable { var item: Int64; var origin: String }
    struct ArchiveKey: Hashable { var item: Int64; var account: String; var remotePath: String }
    struct LinkKey: Hashable { var item: Int64; var account: String }
    struct SourceKey: Hashable { var item: Int64; var path: String; var name: String; var rule: String? }

    /// Every store object the events (the newest event per row) and the rows name, events
    /// first, once per digest: what the caller looks up in the store for `check`, and what
    /// `fsck` tells apart from a crash's orphans.
    public static func expectedObjects(rows: Rows, events: [CustodyEvent]) -> [ExpectedObject] {
        expectedObjects(rows: rows, log: Log(events))
    }

    static func expectedObjects(rows: Rows, log: Log) -> [ExpectedObject] {
        var out: [ExpectedObject] = []
        var seen = Set<SHA256Digest>()
        func add(_ hex: String?, size: String?, seq: Int64, what: String, event: Bool) {
            guard let hex, let d = SHA256Digest(hex: hex), seen.insert(d).inserted else { return }
            out.append(ExpectedObject(digest: d, size: size.flatMap { Int64($0) }, seq: seq, what: what, recordedByEvent: event))
        }
        for (e, d) in log.ingested {
            add(d["sha256"], size: d["size"], seq: e.seq, what: "the original of item #\(e.itemID ?? 0) (\(e.kind) event)", event: true)
        }
        for (k, entry) in log.proofs.sorted(by: { $0.value.event.seq < $1.value.event.seq }) {
            add(entry.details["receipt"], size: nil, seq: entry.event.seq,
                what: "the receipt of item #\(k.item) by \(k.notary) (\(entry.event.kind) event)", event: true)
        }
        for (k, entry) in log.certificates.sorted(by: { $0.value.event.seq < $1.value.event.seq }) {
            add(entry.details["sha256"], size: entry.details["size"], seq: entry.event.seq,
                what: "certificate \(k.origin) of item #\(k.item) (\(entry.event.kind) event)", event: true)
        }
        for (k, entry) in log.archived.sorted(by: { $0.value.event.seq < $1.value.event.seq }) {
            add(entry.details["sha256"], size: entry.details["size"], seq: entry.event.seq,
                what: "the \(entry.details["role"] ?? "file") archived as \(k.account):\(k.remotePath) for item #\(k.item) (\(entry.event.kind) event)",
                event: true)
        }
        for i in rows.items {
            add(i.sha256.hex, size: String(i.size), seq: log.seq(item: i.id), what: "the original of item #\(i.id) (item row)", event: false)
        }
        for p in rows.proofs {
            add(p.receipt?.hex, size: nil, seq: log.seq(item: p.itemID), what: "the receipt of item #\(p.itemID) by \(p.notary) (proof row)", event: false)
        }
        for c in rows.certificates {
            add(c.sha256.hex, size: String(c.size), seq: log.seq(item: c.itemID),
                what: "certificate \(c.origin) of item #\(c.itemID) (certificate row)", event: false)
        }
        for a in rows.archived {
            add(a.sha256.hex, size: String(a.size), seq: log.seq(item: a.itemID),
                what: "the \(a.role.rawValue) archived as \(a.account):\(a.remotePath) for item #\(a.itemID) (archive row)", event: false)
        }
        return out
    }

    /// Every difference between the events, the rows and the store objects (`objects`: what the
    /// store answered for each `expectedObjects` digest; a digest it lacks counts as missing).
    public static func check(rows: Rows, events: [CustodyEvent], objects: [SHA256Digest: StoredObject]) -> [ChainReport.Problem] {
        check(rows: rows, log: Log(events), objects: objects)
    }

    /// `check` over events already grouped (a million events are grouped once, not once per use).
    static func check(rows: Rows, log: Log, objects: [SHA256Digest: StoredObject]) -> [ChainReport.Problem] {
        var problems: [ChainReport.Problem] = []
        problems += checkItems(rows.items, log: log)
        problems += checkSources(rows.sources, log: log)
        problems += checkProofs(rows.proofs, log: log)
        problems += checkCertificates(rows.certificates, log: log)
        problems += checkArchived(rows.archived, log: log)
        problems += checkLinks(rows.links, log: log)
        for o in expectedObjects(rows: rows, log: log) {
            switch objects[o.digest] ?? .missing {
            case .missing:
                problems.append(.init(seq: o.seq, detail: "store object \(o.digest.hex), \(o.what), is missing from the store: it was deleted"))
            case .unreadable(let why):
                problems.append(.init(seq: o.seq, detail: "store object \(o.digest.hex), \(o.what), not checked: \(why)"))
            case .present(let size):
                if let want = o.size, want != size {
                    problems.append(.init(seq: o.seq, detail: "store object \(o.digest.hex), \(o.what), is \(size) bytes; \(want) are recorded"))
                }
            }
        }
        return problems.sorted { $0.seq < $1.seq }
    }

    // MARK: Each kind of row

    static func checkItems(_ items: [Item], log: Log) -> [ChainReport.Problem] {
        var problems: [ChainReport.Problem] = []
        let byID = Dictionary(items.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        for item in items {
            let mine = log.byItem[item.id] ?? []
            let at = mine.last?.event.seq ?? log.lastSeq
            guard let ingest = mine.first(where: { $0.event.is(.ingested) && $0.details["sha256"] == item.sha256.hex }) else {
                problems.append(.init(seq: at, detail: "item #\(item.id) (\(item.sha256.short)) has no ingested event for its SHA-256 "
                                      + "in the custody log: the item row was added or changed without it"))
                continue
            }
            if let size = ingest.details["size"], size != String(item.size) {
                problems.append(.init(seq: ingest.event.seq, detail: "item #\(item.id) is \(item.size) bytes in the catalog, but its "
                                      + "ingested event records \(size): the item row was changed without its event"))
            }
            if let replayed = replayState(mine.map { ($0.event, $0.details) }), replayed != item.state.rawValue {
                problems.append(.init(seq: at, detail: "item #\(item.id) is \(item.state.rawValue) in the catalog, but its custody events "
                                      + "leave it \(replayed): the item row was changed without its event"))
            }
            // Superseded (archive and share then skipped) only by its `superseded` event, and
            // never un-superseded.
            let by = mine.last(where: { $0.event.is(.superseded) })?.details["by"]
            if by != item.supersededBy.map({ String($0) }) {
                let row = item.supersededBy.map { "superseded by #\($0)" } ?? "not superseded"
                let events = by.map { "record it superseded by #\($0)" } ?? "record no superseded event"
                problems.append(.init(seq: at, detail: "item #\(item.id) is \(row) in the catalog, but its custody events \(events): "
                                      + "the item row was changed without its event"))
            }
        }
        // The other direction: an item the log records must still be in the catalog.
        for (e, d) in log.ingested where e.itemID.map({ byID[$0] == nil }) ?? false {
            problems.append(.init(seq: e.seq, detail: "ingested event records item #\(e.itemID!) (\(d["sha256"]?.prefix(8) ?? "?"), "
                                  + "\(d["name"] ?? "?")), which has no item row: the item was deleted from the catalog"))
        }
        return problems
    }

    /// Sources are never changed or deleted, and each new one has its `ingested` or `seen-again`
    /// event: the rows and the events must pair up one to one on item, path, name and rule.
    static func checkSources(_ sources: [SourceSighting], log: Log) -> [ChainReport.Problem] {
        var rowsByKey: [SourceKey: [SourceSighting]] = [:]
        for s in sources { rowsByKey[SourceKey(item: s.itemID, path: s.path, name: s.name, rule: s.rule), default: []].append(s) }
        var eventsByKey: [SourceKey: [Log.Entry]] = [:]
        for entry in log.sightings {
            guard let item = entry.event.itemID, let path = entry.details["path"] else { continue }
            let name = entry.details["name"] ?? (path as NSString).lastPathComponent
            eventsByKey[SourceKey(item: item, path: path, name: name, rule: entry.details["rule"]), default: []].append(entry)
        }
        var problems: [ChainReport.Problem] = []
        for (key, entries) in eventsByKey {
            let rows = rowsByKey[key]?.count ?? 0
            for (e, _) in entries.dropFirst(rows) {
                problems.append(.init(seq: e.seq, detail: "\(e.kind) event records source \"\(key.path)\" (name \"\(key.name)\""
                                      + (key.rule.map { ", rule \($0)" } ?? "") + ") of item #\(key.item), which has no such source row: "
                                      + "the source was deleted or renamed in the catalog"))
            }
        }
        for (key, rows) in rowsByKey {
            let recorded = eventsByKey[key]?.count ?? 0
            for s in rows.dropFirst(recorded) {
                problems.append(.init(seq: log.seq(item: key.item), detail: "source #\(s.id) of item #\(key.item) (\"\(s.path)\", name \"\(s.name)\""
                                      + (s.rule.map { ", rule \($0)" } ?? "") + ") has no ingested or seen-again event: "
                                      + "the source row was inserted or changed without it"))
            }
        }
        return problems
    }

    static func checkProofs(_ proofs: [Proof], log: Log) -> [ChainReport.Problem] {
        var problems: [ChainReport.Problem] = []
        var rowKeys = Set<ProofKey>()
        for p in proofs {
            let key = ProofKey(item: p.itemID, notary: p.notary)
            rowKeys.insert(key)
            // The newest event about this notary's proof must record the row as it stands.
            guard let entry = log.proofs[key] else {
                problems.append(.init(seq: log.seq(item: p.itemID),
                                      detail: "proof of item #\(p.itemID) by \(p.notary) is \(p.state.rawValue)"
                                      + (p.receipt.map { " with receipt \($0.short)" } ?? "")
                                      + " in the catalog, but no custody event records it so: the proof row was inserted or changed without its event"))
                continue
            }
            let (e, d) = (entry.event, entry.details)
            var differs: [String] = []
            if !e.is(.notary(p.state)) { differs.append("state \(p.state.rawValue), the event records \(e.kind)") }
            let recorded = p.custodyDetails
            for field in ["kind", "remote_id", "receipt", "tx", "error", "link"] where d[field] != recorded[field] {
                // Events from before `link` was recorded say nothing about it.
                if field == "link" && d[field] == nil { continue }
                differs.append("\(field) \(quoted(recorded[field])), the event records \(quoted(d[field]))")
            }
            if !differs.isEmpty {
                problems.append(.init(seq: e.seq, detail: "proof of item #\(p.itemID) by \(p.notary) differs from its newest event (\(e.kind)): "
                                      + "the catalog has " + differs.joined(separator: "; ")
                                      + ": the proof row was changed without its event"))
            }
        }
        for (key, entry) in log.proofs where !rowKeys.contains(key) {
            problems.append(.init(seq: entry.event.seq, detail: "\(entry.event.kind) event records the proof of item #\(key.item) by \(key.notary)"
                                  + (entry.details["receipt"].map { " (receipt \($0.prefix(8)))" } ?? "")
                                  + ", which has no proof row: the proof was deleted from the catalog"))
        }
        return problems
    }

    static func checkCertificates(_ certificates: [Certificate], log: Log) -> [ChainReport.Problem] {
        var problems: [ChainReport.Problem] = []
        var rowKeys = Set<CertificateKey>()
        for c in certificates {
            let key = CertificateKey(item: c.itemID, origin: c.origin)
            rowKeys.insert(key)
            let entry = log.certificates[key]
            if entry?.details["sha256"] != c.sha256.hex || (entry?.details["size"]).map({ $0 != String(c.size) }) == true {
                problems.append(.init(seq: entry?.event.seq ?? log.seq(item: c.itemID),
                                      detail: "certificate \(c.origin) of item #\(c.itemID) (\(c.sha256.short), \(c.size) bytes) has no custody event: "
                                      + "the certificate row was inserted or changed without it"))
            }
        }
        for (key, entry) in log.certificates where !rowKeys.contains(key) {
            problems.append(.init(seq: entry.event.seq, detail: "certificate event records certificate \(key.origin) of item #\(key.item) "
                                  + "(\(entry.details["sha256"]?.prefix(8) ?? "?")), which has no certificate row: the certificate was deleted from the catalog"))
        }
        return problems
    }

    static func checkArchived(_ archived: [ArchivedFile], log: Log) -> [ChainReport.Problem] {
        var problems: [ChainReport.Problem] = []
        var rowKeys = Set<ArchiveKey>()
        for a in archived {
            let key = ArchiveKey(item: a.itemID, account: a.account, remotePath: a.remotePath)
            rowKeys.insert(key)
            let d = log.archived[key]?.details
            let agrees = d?["sha256"] == a.sha256.hex && (d?["role"]).map { $0 == a.role.rawValue } != false
                && (d?["size"]).map { $0 == String(a.size) } != false && (d?["verified_by"]).map { $0 == a.verifiedBy } != false
            if !agrees {
                problems.append(.init(seq: log.archived[key]?.event.seq ?? log.seq(item: a.itemID),
                                      detail: "archive copy \(a.account):\(a.remotePath) of item #\(a.itemID) has no archived-file event: "
                                      + "the archive row was inserted or changed without it"))
            }
        }
        for (key, entry) in log.archived where !rowKeys.contains(key) {
            problems.append(.init(seq: entry.event.seq, detail: "archived-file event records archive copy \(key.account):\(key.remotePath) "
                                  + "of item #\(key.item), which has no archive row: the row was deleted or its remote path changed"))
        }
        return problems
    }

    static func checkLinks(_ links: [SharedLink], log: Log) -> [ChainReport.Problem] {
        var problems: [ChainReport.Problem] = []
        var rowKeys = Set<LinkKey>()
        for l in links {
            let key = LinkKey(item: l.itemID, account: l.account)
            rowKeys.insert(key)
            let d = log.links[key]?.details
            if d?["link_id"] != SharedLink.id(of: l.url) || d?["remote_path"] != l.remotePath {
                problems.append(.init(seq: log.links[key]?.event.seq ?? log.seq(item: l.itemID),
                                      detail: "share link of item #\(l.itemID) on \(l.account) (id \(SharedLink.id(of: l.url)), \(l.remotePath)) "
                                      + "has no share-link event: the link row was inserted or changed without it"))
            }
        }
        for (key, entry) in log.links where !rowKeys.contains(key) {
            problems.append(.init(seq: entry.event.seq, detail: "share-link event records the link of item #\(key.item) on \(key.account), "
                                  + "which has no link row: the link was deleted from the catalog"))
        }
        return problems
    }

    static func quoted(_ s: String?) -> String { s.map { "\"\($0)\"" } ?? "none" }
}
