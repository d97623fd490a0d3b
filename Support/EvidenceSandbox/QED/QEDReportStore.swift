import Foundation

/// The QED emulation's reports, in memory and in `<state-dir>/reports.json`.
///
/// The file is a journal: a first line `{"version":2}`, then one report per line (JSON Lines),
/// appended as reports are made. A submission costs one appended line, not a rewrite of every
/// report held (which made the 1,000th submission of a bench run 1,000 times dearer than the
/// first). A sandbox killed in the middle of an append leaves a last line without its newline;
/// it is dropped on the next start, and the file is cut back to its last whole line. Removing
/// every report writes a new file beside the old one and renames it over it. A file in the
/// old form (one JSON object holding every report, version 1) is read and rewritten as a
/// journal.
public actor QEDReportStore {
    public nonisolated let path: String
    private var reports: [QEDReport]
    private var bySlug: [String: Int]
    private var byHash: [String: [Int]]
    private var journal: FileHandle

    private struct Header: Codable { var version: Int }
    private struct OldFormat: Codable {
        var version: Int
        var reports: [QEDReport]
    }

    /// Loads `path` if it exists and opens it for appending. Throws `SandboxError.stateFile` if
    /// it cannot be read, parsed or opened.
    public init(path: String) throws {
        self.path = path
        var loaded: [QEDReport] = []
        var rewrite = true
        if FileManager.default.fileExists(atPath: path) {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                if let first = data.firstIndex(of: UInt8(ascii: "\n")),
                   let header = try? JSONDecoder().decode(Header.self, from: data[..<first]), header.version == 2 {
                    var start = data.index(after: first)
                    while let end = data[start...].firstIndex(of: UInt8(ascii: "\n")) {
                        loaded.append(try Self.decoder().decode(QEDReport.self, from: data[start..<end]))
                        start = data.index(after: end)
                    }
                    // Whole lines only: a torn last line (a kill mid-append) is cut off below.
                    rewrite = start != data.endIndex
                } else {
                    loaded = try Self.decoder().decode(OldFormat.self, from: data).reports
                }
            } catch {
                throw SandboxError.stateFile(path: path, reason: "\(error)")
            }
        }
        if rewrite { try Self.writeWhole(loaded, to: path) }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw SandboxError.stateFile(path: path, reason: "cannot be opened for writing")
        }
        do { try handle.seekToEnd() } catch {
            throw SandboxError.stateFile(path: path, reason: "\(error)")
        }
        self.journal = handle
        self.reports = loaded
        self.bySlug = [:]
        self.byHash = [:]
        for (i, r) in loaded.enumerated() {
            if bySlug[r.slug] == nil { bySlug[r.slug] = i }
            byHash[r.hash, default: []].append(i)
        }
    }

    public var count: Int { reports.count }

    public func report(slug: String) -> QEDReport? {
        bySlug[slug].map { reports[$0] }
    }

    /// Reports for `hash` (all reports when nil), newest first.
    public func reports(hash: String?) -> [QEDReport] {
        guard let hash else { return reports.reversed() }
        return (byHash[hash] ?? []).reversed().map { reports[$0] }
    }

    public func contains(slug: String) -> Bool { bySlug[slug] != nil }

    /// Adds `report` and appends it to the journal. Throws `SandboxError.stateFile` if the line
    /// cannot be written (the report is then not kept either, so memory and disk agree).
    public func add(_ report: QEDReport) throws {
        var end: UInt64 = 0
        do {
            end = try journal.offset()
            var line = try Self.encoder().encode(report)
            line.append(UInt8(ascii: "\n"))
            try journal.write(contentsOf: line)
        } catch {
            // A line written in part (a full disk) is cut off, so the next one starts a line of its own.
            try? journal.truncate(atOffset: end)
            throw SandboxError.stateFile(path: path, reason: "\(error)")
        }
        reports.append(report)
        bySlug[report.slug] = reports.count - 1
        byHash[report.hash, default: []].append(reports.count - 1)
    }

    public func removeAll() throws {
        try Self.writeWhole([], to: path)
        // The handle still points at the replaced file: reopen onto the new one.
        // The old handle points at the replaced file: appends to it would be lost, so a file
        // that cannot be reopened is an error that says what to do.
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw SandboxError.stateFile(path: path, reason: "emptied, but cannot be opened again for writing: restart the sandbox")
        }
        try? journal.close()
        do { try handle.seekToEnd() } catch {
            throw SandboxError.stateFile(path: path, reason: "\(error)")
        }
        journal = handle
        reports.removeAll()
        bySlug.removeAll()
        byHash.removeAll()
    }

    /// The whole journal for `reports`, written beside `path` and renamed over it.
    private static func writeWhole(_ reports: [QEDReport], to path: String) throws {
        do {
            var data = try JSONEncoder().encode(Header(version: 2))
            data.append(UInt8(ascii: "\n"))
            for r in reports {
                data.append(try encoder().encode(r))
                data.append(UInt8(ascii: "\n"))
            }
            // .atomic writes a temporary file beside the target and renames it into place.
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw SandboxError.stateFile(path: path, reason: "\(error)")
        }
    }

    // Dates in the API's own microsecond form, so a reloaded report prints exactly as before.
    // One line per report: no pretty printing.
    private static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .custom { date, enc in
            var c = enc.singleValueContainer()
            try c.encode(QEDDateFormat.string(date))
        }
        return e
    }

    private static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .custom { dec in
            let c = try dec.singleValueContainer()
            let text = try c.decode(String.self)
            guard case .date(let date) = QEDDateFormat.parse(text) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO 8601 date: \(text)")
            }
            return date
        }
        return d
    }
}
