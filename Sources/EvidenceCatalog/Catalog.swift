import EvidenceCore
import Foundation

/// Everything the pipeline and the CLI ask of the catalog, in one place, so that another
/// backend (PostgreSQL for several nodes) can implement the same contract.
///
/// Every write method is one transaction and appends its custody events in it.
public protocol Catalog: Sendable {
    /// Records that `record.source` was read and stored as `record.sha256`. Creates the item
    /// on first sight (state `ingested`, event `ingested`), otherwise adds the sighting to the
    /// existing item (event `seen-again`) and leaves its state alone. Idempotent for the same
    /// (path, file version): a repeat records nothing new and returns `.alreadyKnown`.
    func recordIngest(_ record: IngestRecord) throws(CatalogError) -> IngestOutcome

    /// `recordIngest` for many files in one transaction (one durable commit for a burst): the
    /// outcomes in order. A record the database refuses fails alone; an error of the whole
    /// transaction (disk, lock) throws and records none of them.
    func recordIngests(_ records: [IngestRecord]) throws(CatalogError) -> [Result<IngestOutcome, CatalogError>]

    /// Records a source that could not be taken in (event `quarantined`).
    func recordQuarantine(path: String, rule: String?, reason: String) throws(CatalogError) -> QuarantineEntry

    /// Appends an event that changes no state (e.g. `.sourceDeleting`).
    @discardableResult
    func appendEvent(itemID: Int64?, kind: CustodyEventKind, details: [String: String]) throws(CatalogError) -> CustodyEvent
    /// `appendEvent` by `actor` (a portal user, a local user: who looked at the evidence).
    @discardableResult
    func appendEvent(itemID: Int64?, kind: CustodyEventKind, actor: String, details: [String: String]) throws(CatalogError) -> CustodyEvent

    func item(id: Int64) throws(CatalogError) -> Item?
    func item(sha256: SHA256Digest) throws(CatalogError) -> Item?
    /// Items whose id equals `reference`, whose hash starts with it (≥ 4 hex chars), or that
    /// were seen at that path (absolute or as given).
    func items(matching reference: String) throws(CatalogError) -> [Item]
    func allItems() throws(CatalogError) -> [Item]
    /// Search (the auditor portal), each newest first and at most `limit` items: by hash prefix
    /// (lowercase hex, 4…64 digits), by a substring of a source's file name (ASCII case-insensitive),
    /// and by ingest time in `[from, to)`.
    func items(sha256Prefix: String, limit: Int) throws(CatalogError) -> [Item]
    func items(nameContaining text: String, limit: Int) throws(CatalogError) -> [Item]
    func items(ingestedFrom from: Date, to: Date, limit: Int) throws(CatalogError) -> [Item]
    /// The most recently ingested items, newest first.
    func recentItems(limit: Int) throws(CatalogError) -> [Item]
    /// Items in `state`, least recently updated first (failed items for the status page).
    func items(state: ItemState, limit: Int) throws(CatalogError) -> [Item]
    /// The item already ingested from exactly this version of this path, if any.
    func itemForSource(path: String, device: UInt64, inode: UInt64, size: Int64, mtimeNanos: Int64) throws(CatalogError) -> Item?

    func sources(itemID: Int64) throws(CatalogError) -> [SourceSighting]
    /// Every source sighting, by id, for the custody cross-check (each must have its
    /// `ingested`/`seen-again` event, and each such event its row).
    func allSources() throws(CatalogError) -> [SourceSighting]
    func events(itemID: Int64) throws(CatalogError) -> [CustodyEvent]
    func allEvents() throws(CatalogError) -> [CustodyEvent]
    /// The (seq, hash) of every event up to `seq`, oldest first: the custody tree's leaves
    /// (RFC 9162), without reading the events' bodies.
    func eventHashes(through seq: Int64) throws(CatalogError) -> [(seq: Int64, hash: String)]
    /// Every event of these kinds, oldest first (cases and tags are replayed from theirs).
    func events(kinds: [CustodyEventKind]) throws(CatalogError) -> [CustodyEvent]
    /// The newest custody event (the head), nil for an empty log.
    func lastEvent() throws(CatalogError) -> CustodyEvent?
    func quarantine(includeResolved: Bool) throws(CatalogError) -> [QuarantineEntry]
    func summary() throws(CatalogError) -> CatalogSummary
    /// Items still on their way (not done, failed or quarantined) created at or before `cutoff`, oldest first.
    func pendingItems(olderThan cutoff: Date?) throws(CatalogError) -> [Item]

