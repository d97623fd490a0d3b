import EvidenceCore
import Foundation

/// The list's filters (rule, state, case, tag, taken-or-ingested date range) and its page, as
/// the search form sends them. Every value is checked: a bad one is named on a 400 page.
public struct ListFilter: Sendable, Equatable {
    public var rule: String?
    public var state: String?
    public var caseName: String?
    public var tag: String?
    /// `[from, to)`, from `YYYY-MM-DD` (that day, UTC) or ISO 8601 times.
    public var from: Date?
    public var to: Date?
    public var fromText = ""
    public var toText = ""
    public var page = 1

    public static let pageSize = 50
    public static let states = ItemState.allCases.map(\.rawValue) + [CatalogSummary.superseded]

    public var isEmpty: Bool { rule == nil && state == nil && caseName == nil && tag == nil && from == nil && to == nil }

    public init() {}

    /// Nil and the reason when a value is not one the form offers.
    public static func parse(rule: String?, state: String?, caseName: String?, tag: String?, from: String?, to: String?,
                             page: String?) -> (ListFilter?, String?) {
        var f = ListFilter()
        func blank(_ s: String?) -> String? { s.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 } }
        f.rule = blank(rule)
        if let s = blank(state) {
            guard states.contains(s) else { return (nil, "state=\(s): one of \(states.joined(separator: ", "))") }
            f.state = s
        }
        if let c = blank(caseName) {
            if let p = CaseBook.nameProblem(c) { return (nil, "case=\(c): the name \(p)") }
            f.caseName = c
        }
        if let t = blank(tag) {
            if let p = CaseBook.nameProblem(t) { return (nil, "tag=\(t): the name \(p)") }
            f.tag = t
        }
        func time(_ s: String, end: Bool) -> Date? {
            if let day = SearchQuery.utcDay(s) { return end ? day.end : day.start }
            return Timestamp.parseLenient(s)
        }
        if let s = blank(from) {
            guard let d = time(s, end: false) else { return (nil, "from=\(s): expected YYYY-MM-DD or an ISO 8601 time") }
            (f.from, f.fromText) = (d, s)
        }
        if let s = blank(to) {
            guard let d = time(s, end: true) else { return (nil, "to=\(s): expected YYYY-MM-DD or an ISO 8601 time") }
            (f.to, f.toText) = (d, s)
        }
        if let s = blank(page) {
            guard let n = Int(s), n >= 1, n <= 1_000_000 else { return (nil, "page=\(s): a page number from 1") }
            f.page = n
        }
        return (f, nil)
    }

    /// The query string of this filter (and `q`) at `page`, for the paging links.
    public func query(q: String, page: Int) -> String {
        var parts: [(String, String)] = []
        if !q.isEmpty { parts.append(("q", q)) }
        if let rule { parts.append(("rule", rule)) }
        if let state { parts.append(("state", state)) }
        if let caseName { parts.append(("case", caseName)) }
        if let tag { parts.append(("tag", tag)) }
        if from != nil { parts.append(("from", fromText)) }
        if to != nil { parts.append(("to", toText)) }
        if page > 1 { parts.append(("page", String(page))) }
        return parts.map { "\($0.0)=\(HTML.urlComponent($0.1))" }.joined(separator: "&")
    }
}
