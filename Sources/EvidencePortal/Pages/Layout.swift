import EvidenceCore
import Foundation

/// The frame every page shares: one inline style sheet (allowed by the CSP), a navigation bar
/// and no script at all — every page works with JavaScript off.
enum Layout {
    static func page(title: String, active: String? = nil, _ body: HTML) -> HTML {
        func nav(_ href: String, _ label: String) -> HTML {
            label == active ? "<a href=\"\(href)\" aria-current=\"page\">\(label)</a>" : "<a href=\"\(href)\">\(label)</a>"
        }
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            <title>\(title) · evidence</title>
            <style>\(style)</style>
            </head>
            <body>
            <header><span class="brand">evidence</span> <span class="sub">auditor portal · read-only</span>
            <nav>\(nav("/", "Search")) \(nav("/cases", "Cases")) \(nav("/status", "Status"))</nav></header>
            <main>
            \(body)
            </main>
            <footer>All times are UTC. This portal only reads the catalog; nothing here changes evidence.</footer>
            </body>
            </html>

            """
    }

    /// A table, or a line saying there is nothing to show.
    static func table(_ headers: [String], _ rows: [[HTML]], empty: String, id: String? = nil) -> HTML {
        guard !rows.isEmpty else { return "<p class=\"none\">\(empty)</p>" }
        let head = HTML.join(headers.map { h -> HTML in "<th scope=\"col\">\(h)</th>" })
        let body = HTML.join(rows.map { r -> HTML in "<tr>\(HTML.join(r.map { c -> HTML in "<td>\(c)</td>" }))</tr>" }, separator: "\n")
        let idAttr: HTML = id.map { " id=\"\($0)\"" } ?? .empty
        return "<table\(idAttr)><thead><tr>\(head)</tr></thead>\n<tbody>\n\(body)\n</tbody></table>"
    }

    /// The state as a coloured badge (colour is never the only cue: the name is written).
    static func badge(_ state: ItemState) -> HTML {
        let tone: String
        switch state {
        case .done, .archived, .certified, .confirmed: tone = "ok"
        case .failed: tone = "bad"
        case .ingested, .submitted: tone = "wait"
        }
        return badge(state.rawValue, tone: tone)
    }

    /// An item's state badge, with "superseded by #N" (linked to the newer version) and "empty"
    /// beside it when they apply.
    static func badges(_ item: Item) -> HTML {
        var out = badge(item.state)
        if let by = item.supersededBy {
            let id = String(by)
            out += " <span class=\"badge wait\">superseded by <a href=\"/items/\(id)\">#\(id)</a></span>"
        }
        if item.isEmpty { out += " " + badge("empty", tone: "wait") }
        return out
    }

    /// The badge beside the item states for the files not taken in (the quarantine table).
    static var quarantinedBadge: HTML { badge("quarantined", tone: "bad") }

    private static func badge(_ name: String, tone: String) -> HTML { "<span class=\"badge \(tone)\">\(name)</span>" }

    static func mono(_ s: String) -> HTML { "<code>\(s)</code>" }

    static let style: HTML = """
        :root{--ink:#1d2430;--muted:#5b6575;--line:#d5dbe3;--band:#123a63;--ok:#1d7a3a;--bad:#b3261e;--wait:#8a5a00}
        *{box-sizing:border-box}
        body{margin:0;font:15px/1.45 "DejaVu Sans",system-ui,sans-serif;color:var(--ink);background:#f6f8fa}
        header{background:var(--band);color:#fff;padding:.7rem 1.5rem;display:flex;gap:1rem;align-items:baseline;flex-wrap:wrap}
        header .brand{font-weight:bold;font-size:1.25rem;letter-spacing:.02em}
        header .sub{opacity:.8}
        header nav{margin-left:auto}
        header nav a{color:#fff;margin-left:1rem}
        header nav a[aria-current]{font-weight:bold;text-decoration:none;border-bottom:2px solid #fff}
        main{padding:1rem 1.5rem;max-width:1400px}
        h1{font-size:1.5rem;margin:.4rem 0 1rem}
        h2{font-size:1.15rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
        table{border-collapse:collapse;background:#fff;width:100%;margin:.3rem 0}
        th,td{border:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top}
        th{background:#e9eef4;font-weight:600}
        td{overflow-wrap:anywhere}
        #custody td:nth-child(-n+4),#sources td:nth-child(-n+4),#results td:nth-child(-n+4),#proofs td:nth-child(-n+5){white-space:nowrap}
        dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;background:#fff;border:1px solid var(--line);padding:.7rem 1rem;margin:0}
        dl.facts dt{color:var(--muted)}
        dl.facts dd{margin:0;overflow-wrap:anywhere}
        code{font-family:"DejaVu Sans Mono",monospace;font-size:.92em}
        .badge{display:inline-block;padding:.05rem .55rem;border-radius:.8rem;color:#fff;font-weight:600;font-size:.9em}
        .badge.ok{background:var(--ok)}.badge.bad{background:var(--bad)}.badge.wait{background:var(--wait)}
        .none{color:var(--muted);font-style:italic}
        .note{color:var(--muted)}
        .error{color:var(--bad)}
        form.search{display:flex;gap:.5rem;margin:.5rem 0 1rem}
        form.search input[type=search]{flex:1;max-width:40rem;padding:.45rem;font-size:1rem;border:1px solid #9aa5b4;border-radius:.25rem}
        form.search button{padding:.45rem 1rem;font-size:1rem;background:var(--band);color:#fff;border:0;border-radius:.25rem}
        ul.downloads{list-style:none;padding:0;display:flex;gap:.6rem;flex-wrap:wrap}
        ul.downloads a{display:inline-block;padding:.4rem .8rem;background:#fff;border:1px solid var(--band);border-radius:.25rem;text-decoration:none;color:var(--band);font-weight:600}
        .counts{display:flex;gap:.6rem;flex-wrap:wrap}
        .counts div{background:#fff;border:1px solid var(--line);padding:.5rem .8rem;min-width:7rem}
        .counts b{display:block;font-size:1.4rem}
        footer{color:var(--muted);padding:1rem 1.5rem;font-size:.85em}
        .filters{display:flex;gap:.8rem;flex-wrap:wrap;margin-top:.6rem;font-size:.9em}
        .paging{display:flex;gap:1rem;margin:.8rem 0}
        .sentence{max-width:60rem}
        .poster{float:right;margin:0 0 1rem 1rem}
        .poster img{border:1px solid var(--line);max-width:480px;height:auto}
        """
}

/// How values are shown, the same way on every page.
enum Show {
    static func date(_ d: Date?) -> String { d.map(Timestamp.string) ?? "–" }

    /// UTC, and the portal's `timezone` beside it.
    static func local(_ d: Date?, _ zone: LocalTime) -> String { d.map(zone.both) ?? "–" }

    static func bytes(_ n: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var v = Double(n)
        var i = 0
        while v >= 1000, i < units.count - 1 { v /= 1000; i += 1 }
        return i == 0 ? "\(n) B" : String(format: "%.1f %@ (%lld bytes)", v, units[i], n)
    }

    static func age(since d: Date, now: Date = Date()) -> String {
        DurationText.format(seconds: max(0, now.timeIntervalSince(d)))
    }

    static func itemLink(_ id: Int64) -> HTML { "<a href=\"/items/\(id)\">#\(id)</a>" }
}
