import ArgumentParser
import EvidenceCore
import EvidencePipeline
import Foundation

struct CaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "case",
        abstract: "Cases: named sets of items for an investigation or a disclosure.",
        discussion: Help.reflow("""
        A case groups items; `evidence disclose CASE -o DIR` writes its disclosure package. Every
        change is a custody event (case-opened, case-added, case-removed, by the local user), and
        the custody log is the cases' only record: `case list` and `case show` replay it.

          evidence case create 2026-0412 --title "Riverside stop, 12 April"
          evidence case add 2026-0412 14 15 3fa9c2
          evidence case add 2026-0412 --rule bodycam \\
              --since 2026-04-12T14:00:00Z --until 2026-04-12T16:00:00Z
          evidence case add 2026-0412 --search riverside
          evidence case show 2026-0412 --json

        Exit codes: 0 done · 1 no such case or item, or the catalog refused · 2 usage error.
        """),
        subcommands: [CaseList.self, CaseCreate.self, CaseAdd.self, CaseRemove.self, CaseShow.self],
        defaultSubcommand: CaseList.self
    )

    static func actor() -> String { "cli:\(ProcessInfo.processInfo.userName)" }

    static func book(_ home: EvidenceHome) throws -> CaseBook {
        CaseBook(events: try home.catalog.events(kinds: CaseBook.kinds))
    }

    static func existing(_ name: String, in book: CaseBook) throws -> CaseBook.Case {
        guard let c = book.cases[name] else {
            let known = book.order.isEmpty ? "no case exists yet" : "cases: " + book.order.prefix(10).joined(separator: ", ")
            Output.err("no case \"\(TerminalText.escape(name))\" (\(known)); open one with: evidence case create \(TerminalText.escape(name))")
            throw ExitCode(1)
        }
        return c
    }

    static func validName(_ name: String, what: String) throws {
        if let problem = CaseBook.nameProblem(name) {
            throw ValidationError("\(what) \"\(name)\" \(problem)")
        }
    }
}

struct CaseList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Every case: items, opened when and by whom.",
        discussion: "Exit codes: 0 listed · 1 the catalog could not be read.")

    @OptionGroup var global: GlobalOptions

    struct Row: Encodable { var name: String; var title: String?; var items: Int; var openedAt: String; var openedBy: String }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let book = try CaseCommand.book(home)
        let rows = book.order.compactMap { book.cases[$0] }.map {
            Row(name: $0.name, title: $0.title, items: $0.items.count, openedAt: $0.openedAt, openedBy: $0.openedBy)
        }
        if global.json { Output.json(rows); return }
        if rows.isEmpty { Output.line("no cases yet: evidence case create NAME"); return }
        Output.table(["CASE", "ITEMS", "OPENED", "BY", "TITLE"], rows.map {
            [$0.name, "\($0.items)", $0.openedAt, $0.openedBy, TerminalText.escape($0.title ?? "")]
        })
    }
}

struct CaseCreate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Open a case (a custody event case-opened).",
        discussion: "Names: letters, digits, '.', '_', '-' (64 at most). Exit codes: 0 opened · 1 it exists · 2 usage error.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The case's name (e.g. its reference number).", valueName: "name")) var name: String
    @Option(help: ArgumentHelp("A title for people (printed on the disclosure index).", valueName: "text")) var title: String?

    func validate() throws {
        try CaseCommand.validName(name, what: "case name")
        // The same check the package's verifier makes: a title it would refuse is refused here.
        if let t = title, let p = CertificateLabels.lineProblem(t) { throw ValidationError("--title \(p)") }
    }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let book = try CaseCommand.book(home)
        if book.cases[name] != nil {
            Output.err("case \"\(name)\" exists already (evidence case show \(name))")
            throw ExitCode(1)
        }
        var details = ["case": name]
        if let title { details["title"] = title }
        let e = try home.catalog.appendEvent(itemID: nil, kind: .caseOpened, actor: CaseCommand.actor(), details: details)
        try home.catalog.flushHead()
        if global.json {
            Output.json(CaseList.Row(name: name, title: title, items: 0, openedAt: e.at, openedBy: e.actor))
        } else if !global.quiet {
            Output.line("opened case \(name) (custody event #\(e.seq)); add items with: evidence case add \(name) ITEM…")
        }
    }
}

