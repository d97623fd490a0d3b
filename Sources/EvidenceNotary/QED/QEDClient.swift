import EvidenceCore
import EvidenceHTTP
import Foundation

/// The QED REST API (`Authorization: app-token KEY`).
///
/// Idempotency is the caller's: `submit` is sent once, never retried here, because a lost answer
/// may still have created a report; callers look the hash up with `reports(hash:)` before
/// submitting again. Reads (`report`, `reports`) are retried by the shared HTTP retry loop.
public struct QEDClient: Sendable {
    public let baseURL: String
    let apiKey: String
    let http: HTTPClient
    let name: String

    /// `baseURL` is the API root ending in `/v1/` (e.g. `https://api.qed.digital/v1/`).
    public init(name: String = "qed", baseURL: String, apiKey: String, http: HTTPClient) {
        self.name = name
        self.baseURL = baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
        self.apiKey = apiKey
        self.http = http
    }

    private func request(_ method: String, _ path: String, json: Data? = nil, downloadTo: String? = nil) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [("Authorization", "app-token " + apiKey), ("Accept", "application/json")]
        if json != nil { headers.append(("Content-Type", "application/json")) }
        return HTTPRequest(method: method, url: baseURL + path, headers: headers,
                           body: json.map { .data($0) } ?? .none, downloadTo: downloadTo)
    }

    /// Creates a report. Exactly one HTTP attempt (see the type's note).
    public func submit(_ submission: QEDSubmission) async throws(NotaryError) -> QEDReport {
        let body: Data
        do { body = try submission.body() } catch { throw NotaryError("\(name): cannot encode the report: \(error)", retryable: false) }
        let response: HTTPResponse
        do { response = try await http.send(request("POST", "reports/", json: body)) } catch { throw NotaryError(name, error) }
        if (300..<400).contains(response.status) { throw postRedirected(response, path: "reports/", doing: "submitting the report") }
        guard response.isSuccess else { throw statusError(response, doing: "submitting the report") }
        try expectJSON(response, doing: "submitting the report")
        return try QEDReport.parse(answer: response.body, notary: name)
    }

    /// One report by slug (polling).
    public func report(slug: String) async throws(NotaryError) -> QEDReport {
        let slugPath = slug.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? slug
        let response = try await get("reports/\(slugPath)", doing: "polling report \(slug)")
        try expectJSON(response, doing: "polling report \(slug)")
        return try QEDReport.parse(answer: response.body, notary: name)
    }

    /// The reports QED holds for `hash`, read leniently: the list may come as a bare JSON array
    /// or as a paginated `{count, next, previous, results}` object whose `next` pages are
    /// followed (at most `maxPages`); unknown fields are ignored.
    ///
    /// Only reports carrying `hash` are returned: a listed report for another hash (a server that
    /// ignores the filter) is never adopted, and a warning names it. Throws rather than answer
    /// an incomplete list, so a caller never submits twice because the lookup went wrong: an
    /// answer that cannot be read is retryable (with an excerpt of what came); a list longer
    /// than `maxPages` pages or a `next` that leads elsewhere is permanent.
    public func reports(hash: SHA256Digest) async throws(NotaryError) -> [QEDReport] {
        let what = "looking up reports for \(hash.short)…"
        var path: String? = "reports/?hash=\(hash.hex)"
        var seen: Set<String> = []
        var all: [QEDReport] = []
        var pages = 0
        while let p = path {
            guard pages < Self.maxPages else {
                throw NotaryError("\(name): \(what) failed: the report list goes on beyond \(Self.maxPages) pages "
                                  + "(does the server ignore the hash filter?); not submitting a new report", retryable: false)
            }
            guard seen.insert(p).inserted else {
                throw NotaryError("\(name): \(what) failed: the report list's next page leads back to \(p)", retryable: false)
            }
            pages += 1
            let response = try await get(p, doing: what)
            let page: QEDReport.Page
            do { page = try QEDReport.parseList(response.body) } catch {
                throw unreadable(response, doing: what, because: error.reason)
            }
            all += page.reports
            path = try page.next.map { next throws(NotaryError) in
                guard let relative = Self.relativePath(next, base: baseURL) else {
                    throw NotaryError("\(name): \(what) failed: the report list's next page \(Redact.url(next)) is not under \(Redact.url(baseURL))",
                                      retryable: false)
                }
                return relative
            }
        }
        let foreign = all.filter { $0.hash.lowercased() != hash.hex }
        if !foreign.isEmpty {
            let named = foreign.prefix(5).map { "\($0.slug) (hash \($0.hash.prefix(16))…)" }.joined(separator: ", ")
            http.logger.warning("\(name): the report list for \(hash.hex) also holds \(foreign.count) report(s) for another hash, not adopted: \(named)")
        }
        return all.filter { $0.hash.lowercased() == hash.hex }
    }

    /// Pages of a report list followed at most.
    static let maxPages = 20

    /// `next` as a path below `baseURL`: DRF writes it absolute, possibly with the scheme or
    /// host the server sees behind a proxy; what follows the base's own path (`/v1/`) is kept,
    /// so requests stay on the configured host.
    package static func relativePath(_ next: String, base baseURL: String) -> String? {
        if next.hasPrefix(baseURL) { return String(next.dropFirst(baseURL.count)) }
        let basePath = URL(string: baseURL)?.path ?? ""
        let prefix = basePath.hasSuffix("/") ? basePath : basePath + "/"
        guard prefix.count > 1 else {
            // The API sits at the host's root: keep the path and query of `next`.
            guard let url = URL(string: next), !url.path.isEmpty else { return nil }
            return String(url.path.dropFirst()) + (url.query.map { "?" + $0 } ?? "")
        }
        if next.hasPrefix(prefix) { return String(next.dropFirst(prefix.count)) }
        guard let r = next.range(of: prefix), next[..<r.lowerBound].contains("://") else { return nil }
        return String(next[r.upperBound...])
    }

    /// The report's PDF certificate, in memory (at most the client's `maxResponseBytes`; a
    /// certificate is a few hundred KB), checked to start like a PDF. The caller stores it: no
    /// file of its own on the way (it was one, fsynced, renamed and read back, per item).
    public func certificate(slug: String) async throws(NotaryError) -> Data {
        let slugPath = slug.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? slug
        let response: HTTPResponse
        do {
            // The documented path ends with a slash: a Django server answers a slash-less POST
            // with a redirect (APPEND_SLASH) or a 500, and a POST is never re-sent elsewhere.
            response = try await http.execute(request("POST", "reports/\(slugPath)/pdf/", json: Data("{}".utf8)))
        } catch {
            if case .status = error.kind, let answer = error.response, (300..<400).contains(answer.status) {
                throw postRedirected(answer, path: "reports/\(slugPath)/pdf/", doing: "fetching the certificate")
            }
            throw NotaryError(name, error)
        }
        guard response.isSuccess else { throw statusError(response, doing: "fetching the certificate") }
        guard response.body.starts(with: Data("%PDF-".utf8)) else {
            throw NotaryError("\(name): the certificate for report \(slug) is not a PDF (content type \(response.header("content-type") ?? "none"))",
                              retryable: false)
        }
        return response.body
    }

    /// A GET, following at most `maxRedirects` redirects that stay under `baseURL` (a server that
    /// moved a report's URL, or adds a trailing slash); a redirect elsewhere is a permanent error
    /// naming both URLs: the API key would go with the request.
    private func get(_ path: String, doing what: String) async throws(NotaryError) -> HTTPResponse {
        var path = path
        var hops = 0
        while true {
            let response: HTTPResponse
            do { response = try await http.execute(request("GET", path)) } catch {
                if case .status = error.kind, let answer = error.response, (300..<400).contains(answer.status) {
                    let location = answer.header("location") ?? ""
                    guard hops < Self.maxRedirects, let next = redirectTarget(location) else {
                        throw NotaryError("\(name): \(what) failed: HTTP \(answer.status) redirects \(Redact.url(baseURL + path)) to "
                                          + "\(location.isEmpty ? "nowhere (no Location)" : Redact.url(location)): "
                                          + (hops < Self.maxRedirects ? "not under \(Redact.url(baseURL)), not followed (the API key would go with it)"
                                                                      : "more than \(Self.maxRedirects) redirects")
                                          + "; check base_url of [notaries.\(name)]", retryable: false)
                    }
                    hops += 1
                    path = next
                    continue
                }
                // A refused key gets the same message as on submit: what to check, QED's words.
                if case .status = error.kind, !error.isRetryable, let answer = error.response { throw statusError(answer, doing: what) }
                throw NotaryError(name, error)
            }
            guard response.isSuccess else { throw statusError(response, doing: what) }
            return response
        }
    }

    /// Redirects a GET follows at most.
    static let maxRedirects = 3

    /// A redirect's `Location` (absolute, or a path on the same host) as a path below
    /// `baseURL`, or nil when it leaves the configured origin and API root.
    func redirectTarget(_ location: String) -> String? {
        guard !location.isEmpty else { return nil }
        var absolute = location
        if location.hasPrefix("/"), let base = URL(string: baseURL), let scheme = base.scheme, let host = base.host {
            absolute = "\(scheme)://\(host)" + (base.port.map { ":\($0)" } ?? "") + location
        }
        guard absolute.hasPrefix(baseURL) else { return nil }
        return String(absolute.dropFirst(baseURL.count))
    }

    /// A POST answered with a redirect: never re-sent (its body may already have acted, and
    /// curl would turn it into a GET); a permanent error that says what to fix.
    private func postRedirected(_ response: HTTPResponse, path: String, doing what: String) -> NotaryError {
        let location = response.header("location") ?? "(no Location)"
        return NotaryError("\(name): \(what) failed: HTTP \(response.status) redirects POST \(Redact.url(baseURL + path)) to "
                           + "\(Redact.url(location)); a POST is not re-sent to another URL: check base_url of [notaries.\(name)] "
                           + "(QED's paths end with a slash)", retryable: false)
    }

    /// A 2xx answer that is not JSON at all (a proxy's HTML page, bytes cut short, an image) is
    /// the way in between misbehaving, not QED's verdict on the report: retryable, and the
    /// message says what came instead (content type, size, a printable excerpt).
    private func expectJSON(_ response: HTTPResponse, doing what: String) throws(NotaryError) {
        if WireJSON.isJSON(response.body) { return }
        throw unreadable(response, doing: what, because: "the answer is not JSON")
    }

    /// A 2xx answer we cannot read: retryable, naming what came (content type, size, an excerpt).
    private func unreadable(_ response: HTTPResponse, doing what: String, because reason: String) -> NotaryError {
        let type = response.header("content-type") ?? "none"
        let excerpt = String(String(decoding: response.body.prefix(80), as: UTF8.self)
            .map { $0.isASCII && ($0.isLetter || $0.isNumber || $0.isPunctuation || $0 == " ") ? $0 : "." })
        return NotaryError("\(name): \(what) failed: \(reason) (HTTP \(response.status), content type \(type), "
                           + "\(response.body.count) bytes: \(Redact.text(excerpt, secrets: [apiKey])))", retryable: true)
    }

    /// 429/5xx are retryable; any other status is permanent, with QED's own words (DRF's
    /// `{"detail": …}` or `{"field": ["message"]}`) in the message.
    private func statusError(_ response: HTTPResponse, doing what: String) -> NotaryError {
        let retryable = response.status == 429 || response.status >= 500
        var said = String(decoding: response.body.prefix(300), as: UTF8.self)
        if let text = QEDAPI.errorText(response.body) { said = text }
        let hint = response.status == 401 || response.status == 403
            ? " (check the API key: api_key_env or api_key_file of [notaries.\(name)])" : ""
        // QED's words, minus our key should it ever quote it back.
        said = Redact.text(said, secrets: [apiKey])
        return NotaryError("\(name): \(what) failed: HTTP \(response.status)\(hint): \(said)", retryable: retryable,
                           retryAfter: response.header("retry-after").flatMap { RetryAfter.seconds($0) }, httpStatus: response.status)
    }
}