    /// Recomputes the custody chain and compares with the stored hashes and the head anchor.
    func verifyChain() throws(CatalogError) -> ChainReport
    /// `verifyChain()` over events already read (`allEvents()`), for a caller that checks them further.
    func verifyChain(events: [CustodyEvent]) -> ChainReport
    /// What the database itself finds wrong with its storage (SQLite's quick_check, PostgreSQL's
    /// page checksum failures); empty when sound.
    func integrityProblems() throws(CatalogError) -> [String]
    /// Where the catalog is, for messages: the SQLite file, or postgres://user@host:port/db.
    var location: String { get }
    /// The identity of the store this catalog describes: `id` is recorded the first time; the
    /// recorded one is returned (another id means another store: objects this catalog names
    /// would not be there).
    func claimStoreID(_ id: String) throws(CatalogError) -> String
    /// Makes the head anchor current (it is otherwise refreshed within a fraction of a second).
    func flushHead() throws(CatalogError)

    // MARK: Proofs and certificates

    func proofs(itemID: Int64) throws(CatalogError) -> [Proof]
    func allProofs() throws(CatalogError) -> [Proof]
    /// One page of `notary`'s proofs in `state`, by item id, of items after `afterItem`: at most
    /// `limit`. A pass over a large catalog (renewal's) takes them page by page, in constant memory.
    func proofs(notary: String, state: Proof.State, afterItem: Int64, limit: Int) throws(CatalogError) -> [Proof]
    /// The proofs of `notary` whose remote id is `remoteID`, by item (a time-stamp batch's members).
    func proofs(notary: String, remoteID: String) throws(CatalogError) -> [Proof]
    /// Stores what a notary said (insert or replace for the item and notary) with a custody event
    /// `notary-<state>`, then asks `decide` (the item's lifecycle) with the item's state and the
    /// notaries whose proofs are now confirmed, and applies the transition it returns, all in one
    /// transaction. The catalog decides nothing itself. Returns the item afterwards.
    @discardableResult
    func saveProof(_ proof: Proof, then decide: @escaping @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?)
        throws(CatalogError) -> Item
    /// `saveProof`, in the same transaction only if the item's proof of that notary is now
    /// `state` under `remoteID` (a time-stamp batch's member still waiting for that batch) and,
    /// when `receipt` is given, holds that receipt (a renewal of the record it read): otherwise
    /// nothing is written and nil is returned.
    @discardableResult
    func saveProof(_ proof: Proof, ifCurrent state: Proof.State, remoteID: String, receipt: SHA256Digest?,
                   then decide: @escaping @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?)
        throws(CatalogError) -> Item?
    /// `saveProof(_:ifCurrent:remoteID:receipt:then:)` (receipt nil) for several items in one
    /// transaction, each with its own `decide`: the members of a time-stamp window. A proof is
    /// saved only where its item's proof of that notary is still `state` under `remoteID`.
    /// Returns the items whose proofs were saved, by id. An error saves none of them.
    func saveProofs(_ saves: [ProofSave], ifCurrent state: Proof.State, remoteID: String) throws(CatalogError) -> [Int64: Item]
    func certificates(itemID: Int64) throws(CatalogError) -> [Certificate]
    /// Every certificate, by item and origin.
    func allCertificates() throws(CatalogError) -> [Certificate]
    /// Records a certificate kept in the store (insert or replace per item and origin), event `certificate`.
    func saveCertificate(_ certificate: Certificate) throws(CatalogError)

    // MARK: Archive

    func archivedFiles(itemID: Int64) throws(CatalogError) -> [ArchivedFile]
    /// Every verified remote copy, by item and remote path.
    func allArchivedFiles() throws(CatalogError) -> [ArchivedFile]
    /// Records verified remote copies (insert or replace per item, account and path), an event
    /// `archived-file` each, in one transaction.
    func saveArchivedFiles(_ files: [ArchivedFile]) throws(CatalogError)
    func sharedLinks(itemID: Int64) throws(CatalogError) -> [SharedLink]
    func allSharedLinks() throws(CatalogError) -> [SharedLink]
    /// Records the item's link (insert or replace per item and account), event `shared`.
    func saveSharedLink(_ link: SharedLink) throws(CatalogError)

    // MARK: QueuedJob queue

