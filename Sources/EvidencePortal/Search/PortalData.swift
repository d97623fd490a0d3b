import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import Foundation

/// One search hit: the item and the file names it was ingested under.
public struct SearchResult: Sendable, Equatable {
    public var item: Item
    public var names: [String]
}

/// Everything the item page shows.
public struct ItemDetails: Sendable {
    public var item: Item
    public var sources: [SourceSighting]
    public var proofs: [Proof]
    public var certificates: [Certificate]
    public var archived: [ArchivedFile]
    public var links: [SharedLink]
    public var jobs: [QueuedJob]
    public var events: [CustodyEvent]
    public var cases: [String] = []
    public var tags: [String] = []
    public var timezone: LocalTime = .utc
}

/// One page of the item list.
public struct ListPage: Sendable {
    public var results: [SearchResult]
    public var total: Int
    public var page: Int
    public var pages: Int
    /// The text search found more than it reads (`PortalData.searchCap`): narrow it.
    public var capped: Bool
}

/// Everything the status page shows.
public struct StatusReport: Sendable {
    public struct Stuck: Sendable {
        public var item: Item
        public var source: String?
        public var why: String
    }
    public var summary: CatalogSummary
    public var jobCounts: [String: Int]
    public var failed: [Stuck]
    public var stuck: [Stuck]
    public var stuckAfter: Double
    public var troubledJobs: [QueuedJob]
    public var quarantine: [QuarantineEntry]
    /// Accounts and notaries whose credentials were refused (their work waits).
    public var paused: [CredentialPause] = []
    public var generatedAt: Date
}

/// Reads what the pages show from the catalog. Reads only: nothing here writes.
public struct PortalData: Sendable {
    public let home: EvidenceHome
    /// At most this many rows per search or list.
    public var limit: Int

    public var timezone: LocalTime
    /// Items per page of the list.
    public var pageSize: Int

    public init(home: EvidenceHome, limit: Int = 100, timezone: LocalTime = .utc, pageSize: Int = ListFilter.pageSize) {
        self.home = home
        self.limit = limit
        self.timezone = timezone
        self.pageSize = max(1, pageSize)
    }

    /// The most hits each reading of a text search reads before filtering and paging.
    public static let searchCap = 10_000

    /// The items the query and the filters select, newest first, one page of them.
    public func list(_ q: SearchQuery, _ f: ListFilter) throws -> ListPage {
        let c = home.catalog
        var items: [Item]
        var capped = false
        if q.isEmpty {
            items = try c.allItems()
        } else {
            items = []
            let cap = Self.searchCap
            if let id = q.itemID, let it = try c.item(id: id) { items.append(it) }
            for hits in [try q.hashPrefix.map { try c.items(sha256Prefix: $0, limit: cap + 1) },
                         try q.day.map { try c.items(ingestedFrom: $0.start, to: $0.end, limit: cap + 1) },
                         try q.nameContains.map { try c.items(nameContaining: $0, limit: cap + 1) }].compactMap({ $0 }) {
                if hits.count > cap { capped = true }
                items += hits.prefix(cap)
            }
        }
        var seen = Set<Int64>()
        items = items.filter { seen.insert($0.id).inserted }
        if let rule = f.rule {
            var ruled = Set<Int64>()
            for s in try c.allSources() where s.rule == rule { ruled.insert(s.itemID) }
            items = items.filter { ruled.contains($0.id) }
        }
        if let state = f.state {
            items = items.filter { state == CatalogSummary.superseded ? $0.supersededBy != nil : $0.state.rawValue == state && $0.supersededBy == nil }
        }
        if f.caseName != nil || f.tag != nil {
            let book = CaseBook(events: try c.events(kinds: CaseBook.kinds))
            if let name = f.caseName { items = items.filter { book.cases[name]?.added[$0.id] != nil } }
            if let tag = f.tag { items = items.filter { book.tags[$0.id]?.contains(tag) == true } }
        }
        if f.from != nil || f.to != nil {
            items = items.filter { item in
                let t = item.dateTaken ?? item.createdAt
                return (f.from.map { t >= $0 } ?? true) && (f.to.map { t < $0 } ?? true)
            }
        }
        items.sort { $0.id > $1.id }
        let size = pageSize
        let pages = max(1, (items.count + size - 1) / size)
        let page = min(f.page, pages)
        let shown = items.dropFirst((page - 1) * size).prefix(size)
        let results = try shown.map { item in
            var names: [String] = []
            for s in try c.sources(itemID: item.id) where !names.contains(s.name) { names.append(s.name) }
            return SearchResult(item: item, names: names)
        }
        return ListPage(results: results, total: items.count, page: page, pages: pages, capped: capped)
    }

