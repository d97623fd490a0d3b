import Foundation

/// The QED emulation's reports, in memory and in `<state-dir>/reports.json`. Every change is
/// written to a temporary file and renamed over the old one, so a sandbox killed at any
/// moment restarts with either the previous or the new set of reports, never a torn file.
public actor QEDReportStore {
    public nonisolated let path: String
    private var reports: [QEDReport]
    private var bySlug: [String: Int]

    private struct FileFormat: Codable {
        var version: Int
        var reports: [QEDReport]
    }

    /// Loads `path` if it exists. Throws `SandboxError.stateFile` if it cannot be read.
    public init(path: String) throws {
        self.path = path
        var loaded: [QEDReport] = []
        if FileManager.default.fileExists(atPath: path) {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                loaded = try Self.decoder().decode(FileFormat.self, from: data).reports
            } catch {
                throw SandboxError.stateFile(path: path, reason: "\(error)")
            }
        }
        self.reports = loaded
        self.bySlug = Dictionary(loaded.enumerated().map { ($1.slug, $0) }, uniquingKeysWith: { a, _ in a })
    }

    public var count: Int { reports.count }

    public func report(slug: String) -> QEDReport? {
        bySlug[slug].map { reports[$0] }
    }

    /// Reports for `hash` (all reports when nil), newest first.
    public func reports(hash: String?) -> [QEDReport] {
        reports.reversed().filter { hash == nil || $0.hash == hash }
    }

    public func contains(slug: String) -> Bool { bySlug[slug] != nil }

    /// Adds `report` and persists. Throws `SandboxError.stateFile` if the file cannot be written
    /// (the report is then not kept either, so memory and disk agree).
    public func add(_ report: QEDReport) throws {
        reports.append(report)
        do {
            try persist()
        } catch {
            reports.removeLast()
            throw error
        }
        bySlug[report.slug] = reports.count - 1
    }

    public func removeAll() throws {
        reports.removeAll()
        bySlug.removeAll()
        try persist()
    }

    private func persist() throws {
        do {
            let data = try Self.encoder().encode(FileFormat(version: 1, reports: reports))
            // .atomic writes a temporary file beside the target and renames it into place.
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw SandboxError.stateFile(path: path, reason: "\(error)")
        }
    }

    // Dates in the API's own microsecond form, so a reloaded report prints exactly as before.
    private static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
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
