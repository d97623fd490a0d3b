import EvidenceCore
import Foundation

/// `/items/{id}`: what an auditor needs about one item, and its downloads.
enum ItemPage {
    static func render(_ d: ItemDetails) -> HTML {
        let it = d.item
        let name = d.sources.first?.name ?? it.sha256.short
        let reason: HTML = it.stateReason.map { " <span class=\"\(it.state == .failed ? "error" : "note")\">— \($0)</span>" } ?? .empty
        let media: HTML
        if let m = it.media {
            var s = m.plainSummary(fileName: d.sources.first?.name)
            if m.probeError == nil, let br = m.bitRate { s += ", \(br / 1000) kb/s" }
            media = .text(s)
        } else {
            media = "<span class=\"none\">not a media file</span>"
        }
        let tz = d.timezone
        let taken: String = Show.local(it.dateTaken, tz) + (it.dateTaken == nil ? "" : it.media?.creationTime != nil ? " (media creation time)" : " (file modification time)")
        let recorded = DigestAlgorithm.recorded(in: d.events)
        let others = HTML.join(DigestAlgorithm.extras.compactMap { a -> HTML? in
            recorded[a].map { hex -> HTML in "<dt>\(a.label)</dt><dd>\(Layout.mono(hex))</dd>" }
        }, separator: "\n")
        let facts: HTML = """
            <dl class="facts" id="facts">
            <dt>State</dt><dd>\(Layout.badges(it))\(reason)</dd>
            <dt>SHA-256</dt><dd>\(Layout.mono(it.sha256.hex))</dd>
            \(others)
            <dt>Size</dt><dd>\(Show.bytes(it.size))</dd>
            <dt>Media</dt><dd>\(media)</dd>
            <dt>Taken</dt><dd>\(taken)</dd>
            <dt>Ingested</dt><dd>\(Show.local(it.createdAt, tz))</dd>
            <dt>Last change</dt><dd>\(Show.local(it.updatedAt, tz))</dd>
            \(d.cases.isEmpty ? HTML.empty : "<dt>Cases</dt><dd>\(HTML.join(d.cases.map { c -> HTML in "<a href=\"/?case=\(HTML.urlComponent(c))\">\(c)</a>" }, separator: ", "))</dd>")
            \(d.tags.isEmpty ? HTML.empty : "<dt>Tags</dt><dd>\(HTML.join(d.tags.map { t -> HTML in "<a href=\"/?tag=\(HTML.urlComponent(t))\">\(t)</a>" }, separator: ", "))</dd>")
            </dl>
            """

        var downloads: [HTML] = d.certificates.map { c in
            "<li><a href=\"/items/\(it.id)/certificates/\(HTML.urlComponent(c.origin)).pdf\">Certificate (\(c.origin)) PDF</a></li>"
        }
        downloads.append("<li><a href=\"/items/\(it.id)/bundle.zip\">Bundle (.zip)</a></li>")
        downloads.append("<li><a href=\"/items/\(it.id)/bundle.tar\">Bundle (.tar)</a></li>")
        let bundleNote: HTML = it.state < .confirmed || it.state == .failed
            ? "<p class=\"note\">This item is \(it.state.rawValue): its proofs are not complete yet, so the bundle holds what exists so far.</p>"
            : .empty

        let sources = d.sources.map { s -> [HTML] in
            [.text(Show.date(s.seenAt)), .text(s.rule ?? "(manual)"), .text(Show.bytes(s.size)), .text(Show.date(s.mtime)), Layout.mono(s.path)]
        }
        let proofs = d.proofs.map { p -> [HTML] in
            let reference: HTML
            if p.kind.isTimestamp {
                reference = "\(p.state == .pending ? "batch" : "TSA serial") \(Layout.mono(p.remoteID ?? "–"))"
            } else if let tx = p.txHash {
                let link = p.link.map { HTML.externalLink($0, text: tx) } ?? HTML.text(tx)
                let network: HTML = p.network.map { "<br><span class=\"note\">\($0)\(p.blockHeight.map { ", block \($0)" } ?? "")</span>" } ?? .empty
                reference = "tx <code>\(link)</code>\(network)"
            } else {
                reference = "report \(Layout.mono(p.remoteID ?? "–")) (no transaction yet)"
            }
            let state: HTML = p.state == .failed ? "<span class=\"error\">failed: \(p.error ?? "no reason given")</span>"
                : p.state == .confirmed ? "confirmed" : "pending"
            return [.text(p.notary), .text(p.kind == .rfc4998 ? "RFC 4998 record (batched RFC 3161)" : p.kind == .qed ? "QED blockchain" : p.kind.label),
                    state, .text(Show.date(p.submittedAt)), .text(Show.local(p.provenAt, tz)), reference]
        }
        let certificates = d.certificates.map { c -> [HTML] in
            [.text(c.origin), .text(Show.bytes(c.size)), Layout.mono(c.sha256.hex), .text(Show.date(c.createdAt)),
             "<a href=\"/items/\(it.id)/certificates/\(HTML.urlComponent(c.origin)).pdf\">download</a>"]
        }
        let archived = d.archived.map { a -> [HTML] in
            [.text(a.account), .text(a.role.rawValue), Layout.mono(a.remotePath), .text(Show.bytes(a.size)), .text(a.verifiedBy), .text(Show.date(a.verifiedAt))]
        }
        let links = d.links.map { l -> [HTML] in
            var notes: [String] = []
            if l.passwordProtected { notes.append("password protected") }
            if let f = l.fallback { notes.append(f) }
            return [.text(l.account), HTML.externalLink(l.url), .text(Show.date(l.expires)), .text(notes.joined(separator: "; "))]
        }
        let jobs = d.jobs.map { j -> [HTML] in
            [.text(j.kind.rawValue), .text(j.state.rawValue), .text("\(j.attempts)/\(j.maxAttempts)"),
             .text(j.state == .queued ? Show.date(j.nextRunAt) : "–"), j.lastError.map { "<span class=\"error\">\($0)</span>" } ?? .empty]
        }
        let events = d.events.map { e -> [HTML] in
            [.text(String(e.seq)), .text(Timestamp.parse(e.at).map { Show.local($0, tz) } ?? e.at),
             "<span class=\"sentence\">\(CustodySentence.describe(e))</span><details><summary>\(e.kind) by \(e.actor)</summary>\(Layout.mono(e.details))</details>",
             "<code title=\"\(e.hash)\">\(String(e.hash.prefix(16)))…</code>"]
        }
        let poster: HTML = d.events.last(where: { $0.kind == CustodyEventKind.poster.rawValue }).map { e in
            let size = CustodySentence.sizes(e)
            return "<figure class=\"poster\"><img id=\"poster\" src=\"/items/\(it.id)/poster.png\" alt=\"Poster frame of item #\(it.id)\" width=\"\(size.0)\" height=\"\(size.1)\"><figcaption class=\"note\">Poster frame: the first picture decoded from the file.</figcaption></figure>"
        } ?? .empty
        let body: HTML = """
            <h1>Item #\(it.id) — \(name)</h1>
            \(poster)
            \(facts)
            <h2>Downloads</h2>
            <ul class="downloads">\(downloads)</ul>
            \(bundleNote)
            <p class="note">The bundle holds the original, its proofs, certificates and custody log; check it offline with <code>sha256sum -c SHA256SUMS</code> and the commands in its VERIFY.md.</p>
            <h2>Proofs</h2>
            \(Layout.table(["Notary", "Kind", "State", "Submitted", "Proven at", "Reference"], proofs, empty: "Not submitted to a notary.", id: "proofs"))
            <h2>Certificates</h2>
            \(Layout.table(["Origin", "Size", "SHA-256", "Created", "PDF"], certificates, empty: "No certificate yet.", id: "certificates"))
            <h2>Sources</h2>
            \(Layout.table(["Seen", "Rule", "Size", "Modified", "Path"], sources, empty: "No source recorded.", id: "sources"))
            <h2>Archive and sharing</h2>
            \(Layout.table(["Account", "Role", "Remote path", "Size", "Verified by", "Verified at"], archived, empty: "Not archived.", id: "archive"))
            \(d.links.isEmpty ? HTML.empty : Layout.table(["Account", "Link", "Expires", "Notes"], links, empty: "", id: "links"))
            <h2>Custody events</h2>
            <p class="note">Hash-chained: each event's hash covers the previous one's.</p>
            \(Layout.table(["#", "At", "What happened", "Hash"], events, empty: "No events.", id: "custody"))
            <h2>Jobs</h2>
            \(Layout.table(["Job", "State", "Attempts", "Next run", "Last error"], jobs, empty: "No jobs.", id: "jobs"))
            """
        return Layout.page(title: "Item #\(it.id) \(name)", body)
    }
}
