import EvidenceCatalog
import EvidenceCertificate
import EvidenceCore
import EvidenceStore
import Foundation
import Glibc

/// A disclosure package: every item of a case as its own auditor's bundle, with one index PDF,
/// a CSV custody report, one VERIFY.md and one SHA256SUMS over every file of the package.
///
/// ```
/// SHA256SUMS              every other file below the package, items' files included
/// disclosure.json         the manifest: case, items (folder, hash, size), the case's own custody events
/// VERIFY.md               how to check the whole package with standard tools
/// index.pdf               case, items, hashes, proofs, custody summary, page numbers
/// custody.csv             every custody event of the case and its items, in log order
/// items/<id>-<name>/      each item's bundle (`evidence bundle`), checked on its own by its SHA256SUMS
/// ```
public struct DisclosureManifest: Codable, Sendable {
    public struct CaseInfo: Codable, Sendable {
        public var name: String
        public var title: String?
        public var openedAt: String
        public var openedBy: String
    }
    public struct Entry: Codable, Sendable {
        public var id: Int64
        public var folder: String
        public var fileName: String
        public var sha256: String
        public var size: Int64
        public var state: String
        public var dateTaken: Date?
        public var tags: [String]
        public var supersededBy: Int64?
    }
    public var format: String
    public var `case`: CaseInfo
    public var items: [Entry]
    /// The case's own events (opened, items added and removed), for `custody.csv` and the index.
    public var caseEvents: [CustodyEvent]
    public var generatedAt: Date
    public var generatedBy: String
    public var tool: String
    public var timezone: String

    public static let formatName = "evidence-disclosure/1"
    /// The package's own files besides `items/` (SHA256SUMS covers them and every item file).
    public static let topFiles = ["disclosure.json", "VERIFY.md", "index.pdf", "custody.csv"]
}

public enum DisclosureWriter {
    public struct Written: Sendable {
        public var manifest: DisclosureManifest
        public var files: Int
        public var bytes: Int64
    }

