import EvidencePortal
import Foundation
import Testing

@Suite("Reading the search box")
struct SearchQueryTests {
    @Test("4+ hex digits are a hash prefix and a file-name fragment")
    func hexPrefix() {
        let q = SearchQuery("  3FA9c2 ")
        #expect(q.text == "3FA9c2")
        #expect(q.hashPrefix == "3fa9c2")
        #expect(q.nameContains == "3FA9c2")
        #expect(q.itemID == nil && q.day == nil)
        #expect(SearchQuery("abc").hashPrefix == nil)
        #expect(SearchQuery("cafe.jpg").hashPrefix == nil)
        #expect(SearchQuery(String(repeating: "a", count: 65)).hashPrefix == nil)
    }

    @Test("a number is an item id and a name fragment; #N only an id")
    func itemIDs() {
        let n = SearchQuery("12")
        #expect(n.itemID == 12 && n.nameContains == "12" && n.hashPrefix == nil)
        let h = SearchQuery("#12")
        #expect(h.itemID == 12 && h.nameContains == nil)
        #expect(SearchQuery("0").itemID == nil)
        let both = SearchQuery("1234")
        #expect(both.itemID == 1234 && both.hashPrefix == "1234")
    }

    @Test("YYYY-MM-DD is the UTC day, only for real calendar dates")
    func days() throws {
        let d = try #require(SearchQuery("2024-02-29").day)
        #expect(d.start == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(d.duration == 86_400)
        #expect(SearchQuery("2023-02-29").day == nil)
        #expect(SearchQuery("2024-13-01").day == nil)
        #expect(SearchQuery("2024-1-01").day == nil)
        #expect(SearchQuery("2024-02-29").nameContains == "2024-02-29")
    }

    @Test("an empty query means the most recent items")
    func empty() {
        #expect(SearchQuery("   ").isEmpty)
        #expect(SearchQuery("").readings.isEmpty)
    }

    @Test("the readings say how the text was understood")
    func readings() {
        #expect(SearchQuery("cafe").readings == ["SHA-256 starting with cafe", "file name containing “cafe”"])
    }
}
