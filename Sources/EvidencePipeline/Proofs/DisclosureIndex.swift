import EvidenceCertificate
import EvidenceCore
import Foundation

/// index.pdf of a disclosure package: the case, a table of its items, each item's hash, size,
/// times, media, proofs and custody summary, the case's own custody events, and how to verify.
enum DisclosureIndex {
    static func document(_ m: DisclosureManifest, bundles: [(DisclosureManifest.Entry, BundleManifest, [CustodyEvent])],
                         timezone: LocalTime) -> Document {
        func time(_ d: Date?) -> String { d.map(timezone.both) ?? "not recorded" }
        func eventTime(_ at: String) -> String { Timestamp.parse(at).map(timezone.both) ?? at }
        var sections: [Document.Section] = []
        var caseFields: [Document.Element] = [.field("Case", m.case.name)]
        if let t = m.case.title { caseFields.append(.field("Title", t)) }
        caseFields += [
            .field("Opened", "\(eventTime(m.case.openedAt)) by \(m.case.openedBy)"),
            .field("Items", "\(m.items.count)"),
            .field("Prepared", "\(time(m.generatedAt)) by \(m.generatedBy)"),
            .field("Tool", m.tool),
        ]
        sections.append(.init("Case", caseFields))

        let columns = [Document.Column("ITEM", width: 8), Document.Column("FILE", width: 34), Document.Column("SHA-256", width: 22, mono: true),
                       Document.Column("STATE", width: 14), Document.Column("PROOFS", width: 22)]
        let rows = bundles.map { e, b, _ -> [String] in
            ["#\(e.id)", e.fileName, String(e.sha256.prefix(16)) + "…", e.state,
             b.proofs.map { "\($0.notary) \($0.state.rawValue)" }.joined(separator: ", ").ifEmpty("none")]
        }
        sections.append(.init("Items", bundles.isEmpty ? [.paragraph("The case has no items.")] : [.table(columns, rows)]))

        var details: [Document.Element] = []
        for (e, b, events) in bundles {
            details.append(.subheading("Item #\(e.id) · \(e.fileName)"))
            details.append(.field("Folder", e.folder))
            details.append(.hash("SHA-256", e.sha256))
            details.append(.field("Size", "\(e.size) bytes"))
            details.append(.field("Taken", time(e.dateTaken)))
            if let media = b.item.media { details.append(.field("Media", media)) }
            for p in b.proofs {
                var text = "\(p.kind.label), \(p.state.rawValue)"
                if let at = p.provenAt { text += ", \(time(at))" }
                if let r = p.remoteID { text += ", \(p.kind.remoteIDLabel(pending: p.state == .pending)) \(r)" }
                details.append(.field("Proof \(p.notary)", text))
            }
            if b.proofs.isEmpty { details.append(.field("Proofs", "none recorded")) }
            if !e.tags.isEmpty { details.append(.field("Tags", e.tags.joined(separator: ", "))) }
            if let s = e.supersededBy { details.append(.field("Superseded", "by item #\(s) (a later version of the same file)")) }
            var kinds: [String: Int] = [:]
            for ev in events { kinds[ev.kind, default: 0] += 1 }
            let summary = kinds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            details.append(.field("Custody", "\(events.count) events (\(summary)); first \(events.first.map { eventTime($0.at) } ?? "-")"))
            if let head = events.last?.hash { details.append(.hash("Custody head", head)) }
            details.append(.spacer(6))
        }
        if !details.isEmpty { sections.append(.init("Item details", details)) }

        sections.append(.init("Case custody", m.caseEvents.isEmpty ? [.paragraph("No case events.")] : [
            .table([Document.Column("SEQ", width: 7), Document.Column("AT (UTC)", width: 31), Document.Column("EVENT", width: 16),
                    Document.Column("ITEM", width: 7), Document.Column("BY", width: 17), Document.Column("HASH", width: 22, mono: true)],
                   m.caseEvents.map { ["\($0.seq)", $0.at, $0.kind, $0.itemID.map { "#\($0)" } ?? "", $0.actor, String($0.hash.prefix(16)) + "…"] }),
        ]))
        sections.append(.init("How to verify", [
            .paragraph("Every file of this package is listed with its SHA-256 in SHA256SUMS; from the package's folder, "
                       + "`sha256sum -c SHA256SUMS` checks them all. Each item's folder is a complete evidence bundle whose "
                       + "VERIFY.md gives the `openssl ts -verify` command for its time-stamp, to be run with the time-stamping "
                       + "authority's CA certificate obtained from the authority, never from this package. "
                       + "custody.csv lists every custody event of the case and its items with the hashes that chain them."),
        ]))
        return Document(title: "Disclosure package", tag: "Case \(m.case.name)",
                        statement: "This index lists the \(m.items.count) item(s) of case \(m.case.name) disclosed in this package, "
                            + "with their digests, proofs and custody records.",
                        sections: sections, runningHeader: "Disclosure package · case \(m.case.name)",
                        generatedAt: m.generatedAt, subject: "Disclosure package, case \(m.case.name)",
                        keywords: m.items.map { "sha256:\($0.sha256)" }.joined(separator: " "))
    }
}

extension String {
    func ifEmpty(_ other: String) -> String { isEmpty ? other : self }
}
