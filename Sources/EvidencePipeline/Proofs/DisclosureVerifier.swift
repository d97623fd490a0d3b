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

    /// Regular files below `dir`, as relative paths; links, devices and odd names are problems.
    static func walk(_ dir: String, prefix: String = "", depth: Int = 0, into files: inout Set<String>, problems: inout [String]) {
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
            case S_IFDIR: walk(dir + "/" + s, prefix: rel, depth: depth + 1, into: &files, problems: &problems)
            case S_IFLNK: problems.append("\(shown(rel)): a symbolic link (a package holds only regular files; not followed)")
            default: problems.append("\(shown(rel)): not a regular file")
            }
        }
    }

    public static func verify(_ dir: String, trust: TSATrust) -> Report {
        var report = Report()
        func check(_ name: String, _ ok: Bool, _ detail: String) {
            report.checks.append(.init(check: name, ok: ok, detail: detail))
        }
        var present = Set<String>()
        var problems: [String] = []
        walk(dir, into: &present, problems: &problems)
        for p in problems { check("package layout", false, p) }

        // 1. SHA256SUMS over every file of the package.
        guard let sums = FileManager.default.contents(atPath: dir + "/SHA256SUMS") else {
            check("SHA256SUMS", false, "missing or unreadable"); return report
        }
        var listed: [String: String] = [:]
        var bad: [String] = []
        var intact = 0
        for (n, line) in sums.split(separator: 0x0A).enumerated() {
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

        // 2. The manifest, VERIFY.md made from it.
        guard let data = FileManager.default.contents(atPath: dir + "/disclosure.json") else {
            check("manifest", false, "disclosure.json missing"); return report
        }
        do { try StrictJSON.check(data) } catch { check("manifest", false, "disclosure.json: \(error.description)"); return report }
        let m: DisclosureManifest
        do { m = try CanonicalJSON.decoder().decode(DisclosureManifest.self, from: data) } catch {
            check("manifest", false, "disclosure.json: \(shown(BundleVerifier.decodingProblem(error)))"); return report
        }
        check("manifest", m.format == DisclosureManifest.formatName, "format \(shown(m.format)), case \(shown(m.case.name)), \(m.items.count) item(s)")
        let verifyMD = FileManager.default.contents(atPath: dir + "/VERIFY.md") ?? Data()
        let expected = Data(DisclosureWriter.verifyText(m).utf8)
        check("VERIFY.md is the manifest's", verifyMD == expected,
              verifyMD == expected ? "byte for byte" : "differs from the text the manifest produces: do not follow it (\(BundleVerifier.firstDifference(verifyMD, expected)))")

        // 3. The case's own events: each hash recomputed; replayed, they name exactly the items.
        var eventProblems: [String] = []
        for e in m.caseEvents {
            let h = SHA256Hasher.hash(CustodyEvent.chainInput(prevHash: e.prevHash, body: e.canonicalBody)).hex
            if h != e.hash { eventProblems.append("event #\(e.seq) hashes to \(h.prefix(16))…, says \(shown(String(e.hash.prefix(16))))…") }
            if CustodyCrossCheck.details(e)["case"] != m.case.name { eventProblems.append("event #\(e.seq) is not about case \(shown(m.case.name))") }
        }
        let book = CaseBook(events: m.caseEvents.sorted { $0.seq < $1.seq })
        let inCase = Set(book.cases[m.case.name]?.items ?? [])
        let inPackage = Set(m.items.map(\.id))
        if inCase != inPackage {
            eventProblems.append("the case's events name items \(inCase.sorted().map { "#\($0)" }.joined(separator: ", ")), the package holds "
                                 + inPackage.sorted().map { "#\($0)" }.joined(separator: ", "))
        }
        check("case custody events", eventProblems.isEmpty,
              eventProblems.isEmpty ? "\(m.caseEvents.count) events, each hash recomputed; they add exactly the package's \(m.items.count) item(s)"
                                    : eventProblems.joined(separator: "; "))

        // 4. Each item's bundle, and the custody report made from what the bundles hold.
        var itemEvents: [[CustodyEvent]] = []
        var folders = Set<String>()
        for e in m.items {
            let parts = e.folder.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "items", !parts[1].isEmpty, parts[1] != ".", parts[1] != "..", folders.insert(e.folder).inserted else {
                check("item #\(e.id)", false, "folder \(shown(e.folder)) is not one folder under items/ (or is listed twice)"); continue
            }
            let path = dir + "/" + e.folder
            let bundle = BundleVerifier.verify(path, trust: trust)
            report.items.append(ItemResult(id: e.id, folder: e.folder, report: bundle))
            let bm = (FileManager.default.contents(atPath: path + "/manifest.json")).flatMap { try? CanonicalJSON.decoder().decode(BundleManifest.self, from: $0) }
            let same = bm.map { $0.item.id == e.id && $0.item.sha256 == e.sha256 && $0.item.size == e.size } ?? false
            check("item #\(e.id) is its bundle's", same, same ? "\(shown(e.folder)): sha256 \(e.sha256)" : "\(shown(e.folder)): its bundle is of another item or content")
            let jsonl = FileManager.default.contents(atPath: path + "/custody.jsonl") ?? Data()
            itemEvents.append(jsonl.split(separator: 0x0A).compactMap { try? CanonicalJSON.decoder().decode(CustodyEvent.self, from: Data($0)) })
        }
        for extra in Set(present.compactMap { rel -> String? in
            let p = rel.split(separator: "/")
            return p.count >= 3 && p[0] == "items" ? "items/" + p[1] : nil
        }).subtracting(folders).sorted() {
            check("package layout", false, "\(shown(extra)): a folder the manifest does not list")
        }
        let csv = FileManager.default.contents(atPath: dir + "/custody.csv") ?? Data()
        let expectedCSV = Data(DisclosureWriter.custodyCSV(m, itemEvents: itemEvents).utf8)
        check("custody.csv is the events'", csv == expectedCSV,
              csv == expectedCSV ? "\(m.caseEvents.count) case and \(itemEvents.reduce(0) { $0 + $1.count }) item events, in log order"
                                 : "differs from the case's and the bundles' custody events (\(BundleVerifier.firstDifference(csv, expectedCSV)))")
        let index = FileManager.default.contents(atPath: dir + "/index.pdf")?.prefix(5)
        check("index.pdf", index == Data("%PDF-".utf8), index == Data("%PDF-".utf8) ? "a PDF" : "missing or not a PDF")
        return report
    }
}
