import EvidenceCore

/// `/`: the search form and filters (a GET form: results have a URL an auditor can bookmark),
/// and one page of results with links to the others.
enum SearchPage {
    static func render(query: SearchQuery, filter: ListFilter, page: ListPage, rules: [String], book: CaseBook,
                       timezone: LocalTime) -> HTML {
        let heading: HTML
        let count = "\(page.total)\(page.capped ? "+" : "") item\(page.total == 1 ? "" : "s")"
        if query.isEmpty && filter.isEmpty {
            heading = "<h2>All items, newest first (\(count))</h2>"
        } else if query.isEmpty {
            heading = "<h2>\(count) match the filters</h2>"
        } else {
            let readings = HTML.join(query.readings.map { r -> HTML in "<li>\(r)</li>" })
            heading = "<h2>\(count) for “\(query.text)”</h2><p class=\"note\">Searched for:</p><ul class=\"note\">\(readings)</ul>"
        }
        let rows = page.results.map { r -> [HTML] in
            [Show.itemLink(r.item.id),
             HTML.join(r.names.map { n -> HTML in "<a href=\"/items/\(r.item.id)\">\(n)</a>" }, separator: "<br>"),
             Layout.badges(r.item),
             .text(Show.bytes(r.item.size)),
             Layout.mono(r.item.sha256.hex),
             .text(Show.local(r.item.dateTaken ?? r.item.createdAt, timezone))]
        }
        func select(_ name: String, _ label: String, _ values: [String], _ chosen: String?) -> HTML {
            let options = HTML.join(values.map { v -> HTML in
                v == chosen ? "<option selected>\(v)</option>" : "<option>\(v)</option>"
            })
            return "<label>\(label) <select name=\"\(name)\"><option value=\"\">any</option>\(options)</select></label>"
        }
        let tags = Set(book.tags.values.flatMap { $0 }).sorted()
        let more: HTML = page.capped ? "<p class=\"note\">The search matched more than \(PortalData.searchCap) items per reading; narrow it.</p>" : .empty
        var paging: [HTML] = []
        if page.page > 1 {
            paging.append("<a rel=\"prev\" href=\"/?\(filter.query(q: query.text, page: page.page - 1))\">← Newer</a>")
        }
        paging.append("<span>Page \(page.page) of \(page.pages)</span>")
        if page.page < page.pages {
            paging.append("<a rel=\"next\" href=\"/?\(filter.query(q: query.text, page: page.page + 1))\">Older →</a>")
        }
        let body: HTML = """
            <h1>Find evidence</h1>
            <form class="search" method="get" action="/" role="search">
            <input type="search" id="q" name="q" value="\(query.text)" aria-label="Search" placeholder="e.g. 3fa9c2, bodycam, 2026-01-31" autofocus>
            <button type="submit">Search</button>
            <div class="filters">
            \(select("rule", "Rule", rules, filter.rule))
            \(select("state", "State", ListFilter.states, filter.state))
            \(select("case", "Case", book.order, filter.caseName))
            \(select("tag", "Tag", tags, filter.tag))
            <label>Taken from <input type="date" name="from" value="\(filter.fromText)"></label>
            <label>to <input type="date" name="to" value="\(filter.toText)"></label>
            </div>
            </form>
            <p class="note">A SHA-256 prefix (4 or more hex digits), part of a file name, an item number, or the day it was ingested (YYYY-MM-DD, UTC). Dates filter on the time taken (or ingested, when none is known); times are shown in \(timezone.identifier).</p>
            \(heading)
            \(Layout.table(["Item", "File name", "State", "Size", "SHA-256", "Taken"], rows,
                           empty: query.isEmpty && filter.isEmpty ? "No items yet." : "Nothing matches.", id: "results"))
            <nav class="paging" id="paging" aria-label="Pages">\(HTML.join(paging, separator: " "))</nav>
            \(more)
            """
        return Layout.page(title: query.isEmpty ? "Search" : "Search: \(query.text)", active: "Search", body)
    }
}

/// `/cases`: every case, its items and who opened it; each links to its items on `/`.
enum CasesPage {
    static func render(_ book: CaseBook, timezone: LocalTime) -> HTML {
        let rows = book.order.compactMap { book.cases[$0] }.map { c -> [HTML] in
            ["<a href=\"/?case=\(HTML.urlComponent(c.name))\">\(c.name)</a>", .text(c.title ?? ""), .text("\(c.items.count)"),
             .text(Timestamp.parse(c.openedAt).map { Show.local($0, timezone) } ?? c.openedAt), .text(c.openedBy),
             "<a href=\"/cases/\(HTML.urlComponent(c.name))/disclosure.zip\">disclosure package (.zip)</a>"]
        }
        let body: HTML = """
            <h1>Cases</h1>
            <p class="note">Cases are opened and filled with <code>evidence case</code>; each change is a custody event. <code>evidence disclose CASE -o DIR</code> writes a case's disclosure package.</p>
            \(Layout.table(["Case", "Title", "Items", "Opened", "By", "Download"], rows, empty: "No cases yet.", id: "cases"))
            <p class="note">A disclosure package holds every item's bundle, an index PDF, a custody CSV and one SHA256SUMS: check it with <code>sha256sum -c SHA256SUMS</code> and each item's <code>openssl ts -verify</code> line. Each download is recorded in every item's custody log.</p>
            """
        return Layout.page(title: "Cases", active: "Cases", body)
    }
}