struct CaseAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add items to a case: by reference, or every item of a rule, a time range or a search.",
        discussion: Help.reflow("""
        Items are named by id, hash prefix or source path, or chosen by --rule (taken in by that
        rule), --since/--until (taken at, or when no time taken is known, ingested within
        [since, until); ISO 8601, a date alone means its midnight UTC) and --search (file name
        contains the text, case-insensitive); the filters combine. Items already in the case
        are left as they are. Each item added is one custody event case-added.

        Exit codes: 0 done (also when nothing new was added) · 1 no such case or item · 2 usage error.
        """))

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The case.", valueName: "case")) var name: String
    @Argument(help: ArgumentHelp("Items: id, hash prefix or source path.", valueName: "item")) var items: [String] = []
    @Option(help: ArgumentHelp("Every item taken in by this rule.", valueName: "rule")) var rule: String?
    @Option(help: ArgumentHelp("Taken (or ingested) at or after this time.", valueName: "time")) var since: DateArgument?
    @Option(help: ArgumentHelp("Taken (or ingested) before this time.", valueName: "time")) var until: DateArgument?
    @Option(help: ArgumentHelp("File name contains this text.", valueName: "text")) var search: String?

    var filtered: Bool { rule != nil || since != nil || until != nil || search != nil }

    func validate() throws {
        if items.isEmpty && !filtered { throw ValidationError("name items, or choose them with --rule, --since/--until or --search") }
        if !items.isEmpty && filtered { throw ValidationError("name items, or use --rule/--since/--until/--search, not both") }
        if let s = since, let u = until, s.date >= u.date { throw ValidationError("--since must be before --until") }
    }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let book = try CaseCommand.book(home)
        let c = try CaseCommand.existing(name, in: book)
        var chosen: [Item] = []
        var how: String
        if filtered {
            chosen = try CaseSelection.select(home: home, rule: rule, since: since?.date, until: until?.date, search: search)
            how = [rule.map { "rule \($0)" }, since.map { "since \($0.description)" }, until.map { "until \($0.description)" },
                   search.map { "search \($0)" }].compactMap { $0 }.joined(separator: ", ")
        } else {
            for ref in items { chosen.append(try ItemResolver.resolve(ref, in: home)) }
            how = "named"
        }
        var added: [Int64] = []
        var seen = Set<Int64>()
        for item in chosen where c.added[item.id] == nil && seen.insert(item.id).inserted {
            try home.catalog.appendEvent(itemID: item.id, kind: .caseAdded, actor: CaseCommand.actor(),
                                         details: ["case": name, "how": how])
            added.append(item.id)
        }
        try home.catalog.flushHead()
        struct Answer: Encodable { var `case`: String; var added: [Int64]; var already: Int; var items: Int }
        let answer = Answer(case: name, added: added, already: Set(chosen.map(\.id)).count - added.count, items: c.items.count + added.count)
        if global.json { Output.json(answer); return }
        if global.quiet { return }
        if chosen.isEmpty {
            Output.line("no item matches (\(how)): case \(name) unchanged")
        } else {
            Output.line("case \(name): added \(added.count) item(s)" + (added.isEmpty ? "" : " (" + added.map { "#\($0)" }.joined(separator: ", ") + ")")
                        + (answer.already > 0 ? ", \(answer.already) already in it" : "") + "; \(answer.items) in all")
        }
    }
}

struct CaseRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Take items out of a case (custody event case-removed with the reason); the items stay.",
        discussion: "Exit codes: 0 done · 1 no such case or item, or the item is not in the case · 2 usage error.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The case.", valueName: "case")) var name: String
    @Argument(help: ArgumentHelp("Items: id, hash prefix or source path.", valueName: "item")) var items: [String]
    @Option(help: ArgumentHelp("Why (recorded in the custody log).", valueName: "text")) var reason: String

    func validate() throws {
        if reason.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--reason must say why") }
    }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let c = try CaseCommand.existing(name, in: try CaseCommand.book(home))
        var resolved: [Item] = []
        for ref in items {
            let item = try ItemResolver.resolve(ref, in: home)
            guard c.added[item.id] != nil else {
                Output.err("item #\(item.id) is not in case \(name)")
                throw ExitCode(1)
            }
            resolved.append(item)
        }
        for item in resolved {
            try home.catalog.appendEvent(itemID: item.id, kind: .caseRemoved, actor: CaseCommand.actor(),
                                         details: ["case": name, "reason": reason])
        }
        try home.catalog.flushHead()
        if global.json {
            struct Answer: Encodable { var `case`: String; var removed: [Int64] }
            Output.json(Answer(case: name, removed: resolved.map(\.id)))
        } else if !global.quiet {
            Output.line("case \(name): removed " + resolved.map { "#\($0.id)" }.joined(separator: ", "))
        }
    }
}

