import ArgumentParser
import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import Foundation

struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "One item: record, sources, media, jobs, custody events.",
        discussion: Help.reflow("""
        ITEM is an item id (`12`), a hash prefix of at least 4 hex digits (`3fa9c2`), or a path
        the content was ingested from. A path whose content changed after it was taken (a file
        still growing, or replaced) names its newest item; the earlier ones are listed with it.

        Exit codes: 0 shown · 1 no such item, or the reference is ambiguous · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Item id, hash prefix or source path.", valueName: "item"))
    var item: String

    struct Report: Encodable {
        var item: Item
        var objectPath: String
        var sources: [SourceSighting]
        var proofs: [Proof]
        var certificates: [Certificate]
        var archived: [ArchivedFile]
        var links: [SharedLink]
        var jobs: [QueuedJob]
        var custody: [CustodyEvent]
        /// Earlier versions of the same path (items it superseded), oldest first.
        var earlierVersions: [Int64]
        /// Cases the item is in, and its tags (replayed from their custody events).
        var cases: [String]
        var tags: [String]
        /// Extra digests recorded at ingest (`md5`, `sha1`, `sha512` → hex); SHA-256 is the item's.
        var digests: [String: String]
    }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let (it, earlier) = try ItemResolver.resolveNewest(item, in: home)
        let sources = try home.catalog.sources(itemID: it.id)
        let events = try home.catalog.events(itemID: it.id)
        let jobs = try home.catalog.jobs(itemID: it.id)
        let proofs = try home.catalog.proofs(itemID: it.id)
        let certificates = try home.catalog.certificates(itemID: it.id)
        let archived = try home.catalog.archivedFiles(itemID: it.id)
        let links = try home.catalog.sharedLinks(itemID: it.id)
        let objectPath = home.store.location(of: it.sha256)
        let book = try CaseCommand.book(home)
        let cases = book.cases(of: it.id)
        let tags = (book.tags[it.id] ?? []).sorted()
        let digests = DigestAlgorithm.recorded(in: events)
        if global.json {
            Output.json(Report(item: it, objectPath: objectPath, sources: sources, proofs: proofs,
                               certificates: certificates, archived: archived, links: links, jobs: jobs, custody: events,
                               earlierVersions: earlier.map(\.id), cases: cases, tags: tags,
                               digests: Dictionary(uniqueKeysWithValues: digests.map { ($0.key.rawValue, $0.value) })))
            return
        }
        Output.line("item      #\(it.id)")
        Output.line("sha256    \(it.sha256.hex)")
        for a in DigestAlgorithm.extras { if let hex = digests[a] { Output.line(a.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0) + hex) } }
        Output.line("size      \(it.size) bytes (\(Output.bytes(it.size)))")
        Output.line("state     \(it.state.rawValue)" + (it.stateReason.map { " — \(TerminalText.escape($0))" } ?? ""))
        if let by = it.supersededBy {
            Output.line("          superseded by #\(by): its path changed after it was taken; stored and notarized, "
                        + "not archived unless its archive had started")
        }
        if it.isEmpty { Output.line("          empty: the file was 0 bytes") }
        if !earlier.isEmpty {
            Output.line("earlier   " + earlier.map { "#\($0.id) (\(Output.bytes($0.size)))" }.joined(separator: ", ")
                        + ": superseded versions of this path")
        }
        Output.line("taken     \(Output.date(it.dateTaken))" + (it.media?.creationTime != nil ? " (media creation_time)" : " (file mtime)"))
        Output.line("created   \(Output.date(it.createdAt))")
        Output.line("object    \(objectPath)")
        if !cases.isEmpty { Output.line("cases     " + cases.joined(separator: ", ")) }
        if !tags.isEmpty { Output.line("tags      " + tags.joined(separator: ", ")) }
        if let m = it.media {
            Output.line("media     \(TerminalText.escape(m.plainSummary(fileName: sources.first?.name)))")
            if m.probeError == nil, let br = m.bitRate { Output.line("          bit rate \(br / 1000) kb/s") }
        } else {
            Output.line("media     (not media)")
        }
        Output.line()
        Output.line("Sources:")
        Output.table(["SEEN", "RULE", "SIZE", "MTIME", "PATH"], sources.map {
            [Output.date($0.seenAt), $0.rule ?? "-", String($0.size), Output.date($0.mtime), $0.path]
        })
        if !proofs.isEmpty {
            Output.line()
            Output.line("Proofs:")
            Output.table(["NOTARY", "KIND", "STATE", "SUBMITTED", "PROVEN AT", "REFERENCE", "RECEIPT / LINK"], proofs.map { p in
                let since = p.submittedAt.map { DurationText.format(seconds: -$0.timeIntervalSinceNow) + " ago" } ?? "-"
                let ref = p.kind == .qed ? (p.txHash.map { "tx \($0)" } ?? "report \(p.remoteID ?? "-")")
                    : "\(p.state == .pending ? "batch" : "serial") \(p.remoteID ?? "-")"
                let where_ = p.state == .failed ? (p.error ?? "") : [p.receipt.map { home.store.location(of: $0) }, p.link].compactMap { $0 }.joined(separator: "  ")
                return [p.notary, p.kind.rawValue, p.state.rawValue, since, Output.date(p.provenAt), ref, where_]
            })
        }
        if !certificates.isEmpty {
            Output.line()
            Output.line("Certificates:")
            Output.table(["ORIGIN", "SIZE", "PATH"], certificates.map {
                [$0.origin, Output.bytes($0.size), home.store.location(of: $0.sha256)]
            })
            Output.line("(write one out with: evidence cert \(it.id) -o FILE; a bundle with: evidence bundle \(it.id) -o DIR)")
        }
        if !archived.isEmpty {
            Output.line()
            Output.line("Archive:")
            Output.table(["ACCOUNT", "ROLE", "SIZE", "VERIFIED BY", "REMOTE PATH"], archived.map {
                [$0.account, $0.role.rawValue, Output.bytes($0.size), $0.verifiedBy, $0.remotePath]
            })
        }
        for l in links {
            Output.line()
            Output.line("link      \(TerminalText.escape(l.url))" + (l.expires.map { "  (expires \(Output.date($0)))" } ?? "") + (l.passwordProtected ? "  (password)" : ""))
            if let f = l.fallback { Output.line("          note: \(TerminalText.escape(f))") }
        }
        if !jobs.isEmpty {
            Output.line()
            Output.line("Jobs:")
            Output.table(["JOB", "KIND", "STATE", "ATTEMPTS", "NEXT RUN", "LAST ERROR"], jobs.map {
                ["\($0.id)", $0.kind.rawValue, $0.state.rawValue, "\($0.attempts)/\($0.maxAttempts)",
                 $0.state == .queued ? Output.date($0.nextRunAt) : "-", $0.lastError ?? ""]
            })
        }
        Output.line()
        Output.line("Custody:")
        Output.table(["#", "AT", "EVENT", "ACTOR", "HASH", "DETAILS"], events.map {
            [String($0.seq), $0.at, $0.kind, $0.actor, String($0.hash.prefix(12)), $0.details]
        })
    }
}

enum ItemResolver {
    /// `resolve`, except that a reference matching the versions of one path (every match but the
    /// newest superseded) names the newest; the others come back as its earlier versions.
    static func resolveNewest(_ reference: String, in home: EvidenceHome) throws -> (item: Item, earlier: [Item]) {
        let matches = try home.catalog.items(matching: reference).sorted { $0.id < $1.id }
        if matches.count > 1, let newest = matches.last, newest.supersededBy == nil,
           matches.dropLast().allSatisfy({ $0.supersededBy != nil }) {
            return (newest, Array(matches.dropLast()))
        }
        return (try resolve(reference, in: home), [])
    }

    /// One item for a reference, or a usage-grade error naming what matched.
    static func resolve(_ reference: String, in home: EvidenceHome) throws -> Item {
        let matches = try home.catalog.items(matching: reference)
        if matches.isEmpty {
            Output.err("no item matches \"\(TerminalText.escape(reference))\" (by id, hash prefix of 4+ hex digits, or source path)")
            throw ExitCode(1)
        }
        if matches.count > 1 {
            Output.err("\"\(TerminalText.escape(reference))\" is ambiguous: \(matches.count) items match: " +
                       matches.prefix(10).map { "#\($0.id) \($0.sha256.short)" }.joined(separator: ", "))
            throw ExitCode(1)
        }
        return matches[0]
    }
}
