import EvidenceCore
import Foundation

/// What `evidence` submits for one file (`POST /v1/reports/`).
public struct QEDSubmission: Sendable, Equatable {
    public var hash: SHA256Digest
    public var fileName: String
    /// Date taken: media `creation_time`, else the file's mtime.
    public var originalCreatedAt: Date
    public var name: String
    public var note: String
    public var metaData: [String: String]

    public init(hash: SHA256Digest, fileName: String, originalCreatedAt: Date, name: String, note: String,
                metaData: [String: String]) {
        self.hash = hash; self.fileName = fileName; self.originalCreatedAt = originalCreatedAt
        self.name = name; self.note = note; self.metaData = metaData
    }

    /// The request body: `provable_files` lists the file itself, so the report proves it by name too.
    func body() throws -> Data {
        try CanonicalJSON.encode(QEDAPI.NewReport(
            hash: hash.hex, provable_files: [.init(hash: hash.hex, file_name: fileName)],
            original_created_at: Timestamp.string(originalCreatedAt), name: name, note: note, meta_data: metaData))
    }
}

/// A QED report as the API returns it. `raw` is the exact JSON received: the confirmed one is
/// kept in the store as the proof receipt.
public struct QEDReport: Sendable, Equatable {
    public enum Status: String, Sendable { case pending, confirmed, failed }

    public var slug: String
    public var status: Status
    public var hash: String
    public var txHash: String?
    public var blockHeight: Int64?
    public var blockTime: Date?
    public var explorerURL: String?
    public var networkName: String?
    public var failureReason: String?
    public var raw: Data

    /// Parses the answer to `GET /v1/reports/<slug>/`: one report object, kept verbatim as `raw`.
    /// Errors name `notary` and say what is wrong with the answer.
    package static func parse(answer body: Data, notary: String) throws(NotaryError) -> QEDReport {
        guard case .object? = WireJSON.decode(JSONTree.self, from: body), let report = WireJSON.decode(QEDAPI.Report.self, from: body) else {
            throw NotaryError("\(notary): the answer is not a JSON object: \(String(decoding: body.prefix(120), as: UTF8.self))",
                              retryable: false)
        }
        return try parse(report, raw: body)
    }

    /// One answer to `GET /v1/reports/?hash=…`: its reports and the absolute (or relative) URL
    /// of the next page, nil on the last one.
    package struct Page: Sendable {
        package var reports: [QEDReport]
        package var next: String?
    }

    /// Why a report list could not be read (the caller adds what came).
    package struct ListError: Error { package var reason: String }

    /// Parses a report list, leniently: a bare JSON array of reports, or a paginated object
    /// with `results` (and `next`, absent or null on the last page); other fields are ignored.
    package static func parseList(_ body: Data) throws(ListError) -> Page {
        guard let list = WireJSON.decode(QEDAPI.ReportList.self, from: body) else {
            throw ListError(reason: "the answer is not JSON")
        }
        let results: [JSONTree]
        var next: String?
        switch list {
        case .array(let array):
            results = array
        case .page(let array, let n):
            results = array
            if let n, !n.isEmpty { next = n }
        case .neither:
            throw ListError(reason: "the report list is neither a JSON array nor an object with \"results\"")
        }
        var reports: [QEDReport] = []
        for (index, element) in results.enumerated() {
            guard case .object = element else {
                throw ListError(reason: "entry \(index) of the report list is not a JSON object")
            }
            let raw = WireJSON.encode(element)
            guard let report = WireJSON.decode(QEDAPI.Report.self, from: raw) else {
                throw ListError(reason: "entry \(index) of the report list cannot be read")
            }
            do { reports.append(try parse(report, raw: raw)) } catch {
                throw ListError(reason: "entry \(index) of the report list: \(error.message)")
            }
        }
        return Page(reports: reports, next: next)
    }

    /// Parses one report object; the error says which field is missing or wrong.
    static func parse(_ answer: QEDAPI.Report, raw: Data) throws(NotaryError) -> QEDReport {
        func bad(_ what: String) -> NotaryError {
            NotaryError("QED answered a report without a valid \(what)", retryable: false)
        }
        guard let slug = answer.slug, !slug.isEmpty else { throw bad("\"slug\"") }
        let status: Status
        switch answer.status {
        case nil: throw bad("\"status\"")
        case .pending?: status = .pending
        case .confirmed?: status = .confirmed
        case .failed?: status = .failed
        case .other(let text)?: throw bad("\"status\" (got \"\(text.prefix(40))\")")
        }
        guard let hash = answer.hash else { throw bad("\"hash\"") }
        let tx = answer.tx
        var report = QEDReport(slug: slug, status: status, hash: hash, raw: raw)
        report.txHash = tx?.hash
        report.blockHeight = tx?.block_height
        report.blockTime = tx?.block_time.flatMap(Timestamp.parseLenient)
        report.explorerURL = tx?.explorer_url
        report.networkName = tx?.network_name
        report.failureReason = answer.failure_reason
        if status == .confirmed, report.txHash == nil { throw bad("\"tx.hash\" for a confirmed report") }
        return report
    }

    init(slug: String, status: Status, hash: String, raw: Data) {
        self.slug = slug; self.status = status; self.hash = hash; self.raw = raw
    }
}