    /// Every case, for /cases and the filter's choices.
    public func cases() throws -> CaseBook {
        CaseBook(events: try home.catalog.events(kinds: CaseBook.kinds))
    }

    /// Hits for every reading of the query, newest first; `truncated` when more than `limit` matched.
    public func search(_ q: SearchQuery) throws -> (results: [SearchResult], truncated: Bool) {
        let c = home.catalog
        var items: [Item] = []
        if q.isEmpty {
            items = try c.recentItems(limit: limit + 1)
        } else {
            if let id = q.itemID, let it = try c.item(id: id) { items.append(it) }
            if let h = q.hashPrefix { items += try c.items(sha256Prefix: h, limit: limit + 1) }
            if let d = q.day { items += try c.items(ingestedFrom: d.start, to: d.end, limit: limit + 1) }
            if let n = q.nameContains { items += try c.items(nameContaining: n, limit: limit + 1) }
        }
        var seen = Set<Int64>()
        items = items.filter { seen.insert($0.id).inserted }.sorted { $0.id > $1.id }
        let truncated = items.count > limit
        let shown = items.prefix(limit)
        let results = try shown.map { item in
            var names: [String] = []
            for s in try c.sources(itemID: item.id) where !names.contains(s.name) { names.append(s.name) }
            return SearchResult(item: item, names: names)
        }
        return (results, truncated)
    }

    public func details(itemID: Int64) throws -> ItemDetails? {
        let c = home.catalog
        guard let item = try c.item(id: itemID) else { return nil }
        let book = try cases()
        return ItemDetails(item: item, sources: try c.sources(itemID: itemID), proofs: try c.proofs(itemID: itemID),
                           certificates: try c.certificates(itemID: itemID), archived: try c.archivedFiles(itemID: itemID),
                           links: try c.sharedLinks(itemID: itemID), jobs: try c.jobs(itemID: itemID),
                           events: try c.events(itemID: itemID), cases: book.cases(of: itemID),
                           tags: (book.tags[itemID] ?? []).sorted(), timezone: timezone)
    }

    /// `stuckAfter`: items on their way for at least this many seconds are listed as stuck.
    public func status(stuckAfter: Double, now: Date = Date()) throws -> StatusReport {
        let c = home.catalog
        func why(_ item: Item) throws -> StatusReport.Stuck {
            let jobs = try c.jobs(itemID: item.id)
            let reason = jobs.filter { $0.state != .done }.compactMap(\.lastError).last
                ?? item.stateReason
                ?? jobs.first { $0.state == .queued || $0.state == .running }.map { "waiting for its \($0.kind) job (\($0.state.rawValue), attempt \($0.attempts)/\($0.maxAttempts))" }
                ?? "no job queued for it"
            return .init(item: item, source: try c.sources(itemID: item.id).first?.path, why: reason)
        }
        let pending = try c.pendingItems(olderThan: now.addingTimeInterval(-stuckAfter))
        return StatusReport(
            summary: try c.summary(), jobCounts: try c.jobCounts(),
            failed: try c.items(state: .failed, limit: limit).map(why),
            stuck: try pending.prefix(limit).map(why), stuckAfter: stuckAfter,
            troubledJobs: try c.troubledJobs(limit: limit),
            quarantine: Array(try c.quarantine(includeResolved: false).suffix(limit)),
            paused: try Pauses.all(in: c).values.sorted { $0.scope < $1.scope },
            generatedAt: now)
    }
}
