import EvidenceCore
import Foundation

/// What a request sends.
public enum HTTPBody: Sendable {
    case none
    case data(Data)
    /// Streamed from disk by curl's read callback in small pieces: memory stays constant whatever
    /// the size. `length` nil means "to the end of the file" (measured when the transfer starts).
    case file(path: String, offset: Int64 = 0, length: Int64? = nil)
}

/// One HTTP request, as plain data: no behaviour, safe to keep and resend.
public struct HTTPRequest: Sendable {
    /// Any token: GET POST PUT DELETE HEAD MKCOL PROPFIND MOVE …
    public var method: String
    public var url: String
    /// Sent in this order. An empty value sends the header with no value.
    public var headers: [(name: String, value: String)]
    public var body: HTTPBody
    /// Stream a 2xx response body into this file instead of memory. It is written to
    /// `"<path>.part-<random>"`, fsynced and renamed onto `path` only when the answer is 2xx and
    /// complete; on any other outcome the temporary file is removed and `path` is left untouched.
    public var downloadTo: String?
    /// Hash a 2xx response body as it arrives instead of keeping it: its SHA-256 and length are
    /// the response's `bodyDigest`, and nothing touches the disk (a read-back that only has to
    /// be compared with a digest). Other statuses keep their (error) body as usual.
    public var digestBody = false
    /// For a request the server answers only after working on it for a while, sending nothing
    /// meanwhile (a chunked upload's assembly): bounded by this total, in seconds, instead of the
    /// configured total and the stall limit, which a silent server would trip.
    public var silentFor: Double?

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [],
                body: HTTPBody = .none, downloadTo: String? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.downloadTo = downloadTo
    }

    /// The first value of a header (case-insensitive name).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// A file body, a download to a file, or a large in-memory body: bounded by the stall limit
    /// and the connect timeout, never by a total (`HTTPClientConfiguration.totalTimeout`).
    public var isBulk: Bool {
        if downloadTo != nil || digestBody { return true }
        switch body {
        case .file: return true
        case .data(let d): return d.count >= HTTPClientConfiguration.bulkBodyBytes
        case .none: return false
        }
    }
}

/// The final answer of one attempt (interim `1xx` answers are skipped).
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Lowercased names; a repeated header's values are joined with ", ".
    public var headers: [String: String]
    /// Empty when the request had `downloadTo` and the answer was 2xx. For other statuses it holds
    /// the (error) body, so callers can report what the server said.
    public var body: Data
    /// Effective URL, redacted (no userinfo, secret query values masked).
    public var url: String
    /// The SHA-256 and length of a 2xx body of a request with `digestBody` (nil otherwise).
    public var bodyDigest: (sha256: SHA256Digest, length: Int64)?
    /// The URL and headers of the request that got this answer, so that `excerpt` masks every
    /// credential it carried (a server may echo a token back in an error). Set by the client;
    /// never printed. The credentials are picked out of them only when an excerpt is made
    /// (an error), not for every answer.
    var sentWith: SentRequest?
    var requestSecrets: [String] { sentWith.map { Redact.secrets(url: $0.url, headers: $0.headers) } ?? [] }

    public init(status: Int, headers: [String: String] = [:], body: Data = Data(), url: String = "") {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
    }

    /// What the server said, for messages and logs: the first 300 characters on one line, with
    /// every credential of the request that got this answer masked.
    public var excerpt: String { Redact.excerpt(body, secrets: requestSecrets) }

    /// A header's value by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }

    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// The URL and headers a response's request carried, credentials included: kept for
/// `HTTPResponse.excerpt` to mask them. Prints and reflects as nothing, so a response dumped or
/// interpolated whole cannot show them.
struct SentRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let url: String
    let headers: [(name: String, value: String)]
    var description: String { "(request credentials withheld)" }
    var debugDescription: String { description }
    var customMirror: Mirror { Mirror(self, children: [:]) }
}