    /// Creates the job unless one with the same `dedupeKey` exists (then returns that one).
    func enqueue(_ spec: JobSpec, itemID: Int64?, dedupeKey: String) throws(CatalogError) -> QueuedJob
    /// Leases the most overdue runnable job of these kinds (queued and due, or running with
    /// an expired lease), counting an attempt. Nil when none is due.
    func claimJob(kinds: [JobKind], owner: String, lease: Double, now: Date) throws(CatalogError) -> QueuedJob?
    /// Claims one given job, whatever its due time, when it is queued, failed (a manual retry)
    /// or held by an expired lease; nil when another runner holds it or it is done.
    func claimJob(id: Int64, owner: String, lease: Double, now: Date) throws(CatalogError) -> QueuedJob?
    func completeJob(_ id: Int64, owner: String, transition: JobTransition?) throws(CatalogError)
    /// `completeJob`, then `claimJob(kinds:owner:lease:now:)` with `next` in the same transaction:
    /// a worker done with one job takes its next one without a transaction of its own (the
    /// claim shares the completion's durable commit). The claim is the transaction's last part
    /// and cannot undo the completion: when it fails, the completion still commits and nil is
    /// returned (the worker claims again on its own). A refused completion (the lease was
    /// lost) throws and claims nothing.
    func completeJob(_ id: Int64, owner: String, transition: JobTransition?, thenClaim next: NextClaim) throws(CatalogError) -> QueuedJob?
    @discardableResult
    func failJob(_ id: Int64, owner: String, error: String, retryAt: Date?, onGiveUp: JobTransition?) throws(CatalogError) -> QueuedJob
    func releaseJob(_ id: Int64, owner: String, runAt: Date) throws(CatalogError)
    /// `releaseJob` (no attempt counted), with `note` as the job's last error: why it waits
    /// (its account's or notary's credentials were refused, and it is paused).
    func holdJob(_ id: Int64, owner: String, runAt: Date, note: String) throws(CatalogError)
    /// Makes every queued job of these kinds due at `now` (an account or notary resumed: what
    /// waited for it runs now, not at its held time); how many.
    @discardableResult
    func wakeQueuedJobs(kinds: [JobKind], now: Date) throws(CatalogError) -> Int
    /// Makes the item's queued jobs due at `now` (`evidence retry ITEM`: what waits in back-off
    /// runs now); how many.
    func wakeQueuedJobs(itemID: Int64, now: Date) throws(CatalogError) -> Int
    /// `wakeQueuedJobs(itemID:now:)` for jobs of these kinds only.
    func wakeQueuedJobs(itemID: Int64, kinds: [JobKind], now: Date) throws(CatalogError) -> Int
    /// Marks done, in one transaction, those of these jobs that are queued: their work was done
    /// for them (a stamp job saved the evidence records its members' notarize jobs wait for), so
    /// running them would only find it done. Running, done and failed jobs are left as they are;
    /// how many were finished.
    @discardableResult
    func finishQueuedJobs(ids: [Int64]) throws(CatalogError) -> Int
    /// Facts kept about the catalog's service, by key (`meta`): every entry whose key starts
    /// with `prefix`.
    func metaEntries(prefix: String) throws(CatalogError) -> [String: String]
    /// Sets (`value`) or removes (nil) one `meta` entry.
    func setMeta(_ key: String, _ value: String?) throws(CatalogError)
    /// Who holds the leases of running jobs.
    func leaseOwners() throws(CatalogError) -> [String]
    /// Returns the running jobs these owners hold to the queue (their processes are gone); how many.
    func releaseLeases(owners: [String]) throws(CatalogError) -> Int
    /// Moves the job's lease end to `now + lease` while `owner` still holds it; false when it
    /// does not (the lease expired and another runner took the job, or it finished).
    func renewLease(_ id: Int64, owner: String, lease: Double, now: Date) throws(CatalogError) -> Bool
    /// When the next job of these kinds becomes runnable: the earliest due time of a queued job
    /// (and, where other hosts hold leases, the earliest lease end of a running one).
    func nextJobDue(kinds: [JobKind]) throws(CatalogError) -> Date?
    /// Wakes idle workers when a job becomes runnable anywhere (PostgreSQL's LISTEN/NOTIFY); nil
    /// when the backend cannot tell, and workers poll.
    var jobSignal: JobSignal? { get }
    func jobs(itemID: Int64) throws(CatalogError) -> [QueuedJob]
    func troubledJobs(limit: Int) throws(CatalogError) -> [QueuedJob]
    func jobCounts() throws(CatalogError) -> [String: Int]
    /// Jobs per kind and state (`queued`, `running`, `done`, `failed`): kind → state → count.
    func jobCountsByKind() throws(CatalogError) -> [String: [String: Int]]
    /// Re-queues failed jobs (all, or one item's) with fresh attempts and a `retry` event each,
    /// then asks `decide` (the item's lifecycle) for each of their items with its state and the
    /// state it went to `failed` from (nil when none is recorded), and applies the transition it
    /// returns, all in one transaction. The catalog decides nothing itself. Returns the number of
    /// jobs re-queued.
    func retryFailed(itemID: Int64?, then decide: @escaping @Sendable (_ state: ItemState, _ failedFrom: ItemState?) -> JobTransition?)
        throws(CatalogError) -> Int
}