struct CaseShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "A case's items: state, file, SHA-256, tags, when added.",
        discussion: "Exit codes: 0 shown · 1 no such case.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The case.", valueName: "case")) var name: String

    struct Entry: Encodable {
        var id: Int64; var state: String; var fileName: String; var sha256: String; var size: Int64
        var dateTaken: Date?; var addedAt: String; var tags: [String]; var supersededBy: Int64?
    }
    struct Answer: Encodable { var name: String; var title: String?; var openedAt: String; var openedBy: String; var items: [Entry] }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let book = try CaseCommand.book(home)
        let c = try CaseCommand.existing(name, in: book)
        var entries: [Entry] = []
        for id in c.items {
            guard let item = try home.catalog.item(id: id) else { continue }
            let file = try home.catalog.sources(itemID: id).first?.name ?? item.sha256.hex
            entries.append(Entry(id: id, state: item.stateLabel, fileName: file, sha256: item.sha256.hex, size: item.size,
                                 dateTaken: item.dateTaken, addedAt: c.added[id] ?? "", tags: (book.tags[id] ?? []).sorted(),
                                 supersededBy: item.supersededBy))
        }
        let answer = Answer(name: c.name, title: c.title, openedAt: c.openedAt, openedBy: c.openedBy, items: entries)
        if global.json { Output.json(answer); return }
        Output.line("case      \(c.name)" + (c.title.map { "  \(TerminalText.escape($0))" } ?? ""))
        Output.line("opened    \(c.openedAt) by \(c.openedBy)")
        Output.line("items     \(entries.count)")
        guard !entries.isEmpty else { return }
        Output.line()
        Output.table(["ITEM", "STATE", "SIZE", "SHA-256", "TAGS", "FILE"], entries.map {
            ["#\($0.id)", $0.state, Output.bytes($0.size), String($0.sha256.prefix(16)) + "…", $0.tags.joined(separator: ","),
             TerminalText.escape($0.fileName)]
        })
    }
}

/// Items chosen by rule, time and file name (`case add`, the portal's filters).
enum CaseSelection {
    static func select(home: EvidenceHome, rule: String?, since: Date?, until: Date?, search: String?) throws -> [Item] {
        var items = try home.catalog.allItems()
        if rule != nil || search != nil {
            var byItem: [Int64: [SourceSighting]] = [:]
            for s in try home.catalog.allSources() { byItem[s.itemID, default: []].append(s) }
            let needle = search?.lowercased()
            items = items.filter { item in
                let sources = byItem[item.id] ?? []
                if let rule, !sources.contains(where: { $0.rule == rule }) { return false }
                if let needle, !sources.contains(where: { $0.name.lowercased().contains(needle) }) { return false }
                return true
            }
        }
        if since != nil || until != nil {
            items = items.filter { item in
                let t = item.dateTaken ?? item.createdAt
                return (since.map { t >= $0 } ?? true) && (until.map { t < $0 } ?? true)
            }
        }
        return items.sorted { $0.id < $1.id }
    }
}

struct TagCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag",
        abstract: "Put tags on an item, or take them off (--remove); without tags, list the item's tags.",
        discussion: Help.reflow("""
        Tags are custody events (tagged, untagged) by the local user; `show`, `case show` and the
        portal's filters use them. Names: letters, digits, '.', '_', '-' (64 at most).

          evidence tag 14 use-of-force night
          evidence tag 14 night --remove

        Exit codes: 0 done · 1 no such item · 2 usage error.
        """))

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("Item id, hash prefix or source path.", valueName: "item")) var item: String
    @Argument(help: ArgumentHelp("Tags.", valueName: "tag")) var tags: [String] = []
    @Flag(help: "Take the tags off instead.") var remove = false

    func validate() throws {
        for t in tags { try CaseCommand.validName(t, what: "tag") }
        if remove && tags.isEmpty { throw ValidationError("--remove needs the tags to take off") }
    }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let it = try ItemResolver.resolve(item, in: home)
        let before = try CaseCommand.book(home).tags[it.id] ?? []
        var changed: [String] = []
        for t in tags where remove ? before.contains(t) : !before.contains(t) {
            guard !changed.contains(t) else { continue }
            try home.catalog.appendEvent(itemID: it.id, kind: remove ? .untagged : .tagged, actor: CaseCommand.actor(), details: ["tag": t])
            changed.append(t)
        }
        if !changed.isEmpty { try home.catalog.flushHead() }
        let after = try CaseCommand.book(home).tags[it.id] ?? []
        if global.json {
            struct Answer: Encodable { var item: Int64; var tags: [String]; var changed: [String] }
            Output.json(Answer(item: it.id, tags: after.sorted(), changed: changed))
        } else if !global.quiet {
            Output.line("item #\(it.id) tags: " + (after.isEmpty ? "(none)" : after.sorted().joined(separator: ", ")))
        }
    }
}
