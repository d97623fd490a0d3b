import Foundation

/// Cases and tags, replayed from their custody events (`case-opened`, `case-added`,
/// `case-removed`, `tagged`, `untagged`). No table holds them: the hash-chained log is their
/// only record, so a membership changed behind the tool's back breaks the chain like any other
/// edit, and `catalog migrate` carries them with the log.
public struct CaseBook: Sendable, Equatable {
    public struct Case: Sendable, Equatable, Codable {
        public var name: String
        public var title: String?
        public var openedAt: String
        public var openedBy: String
        /// Item ids in the order they were added (a removed item leaves the list).
        public var items: [Int64]
        /// When and by whom each current item was added.
        public var added: [Int64: String]
    }

    public private(set) var cases: [String: Case] = [:]
    /// Case names in the order they were opened.
    public private(set) var order: [String] = []
    public private(set) var tags: [Int64: Set<String>] = [:]

    public static let kinds: [CustodyEventKind] = [.caseOpened, .caseAdded, .caseRemoved, .tagged, .untagged]

    public init() {}

    public init(events: [CustodyEvent]) {
        for e in events { apply(e) }
    }

    public mutating func apply(_ e: CustodyEvent) {
        let d = e.fields
        switch CustodyEventKind(rawValue: e.kind) {
        case .caseOpened?:
            guard let name = d["case"], cases[name] == nil else { return }
            cases[name] = Case(name: name, title: d["title"], openedAt: e.at, openedBy: e.actor, items: [], added: [:])
            order.append(name)
        case .caseAdded?:
            guard let name = d["case"], let id = e.itemID, var c = cases[name], c.added[id] == nil else { return }
            c.items.append(id)
            c.added[id] = e.at
            cases[name] = c
        case .caseRemoved?:
            guard let name = d["case"], let id = e.itemID, var c = cases[name], c.added[id] != nil else { return }
            c.items.removeAll { $0 == id }
            c.added[id] = nil
            cases[name] = c
        case .tagged?:
            guard let tag = d["tag"], let id = e.itemID else { return }
            tags[id, default: []].insert(tag)
        case .untagged?:
            guard let tag = d["tag"], let id = e.itemID else { return }
            tags[id]?.remove(tag)
            if tags[id]?.isEmpty == true { tags[id] = nil }
        default:
            return
        }
    }

    /// The cases an item is in, by name.
    public func cases(of itemID: Int64) -> [String] {
        order.filter { cases[$0]?.added[itemID] != nil }
    }

    /// Items carrying `tag`.
    public func items(tagged tag: String) -> Set<Int64> {
        Set(tags.filter { $0.value.contains(tag) }.keys)
    }

    /// Case and tag names: a letter or digit, then letters, digits, `.`, `_`, `-` (64 at most),
    /// so they are safe as file names, URL parts and CSV cells alike.
    public static func nameProblem(_ name: String) -> String? {
        guard !name.isEmpty else { return "is empty" }
        guard name.utf8.count <= 64 else { return "is longer than 64 characters" }
        let ok = name.unicodeScalars.enumerated().allSatisfy { i, u in
            let alnum = (u >= "a" && u <= "z") || (u >= "A" && u <= "Z") || (u >= "0" && u <= "9")
            return alnum || (i > 0 && (u == "." || u == "_" || u == "-"))
        }
        return ok ? nil : "may hold only letters, digits, '.', '_' and '-' (starting with a letter or digit)"
    }
}