/// One proof to save with the item's lifecycle (`saveProofs`).
public struct ProofSave: Sendable {
    public var proof: Proof
    public var decide: @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?
    public init(_ proof: Proof, then decide: @escaping @Sendable (_ state: ItemState, _ confirmed: Set<String>) -> JobTransition?) {
        self.proof = proof; self.decide = decide
    }

    /// `saveProofs`' loop, for either catalog inside its transaction: the items of `saves` whose
    /// proofs `save` saved (it returns nil for a member no longer waiting), by id.
    static func each(_ saves: [ProofSave], _ save: (ProofSave) throws -> Item?) rethrows -> [Int64: Item] {
        var saved: [Int64: Item] = [:]
        for s in saves { if let item = try save(s) { saved[s.proof.itemID] = item } }
        return saved
    }
}

/// What a worker claims next, with the completion of its job (`completeJob(_:owner:transition:thenClaim:)`).
public struct NextClaim: Sendable {
    public var kinds: [JobKind]
    public var lease: Double
    public var now: Date
    public init(kinds: [JobKind], lease: Double, now: Date) { self.kinds = kinds; self.lease = lease; self.now = now }
}

extension Catalog {
    /// Records one verified remote copy (`saveArchivedFiles`).
    public func saveArchivedFile(_ file: ArchivedFile) throws(CatalogError) { try saveArchivedFiles([file]) }

    public var jobSignal: JobSignal? { nil }
}

/// What the pipeline learned about one source it stored.
public struct IngestRecord: Sendable {
    public var sha256: SHA256Digest
    public var size: Int64
    public var path: String
    public var rule: String?
    public var device: UInt64
    public var inode: UInt64
    public var mtimeNanos: Int64
    public var media: MediaInfo?
    public var newObject: Bool
    public var actor: String
    /// Jobs created with a new item (e.g. verify), in the same transaction.
    public var jobsForNewItem: [JobSpec]
    /// Jobs created for every new sighting (e.g. the rule's after-action on this source).
    public var jobsForNewSource: [JobSpec]
    /// Jobs created for a new sighting of content already in the catalog (a duplicate, maybe
    /// under another rule), per source like `jobsForNewSource`.
    public var jobsForKnownItem: [JobSpec]
    /// Which earlier items of the same path and rule new content supersedes.
    public var supersedes: Supersedes
    /// Extra digests of the content (`md5`, `sha1`, `sha512` → lowercase hex), recorded in the
    /// sighting's custody event.
    public var digests: [String: String]

    /// Earlier items at a path whose content changed: which of them a new item supersedes.
    public enum Supersedes: Sendable {
        /// None (`evidence ingest` by hand: no rule watches the path).
        case none
        /// Only those not yet done: under a rule that deletes or moves its files once done, a
        /// done item's file is gone by our own hand, and a new file under the same name (a
        /// camera counting its clips from 1 again) is new evidence, not a later version.
        case unfinished
        /// Every one (a rule that keeps its files: the path's content was replaced or grew).
        case all
    }

    public init(sha256: SHA256Digest, size: Int64, path: String, rule: String?, device: UInt64, inode: UInt64,
                mtimeNanos: Int64, media: MediaInfo?, newObject: Bool, actor: String,
                jobsForNewItem: [JobSpec] = [], jobsForNewSource: [JobSpec] = [], jobsForKnownItem: [JobSpec] = [],
                supersedes: Supersedes = .none, digests: [String: String] = [:]) {
        self.sha256 = sha256; self.size = size; self.path = path; self.rule = rule; self.device = device
        self.inode = inode; self.mtimeNanos = mtimeNanos; self.media = media; self.newObject = newObject; self.actor = actor
        self.jobsForNewItem = jobsForNewItem; self.jobsForNewSource = jobsForNewSource; self.jobsForKnownItem = jobsForKnownItem
        self.supersedes = supersedes
        self.digests = digests
    }
}