    /// Writes the package for `caseName` into a fresh 0700 work folder beside `target` and
    /// renames it into place when complete (`target` must not exist, or be an empty folder).
    /// `progress` is told each item as its bundle is written.
    public static func write(home: EvidenceHome, book: CaseBook, caseName: String, to target: String,
                             tsaCAFiles: [String: String], timezone: LocalTime, actor: String,
                             progress: (Int, Int, Item) -> Void = { _, _, _ in }) throws -> Written {
        guard let theCase = book.cases[caseName] else { throw BundleError.io(caseName, "no such case") }
        let fm = FileManager.default
        let (target, parent, temp) = try WorkFolder.beside(target)
        var keep = false
        defer { if !keep { try? fm.removeItem(atPath: temp) } }
        try fm.createDirectory(atPath: temp + "/items", withIntermediateDirectories: false)

        // Every file's hash: from each bundle's manifest for its listed files (a large original
        // is not read twice), hashed here for the rest.
        var sums: [(String, String, Int64)] = []
        var entries: [DisclosureManifest.Entry] = []
        var bundles: [(DisclosureManifest.Entry, BundleManifest, [CustodyEvent], [Proof])] = []
        for (n, id) in theCase.items.enumerated() {
            guard let item = try home.catalog.item(id: id) else { throw BundleError.io(caseName, "item #\(id) is not in the catalog") }
            progress(n + 1, theCase.items.count, item)
            let folder = folderName(id: id, fileName: BundleNames.safe(try home.catalog.sources(itemID: id).first?.name ?? item.sha256.hex))
            let bundle = try BundleWriter.write(home: home, item: item, to: temp + "/" + folder, tsaCAFiles: tsaCAFiles)
            for f in bundle.files { sums.append((folder + "/" + f.path, f.sha256, f.size)) }
            for extra in ["manifest.json", "VERIFY.md", "SHA256SUMS"] {
                let r = try FileHasher.hash(path: temp + "/" + folder + "/" + extra)
                sums.append((folder + "/" + extra, r.digest.hex, r.size))
            }
            let entry = DisclosureManifest.Entry(
                id: id, folder: folder, fileName: bundle.item.fileName, sha256: item.sha256.hex, size: item.size,
                state: item.state.rawValue, dateTaken: item.dateTaken, tags: (book.tags[id] ?? []).sorted(), supersededBy: item.supersededBy)
            entries.append(entry)
            bundles.append((entry, bundle, try home.catalog.events(itemID: id), bundle.proofs))
        }
        let caseEvents = try home.catalog.events(kinds: [.caseOpened, .caseAdded, .caseRemoved]).filter {
            CustodyCrossCheck.details($0)["case"] == caseName
        }
        let manifest = DisclosureManifest(
            format: DisclosureManifest.formatName,
            case: .init(name: theCase.name, title: theCase.title, openedAt: theCase.openedAt, openedBy: theCase.openedBy),
            items: entries, caseEvents: caseEvents, generatedAt: Timestamp.truncated(Date()), generatedBy: actor,
            tool: "evidence \(EvidenceVersion.string)", timezone: timezone.identifier)

        func add(_ rel: String, _ data: Data) throws {
            try AtomicFile.write(data, to: temp + "/" + rel, mode: 0o600)
            sums.append((rel, SHA256Hasher.hash(data).hex, Int64(data.count)))
        }
        try add("disclosure.json", try CanonicalJSON.encoder(pretty: true).encode(manifest))
        try add("VERIFY.md", Data(verifyText(manifest).utf8))
        try add("custody.csv", Data(custodyCSV(manifest, itemEvents: bundles.map(\.2)).utf8))
        let index = DisclosureIndex.document(manifest, bundles: bundles.map { ($0.0, $0.1, $0.2) }, timezone: timezone)
        try add("index.pdf", try DocumentRenderer.render(index))
        let text = sums.sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }.map { "\($0.1)  \($0.0)\n" }.joined()
        try AtomicFile.write(Data(text.utf8), to: temp + "/SHA256SUMS", mode: 0o600)
        fsyncDirectory(temp + "/items")
        fsyncDirectory(temp)
        guard rename(temp, target) == 0 else {
            throw BundleError.io(target, "rename from \(temp) failed: \(String(cString: strerror(errno)))")
        }
        fsyncDirectory(parent.isEmpty ? "." : parent)
        keep = true
        return Written(manifest: manifest, files: sums.count + 1, bytes: sums.reduce(0) { $0 + $1.2 })
    }

    /// An item's folder in the package: `items/<id>-<its bundle's file name>`, at most 120 bytes.
    public static func folderName(id: Int64, fileName: String) -> String {
        var folder = "items/\(id)-\(fileName)"
        while folder.utf8.count > 120 { folder.removeLast() }
        return folder
    }

    /// One shell word: single-quoted, a quote inside written as '\''.
    static func shellQuoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// The custody report: the case's events and every event of its items, in log order, one
    /// row each. Cells that a spreadsheet would take for a formula are prefixed with `'`.
    public static func custodyCSV(_ m: DisclosureManifest, itemEvents: [[CustodyEvent]]) -> String {
        var bySeq: [Int64: CustodyEvent] = [:]
        for e in m.caseEvents { bySeq[e.seq] = e }
        for list in itemEvents { for e in list { bySeq[e.seq] = e } }
        var out = "seq,at,item,kind,actor,details,prev_hash,hash\r\n"
        for seq in bySeq.keys.sorted() {
            let e = bySeq[seq]!
            out += [String(e.seq), e.at, e.itemID.map(String.init) ?? "", e.kind, e.actor, e.details, e.prevHash, e.hash]
                .map(csvCell).joined(separator: ",") + "\r\n"
        }
        return out
    }

    static func csvCell(_ s: String) -> String {
        var v = s
        if let f = v.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(f) { v = "'" + v }
        // Quoted also for ';': a spreadsheet in a locale whose list separator is ';' would
        // otherwise split the cell there, and a part starting with '=' would be a formula.
        if v.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == ";" }) {
            v = "\"" + v.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return v
    }

    /// VERIFY.md of the package: made from the manifest alone, so `verify` compares it byte for byte.
    public static func verifyText(_ m: DisclosureManifest) -> String {
        var t = """
        # Disclosure package: case \(m.case.name)

        \(m.items.count) item(s), written \(Timestamp.string(m.generatedAt)) by \(m.generatedBy) with \(m.tool).
        Each item's folder under `items/` is a complete evidence bundle with its own VERIFY.md.

        ## 1. Every file is intact

        From this folder:

            sha256sum -c SHA256SUMS

        Every line must say OK. SHA256SUMS lists every file of the package, the items' files
        included; a file that is not listed was added afterwards.

        ## 2. Each item's time-stamp

        Obtain each time-stamping authority's CA certificate from the authority itself (never
        from this package: anyone can put a CA of their own in a folder), then for each item:

        """
        for e in m.items {
            t += "\n    (cd \(shellQuoted(e.folder)) && sha256sum -c SHA256SUMS)    # item #\(e.id), sha256 \(e.sha256)"
        }
        t += """


        and follow the `openssl ts -verify` lines of each item's own VERIFY.md.

        ## 3. Everything at once

            evidence verify . --trust TSA-CA-FROM-THE-TSA.pem

        checks SHA256SUMS, this file, custody.csv against the items' custody logs, and every
        bundle point by point. index.pdf is a printable summary made from the same records; it is
        not itself checked, so rely on the files above. custody.csv is the custody report (one
        event a line, each with the hash that chains it to the one before).

        """
        return t
    }
}
