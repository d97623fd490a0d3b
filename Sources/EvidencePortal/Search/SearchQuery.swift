import Foundation

/// What an auditor typed into the search box, read every way it can mean something. The
/// results are the union: `2024-05-01` finds items ingested that day *and* files whose name
/// contains it; `cafe` finds hashes starting with it *and* names like `cafe.jpg`.
public struct SearchQuery: Sendable, Equatable {
    /// The text as typed, trimmed.
    public var text: String
    /// `12` or `#12`.
    public var itemID: Int64?
    /// 4…64 hex digits, lowercased.
    public var hashPrefix: String?
    /// `YYYY-MM-DD`: the UTC day `[start, end)`.
    public var day: DateInterval?
    /// A substring of a source file name (always set for a non-empty query without `#`).
    public var nameContains: String?

    public var isEmpty: Bool { text.isEmpty }

    public init(_ raw: String) {
        text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return }
        let idText = text.hasPrefix("#") ? String(text.dropFirst()) : text
        if !idText.isEmpty, idText.count <= 18, idText.allSatisfy({ $0.isASCII && $0.isNumber }), let id = Int64(idText), id > 0 {
            itemID = id
        }
        if (4...64).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isHexDigit }) {
            hashPrefix = text.lowercased()
        }
        day = Self.utcDay(text)
        if !text.hasPrefix("#") { nameContains = text }
    }

    /// `YYYY-MM-DD` as the UTC day it names; nil unless it is a real calendar date.
    static func utcDay(_ s: String) -> DateInterval? {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard s.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let comps = DateComponents(year: y, month: m, day: d)
        guard comps.isValidDate(in: calendar), let start = calendar.date(from: comps) else { return nil }
        return DateInterval(start: start, duration: 86_400)
    }

    /// How the query was read, for the results heading.
    public var readings: [String] {
        var r: [String] = []
        if let itemID { r.append("item #\(itemID)") }
        if let hashPrefix { r.append("SHA-256 starting with \(hashPrefix)") }
        if day != nil { r.append("ingested on \(text) (UTC)") }
        if let nameContains { r.append("file name containing “\(nameContains)”") }
        return r
    }
}