extension IngestRecord {
    /// A sighting's custody event: `ingested` for new content, `seen-again` for known content,
    /// with the details both catalogs record.
    func sightingEvent(created: Bool) -> (kind: CustodyEventKind, details: [String: String]) {
        let name = (path as NSString).lastPathComponent
        var details = ["path": path, "name": name, "sha256": sha256.hex, "size": String(size)]
        if let rule { details["rule"] = rule }
        if size == 0 { details["empty"] = "true" }
        for a in DigestAlgorithm.extras { if let hex = digests[a.rawValue] { details[a.rawValue] = hex } }
        guard created else { return (.seenAgain, details) }
        details["store"] = newObject ? "new object" : "object already present"
        if let m = media { details["media"] = m.summary }
        return (.ingested, details)
    }

    /// The `superseded` event of an earlier item `successor` (this record's new item) supersedes.
    func supersededEvent(successor: Int64) -> [String: String] {
        var details = ["by": String(successor), "path": path, "sha256": sha256.hex]
        if let rule { details["rule"] = rule }
        return details
    }

    /// The jobs a sighting creates, with their dedupe keys: per source (an after-action is told
    /// its source; a parked one is due at once when the item is done already), then for new
    /// content the item's first jobs.
    func sightingJobs(created: Bool, itemID: Int64, itemIsDone: Bool, source: SourceRef) -> [(spec: JobSpec, dedupeKey: String)] {
        var out: [(JobSpec, String)] = []
        for spec in jobsForNewSource + (created ? [] : jobsForKnownItem) {
            var sp = spec
            if spec.isParked && itemIsDone { sp.runAt = nil }
            if case .afterAction(let rule, let action, _) = spec.payload {
                sp.payload = .afterAction(rule: rule, action: action, source: source)
            }
            out.append((sp, "\(spec.kind.rawValue):source:\(source.id)"))
        }
        if created { out += jobsForNewItem.map { ($0, $0.itemKey(itemID)) } }
        return out
    }
}

public enum IngestOutcome: Sendable, Equatable {
    case created(Item)
    case duplicate(Item)
    case alreadyKnown(Item)

    public var item: Item {
        switch self { case .created(let i), .duplicate(let i), .alreadyKnown(let i): return i }
    }
    public var label: String {
        switch self { case .created: return "stored"; case .duplicate: return "duplicate"; case .alreadyKnown: return "already ingested" }
    }
}

public struct ChainReport: Sendable, Codable, Equatable {
    public struct Problem: Sendable, Codable, Equatable, CustomStringConvertible {
        public var seq: Int64
        public var detail: String
        public var description: String { "custody event #\(seq): \(detail)" }
        public init(seq: Int64, detail: String) { self.seq = seq; self.detail = detail }
    }
    public var events: Int
    public var headHash: String
    public var problems: [Problem]
    public var ok: Bool { problems.isEmpty }
}

public enum CatalogError: Error, CustomStringConvertible, Sendable {
    case open(path: String, detail: String)
    case locked(path: String)
    case database(path: String, detail: String)
    case notFound(String)
    case appendOnly(path: String)
    /// A coded column (a state, a kind, a role) holds a value this version does not know: a
    /// catalog edited by hand or written by a newer version. `row` names the row in its table.
    case unknownValue(table: String, row: String, column: String, value: String)

    public var description: String {
        switch self {
        case .open(let p, let d): return "\(p): cannot open catalog: \(d)"
        case .locked(let p): return "\(p): catalog is locked by another process (busy for too long); try again"
        case .database(let p, let d): return "\(p): catalog error: \(d)"
        case .notFound(let what): return "not found: \(what)"
        case .appendOnly(let p): return "\(p): the custody log is append-only"
        case .unknownValue(let table, let row, let column, let value):
            return "\(table) \(row) has the unknown \(column) \"\(value.prefix(80))\""
        }
    }
}

extension Proof {
    /// What a `notary-<state>` custody event records of the proof, the same for both catalogs:
    /// notary, kind, and remote id, receipt, transaction and error when set. `link` (the
    /// explorer or TSA URL) is always recorded, "" for none, so that a link set or changed in
    /// the row later shows; events written before it was recorded have no `link` key.
    public var custodyDetails: [String: String] {
        var details = ["notary": notary, "kind": kind.rawValue, "link": link ?? ""]
        if let r = remoteID { details["remote_id"] = r }
        if let r = receipt { details["receipt"] = r.hex }
        if let t = txHash { details["tx"] = t }
        if let e = error { details["error"] = e }
        return details
    }
}
