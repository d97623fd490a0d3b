import Foundation
import Hummingbird

/// The QED notarization API (`/v1/…`) as the sandbox serves it: token auth, report creation
/// with QED's validation and error shapes, reports that stay `pending` for the configured
/// time and then read as `confirmed` (or `failed` for names containing "FAIL-ME"), lookup
/// by hash, and PDF certificates for confirmed reports.
///
/// Listing (`GET /v1/reports/`) is paginated like Django REST framework's
/// `PageNumberPagination`: `{"count", "next", "previous", "results"}`, newest first,
/// `?page=` (1-based) and `?page_size=` (default 100, at most 1000). The API docs do not fix
/// that shape, so `listShape: .bareArray` answers a plain JSON array of every match instead
/// (what an independent server following the docs may do), and `ignoresHashFilter` lists
/// every report whatever `?hash=` asks (a server without that filter): clients must cope
/// with both shapes and adopt only reports that carry their hash.
public final class QEDEmulator: Sendable {
    /// How `GET /v1/reports/` answers.
    public enum ListShape: String, Sendable, CaseIterable {
        /// DRF's `{"count","next","previous","results"}`, paged.
        case paginated
        /// A bare JSON array of every match, unpaged.
        case bareArray = "bare"
    }
    public let store: QEDReportStore
    let apiKey: String
    let pendingSeconds: Double
    let random: SandboxRandom
    let counters: SandboxCounters
    let clock: @Sendable () -> Date
    let listShape: ListShape
    let ignoresHashFilter: Bool

    static let defaultPageSize = 100
    static let maxPageSize = 1000
    static let firstBlockHeight = 4_200_000

    /// - Parameters:
    ///   - store: where reports live (and persist).
    ///   - clock: the current time; tests may inject one to step through pending → confirmed.
    public init(store: QEDReportStore, apiKey: String, pendingSeconds: Double, random: SandboxRandom,
                counters: SandboxCounters, clock: @escaping @Sendable () -> Date = { Date() },
                listShape: ListShape = .paginated, ignoresHashFilter: Bool = false) {
        self.listShape = listShape
        self.ignoresHashFilter = ignoresHashFilter
        self.store = store
        self.apiKey = apiKey
        self.pendingSeconds = pendingSeconds
        self.random = random
        self.counters = counters
        self.clock = clock
    }

    /// Adds `/v1/reports…` to `router`, behind QED's token authentication.
    public func addRoutes(to router: Router<SandboxRequestContext>) {
        let v1 = router.group("v1").add(middleware: QEDAuthMiddleware<SandboxRequestContext>(apiKey: apiKey))
        v1.post("reports") { request, context in try await self.create(request, context: context) }
        v1.get("reports") { request, _ in try await self.list(request) }
        v1.get("reports/:slug") { _, context in try await self.show(slug: context.parameters.require("slug")) }
        v1.post("reports/:slug/pdf") { request, context in
            // Only the documented form (trailing slash) is served. Django's APPEND_SLASH answers
            // a slash-less POST with a redirect to the slash form (its body is lost on the way).
            guard request.uri.path.hasSuffix("/") else {
                return Response(status: .movedPermanently,
                                headers: [.location: request.uri.path + "/", .contentType: "text/html; charset=utf-8"],
                                body: .init(byteBuffer: ByteBuffer(string: "")))
            }
            return try await self.certificate(request, slug: context.parameters.require("slug"), context: context)
        }
        Self.refuseOtherMethods(on: v1, path: "reports", allowed: [.get, .post])
        Self.refuseOtherMethods(on: v1, path: "reports/:slug", allowed: [.get])
        Self.refuseOtherMethods(on: v1, path: "reports/:slug/pdf", allowed: [.post])
    }

