import EvidenceCore
import Foundation

/// `/status`: for operators — counts per state, jobs, and what needs a person.
enum StatusPage {
    static func render(_ r: StatusReport) -> HTML {
        let s = r.summary
        var states = ItemState.allCases.map { st -> HTML in
            "<div class=\"state-\(st.rawValue)\"><b>\(s.byState[st.rawValue] ?? 0)</b>\(Layout.badge(st))</div>"
        }
        states.append("<div class=\"state-superseded\"><b>\(s.byState[CatalogSummary.superseded] ?? 0)</b><span class=\"badge wait\">superseded</span></div>")
        // The files not taken in (quarantine entries, not items), counted beside the states.
        let quarantined: HTML = "<div class=\"state-quarantined\"><b>\(s.quarantined)</b>\(Layout.quarantinedBadge)</div>"
        states.append(quarantined)
        let jobOrder = ["queued", "running", "done", "failed"]
        let jobs = (jobOrder + r.jobCounts.keys.filter { !jobOrder.contains($0) }.sorted()).compactMap { k -> HTML? in
            r.jobCounts[k].map { "<div><b>\($0)</b>\(k)</div>" }
        }
        func stuckRows(_ list: [StatusReport.Stuck]) -> [[HTML]] {
            list.map { x in
                [Show.itemLink(x.item.id), Layout.badge(x.item.state), .text(Show.age(since: x.item.createdAt, now: r.generatedAt)),
                 x.source.map(Layout.mono) ?? .text("–"), "<span class=\"error\">\(x.why)</span>"]
            }
        }
        let troubled = r.troubledJobs.map { j -> [HTML] in
            [.text(String(j.id)), .text(j.kind.rawValue), j.itemID.map(Show.itemLink) ?? .text("–"), .text(j.state.rawValue),
             .text("\(j.attempts)/\(j.maxAttempts)"), "<span class=\"error\">\(j.lastError ?? "")</span>"]
        }
        let quarantine = r.quarantine.map { q -> [HTML] in
            [.text(Show.date(q.at)), .text(q.rule ?? "–"), Layout.mono(q.path), .text(q.reason)]
        }
        // Several nodes on one catalog: what each took in, what each runs now.
        let nodeNames = Set(s.takenInByNode.keys).union(s.runningByNode.keys).sorted()
        let nodes = nodeNames.map { n -> [HTML] in
            [Layout.mono(n), .text(String(s.takenInByNode[n] ?? 0)), .text(String(s.runningByNode[n] ?? 0))]
        }
        let jobCounts: HTML = jobs.isEmpty ? "<p class=\"none\">No jobs.</p>" : "<div class=\"counts\" id=\"job-counts\">\(jobs)</div>"
        let attention = !r.failed.isEmpty || !r.stuck.isEmpty || !r.troubledJobs.isEmpty || !r.quarantine.isEmpty || !r.paused.isEmpty
        // One alert per paused account or notary, above everything else.
        let paused: [HTML] = r.paused.map { p in
            "<p class=\"error paused\"><b>\(p.kind.rawValue) \(p.name) is paused</b> since \(Show.date(p.since)): its credentials were refused (\(p.reason)). Its work waits. To fix: \(p.fix).</p>"
        }
        let oldest: HTML = s.oldestPending.map { "oldest pending item: \(Show.age(since: $0, now: r.generatedAt)) old" } ?? "nothing pending"
        let body: HTML = """
            <h1>Status</h1>
            <p id="verdict" class="\(attention ? "error" : "note")">\(attention ? "Needs attention." : "Nothing needs attention.")</p>
            \(paused)
            <p>\(s.items) items (\(Show.bytes(s.bytes))), \(s.sources) sources, \(s.events) custody events; \(oldest). As of \(Show.date(r.generatedAt)).</p>
            <h2>Items per state</h2>
            <div class="counts" id="states">\(states)</div>
            <h2>Jobs</h2>
            \(jobCounts)
            <h2>Nodes</h2>
            \(Layout.table(["Node", "Items taken in", "Jobs running"], nodes, empty: "No items yet.", id: "nodes"))
            <h2>Failed items</h2>
            \(Layout.table(["Item", "State", "Age", "Source", "Why"], stuckRows(r.failed), empty: "None.", id: "failed"))
            <h2>Stuck items</h2>
            <p class="note">On their way for \(DurationText.format(seconds: r.stuckAfter)) or longer (change with <a href="/status?older=1h">?older=1h</a>).</p>
            \(Layout.table(["Item", "State", "Age", "Source", "Why"], stuckRows(r.stuck), empty: "None.", id: "stuck"))
            <h2>Failing jobs</h2>
            \(Layout.table(["Job", "Kind", "Item", "State", "Attempts", "Last error"], troubled, empty: "None.", id: "failing-jobs"))
            <h2>Quarantine</h2>
            <p class="note">Files that could not be taken in; they were left in place, not stored.</p>
            \(Layout.table(["At", "Rule", "Path", "Reason"], quarantine, empty: "Empty.", id: "quarantine"))
            """
        return Layout.page(title: "Status", active: "Status", body)
    }
}
