import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation
import Glibc

/// `evidence verify DIR` for a disclosure package: the package's SHA256SUMS against every file
/// below it (nothing unlisted, nothing missing), its manifest, VERIFY.md and custody.csv
/// recomputed from what the bundles hold, the case's own custody events, and every item's
/// bundle point by point (`BundleVerifier`). Verified only when every item is.
public enum DisclosureVerifier {
    public static func isPackage(_ dir: String) -> Bool {
        FileManager.default.fileExists(atPath: dir + "/disclosure.json") && FileManager.default.fileExists(atPath: dir + "/SHA256SUMS")
    }

    public struct ItemResult: Sendable {
        public var id: Int64
        public var folder: String
        public var report: BundleVerifier.Report
    }

    public struct Report: Sendable {
        public var checks: [BundleVerifier.Check] = []
        public var items: [ItemResult] = []
        public var notes: [String] = []

        public var verdict: BundleVerifier.Verdict {
            if checks.isEmpty || checks.contains(where: { !$0.ok && $0.unproven != true }) { return .failed }
            if items.contains(where: { $0.report.verdict == .failed }) { return .failed }
            return !items.isEmpty && items.allSatisfy({ $0.report.verdict == .verified }) && checks.allSatisfy(\.ok) ? .verified : .notProven
        }
    }

    static func shown(_ s: String) -> String { TerminalText.escape(s) }