    private static func refuseOtherMethods(on group: RouterGroup<SandboxRequestContext>, path: RouterPath,
                                           allowed: [HTTPRequest.Method]) {
        let all: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete]
        for method in all where !allowed.contains(method) {
            group.on(path, method: method) { request, _ -> Response in
                throw QEDError.methodNotAllowed(request.method, allowed: allowed + [.options])
            }
        }
    }

    // MARK: Handlers

    func create(_ request: Request, context: SandboxRequestContext) async throws -> Response {
        let body = try await jsonBody(request, context: context) ?? .object([])
        let draft: QEDReportValidator.Draft
        switch QEDReportValidator.validate(body) {
        case .success(let d): draft = d
        case .failure(let error): throw error
        }
        var slug = random.slug()
        while await store.contains(slug: slug) { slug = random.slug() }
        let report = QEDReport(
            slug: slug,
            hash: draft.hash,
            name: draft.name,
            note: draft.note,
            email: draft.email,
            metaData: draft.metaData,
            originalCreatedAt: draft.originalCreatedAt,
            provableFiles: draft.provableFiles.map { .init(slug: random.slug(), hash: $0.hash, fileName: $0.fileName) },
            createdAt: Self.microseconds(clock()),
            txHash: "0x" + Self.hex(random.bytes(32)),
            blockHeight: Self.firstBlockHeight + (await store.count) + 1
        )
        try await store.add(report)
        counters.recordSubmission(hash: report.hash)
        context.logger.info("qed report created", metadata: ["slug": "\(slug)", "hash": "\(report.hash)"])
        return .json(report.json(at: clock(), pendingSeconds: pendingSeconds), status: .created)
    }

    func show(slug: String) async throws -> Response {
        guard let report = await store.report(slug: slug) else { throw QEDError.notFound }
        return .json(report.json(at: clock(), pendingSeconds: pendingSeconds))
    }

    func list(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let hash = query.get("hash")
        var pageSize = Self.defaultPageSize
        if let text = query.get("page_size"), let n = Int(text), n > 0 { pageSize = min(n, Self.maxPageSize) }
        var page = 1
        if let text = query.get("page") {
            guard let n = Int(text), n > 0 else { throw QEDError(.notFound, detail: "Invalid page.") }
            page = n
        }
        // An empty hash filter is no filter, as with django-filter.
        let matches = await store.reports(hash: ignoresHashFilter ? nil : hash.flatMap { $0.isEmpty ? nil : $0 })
        if listShape == .bareArray {
            let now = clock()
            return .json(.array(matches.map { $0.json(at: now, pendingSeconds: pendingSeconds) }))
        }
        let pageCount = max(1, (matches.count + pageSize - 1) / pageSize)
        guard page <= pageCount else { throw QEDError(.notFound, detail: "Invalid page.") }
        let slice = matches.dropFirst((page - 1) * pageSize).prefix(pageSize)
        let now = clock()

        func pageURL(_ n: Int) -> JSONValue {
            let host = request.head.authority ?? "127.0.0.1"
            var items: [String] = []
            if let hash { items.append("hash=\(hash)") }
            if pageSize != Self.defaultPageSize { items.append("page_size=\(pageSize)") }
            if n > 1 { items.append("page=\(n)") }
            return .string("http://\(host)/v1/reports/" + (items.isEmpty ? "" : "?" + items.joined(separator: "&")))
        }
        return .json(.object([
            ("count", .int(Int64(matches.count))),
            ("next", page < pageCount ? pageURL(page + 1) : .null),
            ("previous", page > 1 ? pageURL(page - 1) : .null),
            ("results", .array(slice.map { $0.json(at: now, pendingSeconds: pendingSeconds) })),
        ]))
    }

    func certificate(_ request: Request, slug: String, context: SandboxRequestContext) async throws -> Response {
        guard let report = await store.report(slug: slug) else { throw QEDError.notFound }
        let options = try Self.certificateOptions(try await jsonBody(request, context: context))
        switch report.status(at: clock(), pendingSeconds: pendingSeconds) {
        case .pending:
            throw QEDError(.conflict, detail: "Report is not confirmed yet.")
        case .failed:
            throw QEDError(.conflict, detail: "Report failed; no certificate is available.")
        case .confirmed:
            let pdf = QEDCertificate(report: report, pendingSeconds: pendingSeconds, options: options).render()
            return .bytes(pdf, contentType: "application/pdf",
                          headers: [.contentDisposition: "attachment; filename=\"qed-certificate-\(slug).pdf\""])
        }
    }

    // MARK: Request bodies

    /// The body as JSON, nil when empty. Non-JSON media types → 415; bad JSON → 400.
    private func jsonBody(_ request: Request, context: SandboxRequestContext) async throws -> JSONValue? {
        var request = request
        let buffer = try await request.collectBody(upTo: SandboxRequestContext.maxJSONBody)
        guard buffer.readableBytes > 0 else { return nil }
        guard request.mediaType == "application/json" else { throw QEDError.unsupportedMediaType(request.mediaType) }
        do {
            return try JSONValue.parse(Data(buffer.readableBytesView))
        } catch {
            throw QEDError.parseError(error.description)
        }
    }

    static func certificateOptions(_ body: JSONValue?) throws -> QEDCertificate.Options {
        var options = QEDCertificate.Options()
        guard let body else { return options }
        guard case .object = body else {
            throw QEDError.validation(.object([("non_field_errors", .array([
                .string("Invalid data. Expected a dictionary, but got \(body.typeName).")
            ]))]))
        }
        var errors: [(String, JSONValue)] = []
        func text(_ key: String) -> String? {
            switch body[key] {
            case nil, .null?: return nil
            case .string(let s)?: return s
            case _?: errors.append((key, .array([.string(QEDReportValidator.notString)]))); return nil
            }
        }
        if let lang = text("i18n") { options.i18n = lang }
        options.address = text("address")
        if let url = text("logo_url"), !url.isEmpty {
            if url.hasPrefix("http://") || url.hasPrefix("https://") {
                options.logoURL = url
            } else {
                errors.append(("logo_url", .array([.string("Enter a valid URL.")])))
            }
        }
        switch body["online_check"] {
        case nil, .null?: break
        case .bool(let b)?: options.onlineCheck = b
        case .int(let i)? where i == 0 || i == 1: options.onlineCheck = i == 1
        case .string(let s)? where ["true", "false", "1", "0", "yes", "no", "on", "off"].contains(s.lowercased()):
            options.onlineCheck = ["true", "1", "yes", "on"].contains(s.lowercased())
        case _?: errors.append(("online_check", .array([.string("Must be a valid boolean.")])))
        }
        guard errors.isEmpty else { throw QEDError.validation(.object(errors)) }
        return options
    }

    // MARK: Helpers

    static func microseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1_000_000).rounded() / 1_000_000)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
