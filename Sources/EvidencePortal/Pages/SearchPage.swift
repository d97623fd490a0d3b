import EvidenceCore

/// `/`: the search form (a GET form: results have a URL an auditor can bookmark) and results.
enum SearchPage {
    static func render(query: SearchQuery, results: [SearchResult], truncated: Bool, limit: Int) -> HTML {
        let heading: HTML
        if query.isEmpty {
            heading = "<h2>Most recent items</h2>"
        } else {
            let readings = HTML.join(query.readings.map { r -> HTML in "<li>\(r)</li>" })
            heading = "<h2>\(results.count)\(truncated ? "+" : "") result\(results.count == 1 ? "" : "s") for “\(query.text)”</h2><p class=\"note\">Searched for:</p><ul class=\"note\">\(readings)</ul>"
        }
        let rows = results.map { r -> [HTML] in
            [Show.itemLink(r.item.id),
             HTML.join(r.names.map { n -> HTML in "<a href=\"/items/\(r.item.id)\">\(n)</a>" }, separator: "<br>"),
             Layout.badges(r.item),
             .text(Show.bytes(r.item.size)),
             Layout.mono(r.item.sha256.hex),
             .text(Show.date(r.item.createdAt))]
        }
        let more: HTML = truncated ? "<p class=\"note\">Only the newest \(limit) are shown; narrow the search.</p>" : .empty
        let body: HTML = """
            <h1>Find evidence</h1>
            <form class="search" method="get" action="/" role="search">
            <input type="search" id="q" name="q" value="\(query.text)" aria-label="Search" placeholder="e.g. 3fa9c2, bodycam, 2026-01-31" autofocus>
            <button type="submit">Search</button>
            </form>
            <p class="note">A SHA-256 prefix (4 or more hex digits), part of a file name, an item number, or the day it was ingested (YYYY-MM-DD, UTC).</p>
            \(heading)
            \(Layout.table(["Item", "File name", "State", "Size", "SHA-256", "Ingested"], rows,
                           empty: query.isEmpty ? "No items yet." : "Nothing matches.", id: "results"))
            \(more)
            """
        return Layout.page(title: query.isEmpty ? "Search" : "Search: \(query.text)", active: "Search", body)
    }
}
