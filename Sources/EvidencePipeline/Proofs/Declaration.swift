import EvidenceCatalog
import EvidenceCertificate
import EvidenceCore
import EvidenceStore
import Foundation

/// A declaration in the form of a certification of authenticity (Federal Rules of Evidence
/// 902(13) and 902(14)): the items and their SHA-256 digests, the process that produced and
/// kept them, the tool's version and its own executable's SHA-256, and a signature block for the
/// custodian. Prepared for signature: the document says who must sign it and that it is not
/// legal advice.
public enum Declaration {
    public struct Declarant: Sendable {
        public var custodian: String
        public var role: String?
        public var agency: String?
        public var caseName: String?
        public init(custodian: String, role: String?, agency: String?, caseName: String?) {
            self.custodian = custodian; self.role = role; self.agency = agency; self.caseName = caseName
        }
    }

    public static let process = [
        "Capture devices write each recording or file into a folder watched by evidence. A file is taken only once it is "
            + "completely written (its size and modification time unchanged for the rule's settle time); a file that changes "
            + "afterwards becomes a new item and the earlier one is marked superseded, never replaced.",
        "While the file is read, its SHA-256 digest (FIPS 180-4) is computed over every byte, and the bytes are stored "
            + "under that digest in a content-addressed store written with a temporary name, flushed to disk and renamed: "
            + "the stored copy is byte for byte the data received, and any later change to it changes its digest.",
        "The digest is submitted to the time-stamping authorities and notaries the operator configured; an RFC 3161 "
            + "time-stamp token signed by the authority binds the digest to a time that the authority, not this system, attests.",
        "Every action on an item (intake, each proof, certificate, archive copy, share, view, download, disclosure) is "
            + "recorded in an append-only custody log in which each entry carries the SHA-256 of the one before it, so an "
            + "entry changed, inserted or removed afterwards breaks the chain for everyone who checks it.",
        "A copy of an item is authenticated by digital identification: its SHA-256 digest, computed with any standard tool "
            + "(for example `sha256sum`), equals the digest stated for it if and only if it is identical to the data received.",
    ]

    /// `executable`: the `evidence` binary whose SHA-256 the declaration names.
    public static func document(home: EvidenceHome, items: [Item], declarant: Declarant, timezone: LocalTime,
                                executable: String, now: Date = Date()) throws -> Document {
        var sections: [Document.Section] = []
        var who: [Document.Element] = [.field("Name", declarant.custodian)]
        if let r = declarant.role { who.append(.field("Title / role", r)) }
        if let a = declarant.agency { who.append(.field("Agency", a)) }
        if let c = declarant.caseName { who.append(.field("Case / incident", c)) }
        sections.append(.init("Declarant", who))

        var listed: [Document.Element] = []
        for item in items {
            let sources = try home.catalog.sources(itemID: item.id)
            let proofs = try home.catalog.proofs(itemID: item.id)
            let certificates = try home.catalog.certificates(itemID: item.id)
            let name = sources.first?.name ?? item.sha256.hex
            listed.append(.subheading("Item #\(item.id) · \(name)"))
            listed.append(.hash("SHA-256", item.sha256.hex))
            listed.append(.field("Size", "\(item.size) bytes"))
            if let m = item.media { listed.append(.field("Media", m.plainSummary(fileName: name))) }
            listed.append(.field("Taken", item.dateTaken.map(timezone.both) ?? "not recorded"))
            listed.append(.field("Received", timezone.both(item.createdAt)))
            for s in sources.prefix(3) { listed.append(.field("Source", s.path + (s.rule.map { " (rule \($0))" } ?? ""))) }
            for p in proofs {
                var text = "\(p.kind.label), \(p.state.rawValue)"
                if let at = p.provenAt { text += ", \(timezone.both(at))" }
                if let r = p.remoteID { text += ", \(p.kind.remoteIDLabel(pending: p.state == .pending)) \(r)" }
                listed.append(.field("Proof \(p.notary)", text))
            }
            for c in certificates where c.origin == "evidence" { listed.append(.hash("Certificate", c.sha256.hex)) }
            if let by = item.supersededBy { listed.append(.field("Note", "superseded by item #\(by), a later version of the same file")) }
            listed.append(.spacer(6))
        }
        sections.append(.init("Records", listed))
        sections.append(.init("Process", process.map { .paragraph($0) }))

        let exe = EvidenceVersion.executableSHA256(path: executable) ?? "unavailable"
        sections.append(.init("System", [
            .field("Software", "evidence \(EvidenceVersion.string)"),
            .hash("Executable", exe),
            .field("Host", ProcessInfo.processInfo.hostName),
            .field("Prepared", timezone.both(now)),
        ]))
        let count = items.count == 1 ? "the record" : "the \(items.count) records"
        sections.append(.init("Declaration", [
            .paragraph("I, \(declarant.custodian), declare that I am \(declarant.role.map { "the \($0)" } ?? "a custodian of the records described above or another qualified person")"
                       + (declarant.agency.map { " of \($0)" } ?? "")
                       + ", and that I am familiar with the system and process described above. \(count.prefix(1).uppercased() + count.dropFirst()) "
                       + "described above \(items.count == 1 ? "was" : "were") generated by that process, which produces an accurate result "
                       + "(Federal Rule of Evidence 902(13)), and each is identified by the SHA-256 digest stated for it, by which any copy "
                       + "of it is authenticated by a process of digital identification (Federal Rule of Evidence 902(14))."),
            .paragraph("I declare under penalty of perjury that the foregoing is true and correct."),
            .signature(["Signature", ""]),
            .signature(["Name: \(declarant.custodian)", "Title: \(declarant.role ?? "")"]),
            .signature(["Date", "Place"]),
            .paragraph("Prepared by evidence \(EvidenceVersion.string) for review and signature by the declarant; the declarant, "
                       + "not the software, makes this declaration. Not legal advice: the form and the law that applies are for counsel."),
        ]))
        return Document(title: "Certification of authenticity", tag: items.count == 1 ? "Item #\(items[0].id)" : "\(items.count) items",
                        statement: "Certification of records generated by an electronic process or system (Fed. R. Evid. 902(13)) "
                            + "and of data copied from an electronic device, storage medium or file (Fed. R. Evid. 902(14)).",
                        sections: sections, runningHeader: "Certification of authenticity · \(declarant.custodian)",
                        generatedAt: now, subject: "Certification of authenticity by \(declarant.custodian)",
                        keywords: items.map { "sha256:\($0.sha256.hex)" }.joined(separator: " "))
    }
}