    /// Regular files and folders below `dir`, as relative paths; links, devices and odd names
    /// are problems.
    static func walk(_ dir: String, prefix: String = "", depth: Int = 0, into files: inout Set<String>,
                     folders: inout Set<String>, problems: inout [String]) {
        guard depth <= 4, let d = opendir(dir) else {
            problems.append("\(shown(dir)): cannot list, or nested too deep"); return
        }
        defer { closedir(d) }
        while let entry = readdir(d) {
            let name: [UInt8] = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix(while: { $0 != 0 })) }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            let s = String(decoding: name, as: UTF8.self)
            let rel = prefix.isEmpty ? s : prefix + "/" + s
            if let p = BundleFiles.nameProblem(name) { problems.append("\(shown(rel)): \(p)"); continue }
            var st = stat()
            guard lstat(dir + "/" + s, &st) == 0 else { problems.append("\(shown(rel)): cannot stat"); continue }
            switch st.st_mode & S_IFMT {
            case S_IFREG: files.insert(rel)
            case S_IFDIR:
                folders.insert(rel)
                walk(dir + "/" + s, prefix: rel, depth: depth + 1, into: &files, folders: &folders, problems: &problems)
            case S_IFLNK: problems.append("\(shown(rel)): a symbolic link (a package holds only regular files; not followed)")
            default: problems.append("\(shown(rel)): not a regular file")
            }
        }
    }

    public static func verify(_ dir: String, trust: TSATrust, at: Date? = nil) -> Report {
        var report = Report()
        func check(_ name: String, _ ok: Bool, _ detail: String) {
            report.checks.append(.init(check: name, ok: ok, detail: detail))
        }
        var present = Set<String>()
        var folders = Set<String>()
        var problems: [String] = []
        walk(dir, into: &present, folders: &folders, problems: &problems)
        for p in problems { check("package layout", false, p) }

        // 1. SHA256SUMS over every file of the package.
        guard let sums = BundleFiles.readRegular(dir + "/SHA256SUMS") else {
            check("SHA256SUMS", false, "missing, not a regular file, or too large"); return report
        }
        var listed: [String: String] = [:]
        var bad: [String] = []
        var intact = 0
        if sums.last != 0x0A { check("SHA256SUMS", false, "does not end with a newline") }
        for (n, line) in sums.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast(sums.last == 0x0A ? 1 : 0).enumerated() {
            let bytes = Array(line)
            guard bytes.count > 66, bytes[64] == 0x20, bytes[65] == 0x20,
                  let hex = String(validating: bytes[0..<64], as: UTF8.self), SHA256Digest(hex: hex) != nil, hex == hex.lowercased(),
                  let rel = String(validating: bytes[66...], as: UTF8.self) else {
                check("SHA256SUMS", false, "line \(n + 1) is not \"<sha256 hex>  <path>\""); continue
            }
            let parts = rel.split(separator: "/", omittingEmptySubsequences: false)
            guard !rel.hasPrefix("/"), !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
                check("SHA256SUMS", false, "line \(n + 1): \(shown(rel)) leaves the package"); continue
            }
            guard listed[rel] == nil else { check("SHA256SUMS", false, "\(shown(rel)) is listed twice"); continue }
            listed[rel] = hex
            guard present.contains(rel) else { bad.append("\(shown(rel)): listed but missing"); continue }
            do {
                let r = try FileHasher.hash(path: dir + "/" + rel)
                if r.digest.hex == hex { intact += 1 } else { bad.append("\(shown(rel)): hashes to \(r.digest.hex.prefix(16))…, SHA256SUMS says \(hex.prefix(16))…") }
            } catch {
                bad.append("\(shown(rel)): \(shown(String(describing: error)))")
            }
        }
        for extra in present.subtracting(listed.keys).subtracting(["SHA256SUMS"]).sorted() {
            bad.append("\(shown(extra)): present but not in SHA256SUMS")
        }
        check("every file intact", bad.isEmpty, bad.isEmpty ? "\(intact) files match SHA256SUMS, none unlisted" : bad.joined(separator: "; "))
        for top in DisclosureManifest.topFiles where listed[top] == nil {
            check("package layout", false, "\(top): missing from SHA256SUMS")
        }

        // 2. The manifest: its texts, its items (each once), VERIFY.md made from it.
        guard let data = BundleFiles.readRegular(dir + "/disclosure.json") else {
            check("manifest", false, "disclosure.json missing, not a regular file, or too large"); return report
        }
        do { try StrictJSON.check(data) } catch { check("manifest", false, "disclosure.json: \(error.description)"); return report }
        let m: DisclosureManifest
        do { m = try CanonicalJSON.decoder().decode(DisclosureManifest.self, from: data) } catch {
            check("manifest", false, "disclosure.json: \(shown(BundleVerifier.decodingProblem(error)))"); return report
        }
        var manifestProblems: [String] = []
        if m.format != DisclosureManifest.formatName { manifestProblems.append("format \(shown(m.format)) is not \(DisclosureManifest.formatName)") }
        if let p = CaseBook.nameProblem(m.case.name) { manifestProblems.append("the case name \(p)") }
        for (field, value) in [("generatedBy", m.generatedBy), ("tool", m.tool), ("timezone", m.timezone), ("case.title", m.case.title ?? ""),
                               ("case.openedBy", m.case.openedBy)] {
            if let p = CertificateLabels.lineProblem(value) { manifestProblems.append("\(field) \(p)") }
        }
        if Set(m.items.map(\.id)).count != m.items.count { manifestProblems.append("an item is listed twice") }
        if Set(m.items.map(\.sha256)).count != m.items.count { manifestProblems.append("the same content is listed twice") }
        check("manifest", manifestProblems.isEmpty,
              manifestProblems.isEmpty ? "format \(m.format), case \(m.case.name), \(m.items.count) item(s)" : manifestProblems.joined(separator: "; "))
        guard manifestProblems.isEmpty else { return report }
        let verifyMD = BundleFiles.readRegular(dir + "/VERIFY.md") ?? Data()
        let expected = Data(DisclosureWriter.verifyText(m).utf8)
        check("VERIFY.md is the manifest's", verifyMD == expected,
              verifyMD == expected ? "byte for byte" : "differs from the text the manifest produces: do not follow it (\(BundleVerifier.firstDifference(verifyMD, expected)))")

        // 3. Only what the writer writes: the package's own files, `items/`, and the listed folders.
        let allowed = Set(m.items.map(\.folder))
        for f in folders.sorted() where f != "items" {
            let parts = f.split(separator: "/", omittingEmptySubsequences: false)
            let owner = parts.count >= 2 ? "items/" + parts[1] : f
            if parts.first != "items" || !allowed.contains(owner) {
                check("package layout", false, "\(shown(f)): a folder the manifest does not list")
            }
        }
        for rel in present.union(listed.keys).sorted() where rel != "SHA256SUMS" && !DisclosureManifest.topFiles.contains(rel) {
            let parts = rel.split(separator: "/", omittingEmptySubsequences: false)
            if parts.count < 3 || parts[0] != "items" || !allowed.contains("items/" + parts[1]) {
                check("package layout", false, "\(shown(rel)): a file the package does not have")
            }
        }

        // 4. Each item's bundle: the same item, in the current format, in the folder the writer names.
        var itemEvents: [[CustodyEvent]] = []
        for e in m.items {
            let parts = e.folder.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "items", !parts[1].isEmpty, parts[1] != ".", parts[1] != ".." else {
                check("item #\(e.id)", false, "folder \(shown(e.folder)) is not one folder under items/"); continue
            }
            let path = dir + "/" + e.folder
            let bundle = BundleVerifier.verify(path, trust: trust, at: at)
            report.items.append(ItemResult(id: e.id, folder: e.folder, report: bundle))
            let bm = BundleFiles.readRegular(path + "/manifest.json").flatMap { try? CanonicalJSON.decoder().decode(BundleManifest.self, from: $0) }
            let jsonl = BundleFiles.readRegular(path + "/custody.jsonl") ?? Data()
            let events = jsonl.split(separator: 0x0A).compactMap { try? CanonicalJSON.decoder().decode(CustodyEvent.self, from: Data($0)) }
            itemEvents.append(events)
            var differs: [String] = []
            if let bm {
                if bm.format != BundleManifest.formatName { differs.append("its bundle is of format \(shown(bm.format)), not \(BundleManifest.formatName)") }
                if bm.item.id != e.id || bm.item.sha256 != e.sha256 || bm.item.size != e.size { differs.append("its bundle is of another item or content") }
                if bm.item.fileName != e.fileName { differs.append("file name \(shown(e.fileName)) ≠ the bundle's \(shown(bm.item.fileName))") }
                if bm.item.state != e.state { differs.append("state \(shown(e.state)) ≠ the bundle's \(shown(bm.item.state))") }
                if bm.item.dateTaken != e.dateTaken { differs.append("time taken differs from the bundle's") }
                if e.folder != DisclosureWriter.folderName(id: e.id, fileName: bm.item.fileName) {
                    differs.append("folder \(shown(e.folder)) is not the one named after the item (\(shown(DisclosureWriter.folderName(id: e.id, fileName: bm.item.fileName))))")
                }
            } else {
                differs.append("its bundle has no readable manifest.json")
            }
            // Tags and the successor are what the item's own custody events say.
            let replayed = CaseBook(events: events)
            if (replayed.tags[e.id] ?? []).sorted() != e.tags { differs.append("tags \(e.tags.joined(separator: ",")) ≠ its custody events'") }
            let successor = events.last { $0.kind == CustodyEventKind.superseded.rawValue }.flatMap { CustodyCrossCheck.details($0)["by"] }.flatMap { Int64($0) }
            if successor != e.supersededBy { differs.append("superseded-by differs from its custody events") }
            check("item #\(e.id) is its bundle's", differs.isEmpty,
                  differs.isEmpty ? "\(shown(e.folder)): sha256 \(e.sha256)" : "\(shown(e.folder)): " + differs.joined(separator: "; "))
        }

        // 5. The case's own events: each hash recomputed, each one the same event its item's bundle
        //    holds (and every event of this case a bundle holds is here), replayed to exactly the items.
        var eventProblems: [String] = []
        var seen: [Int64: String] = [:]
        for e in m.caseEvents {
            let h = SHA256Hasher.hash(CustodyEvent.chainInput(prevHash: e.prevHash, body: e.canonicalBody)).hex
            if h != e.hash { eventProblems.append("event #\(e.seq) hashes to \(h.prefix(16))…, says \(shown(String(e.hash.prefix(16))))…") }
            if ![CustodyEventKind.caseOpened, .caseAdded, .caseRemoved].map(\.rawValue).contains(e.kind) {
                eventProblems.append("event #\(e.seq) is a \(shown(e.kind)) event, not a case event")
            }
            if CustodyCrossCheck.details(e)["case"] != m.case.name { eventProblems.append("event #\(e.seq) is not about case \(shown(m.case.name))") }
            if seen[e.seq] != nil { eventProblems.append("event #\(e.seq) is listed twice") }
            seen[e.seq] = e.hash
        }
        for list in itemEvents {
            for e in list {
                if let h = seen[e.seq], h != e.hash { eventProblems.append("event #\(e.seq) differs between the case's events and an item's bundle") }
            }
        }
        for (entry, list) in zip(m.items, itemEvents) {
            let inBundle = list.filter { [CustodyEventKind.caseAdded.rawValue, CustodyEventKind.caseRemoved.rawValue].contains($0.kind)
                && CustodyCrossCheck.details($0)["case"] == m.case.name }
            let inCase = m.caseEvents.filter { $0.itemID == entry.id }
            if Set(inBundle.map(\.hash)) != Set(inCase.map(\.hash)) {
                eventProblems.append("item #\(entry.id)'s bundle records other events of case \(shown(m.case.name)) than the package lists")
            }
        }
        let book = CaseBook(events: m.caseEvents.sorted { $0.seq < $1.seq })
        if let replayed = book.cases[m.case.name] {
            if replayed.title != m.case.title || replayed.openedAt != m.case.openedAt || replayed.openedBy != m.case.openedBy {
                eventProblems.append("the case's title, opening time or opener differ from its case-opened event")
            }
        } else {
            eventProblems.append("no case-opened event for case \(shown(m.case.name))")
        }
        let inCase = Set(book.cases[m.case.name]?.items ?? [])
        let inPackage = Set(m.items.map(\.id))
        if inCase != inPackage {
            eventProblems.append("the case's events name items \(inCase.sorted().map { "#\($0)" }.joined(separator: ", ")), the package holds "
                                 + inPackage.sorted().map { "#\($0)" }.joined(separator: ", "))
        }
        check("case custody events", eventProblems.isEmpty,
              eventProblems.isEmpty ? "\(m.caseEvents.count) events, each hash recomputed and the same in the items' bundles; they add exactly the package's \(m.items.count) item(s)"
                                    : eventProblems.joined(separator: "; "))
        report.notes.append("case membership is the custody log's record, as the items' bundles hold it: "
                            + "the time-stamps prove each item's content, not who added it to the case")

        let csv = BundleFiles.readRegular(dir + "/custody.csv", limit: 256 << 20) ?? Data()
        let expectedCSV = Data(DisclosureWriter.custodyCSV(m, itemEvents: itemEvents).utf8)
        check("custody.csv is the events'", csv == expectedCSV,
              csv == expectedCSV ? "\(m.caseEvents.count) case and \(itemEvents.reduce(0) { $0 + $1.count }) item events, in log order"
                                 : "differs from the case's and the bundles' custody events (\(BundleVerifier.firstDifference(csv, expectedCSV)))")
        if listed["index.pdf"] != nil {
            report.notes.append("index.pdf is a printable summary, listed in SHA256SUMS but not itself checked: rely on the checks above")
        }
        return report
    }
}
