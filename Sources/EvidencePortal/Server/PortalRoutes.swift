import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import EvidenceStore
import Foundation
import Hummingbird

/// The pages and downloads. Every handler only reads the catalog and the store, and records who
/// looked at which item and what they took away (an `accessed` custody event).
struct PortalRoutes: Sendable {
    let data: PortalData
    let tsaCAFiles: [String: String]
    /// Items on their way this long are "stuck" on /status unless `?older=` says otherwise.
    let stuckAfter: Double
    /// Bundle builds at once (see `BuildSlots`).
    let builds: BuildSlots

    func add(to router: Router<PortalContext>) {
        router.get("/") { request, _ in try await self.search(request) }
        router.get("/status") { request, _ in try await self.status(request) }
        router.get("/cases") { _, _ in try await self.cases() }
        router.get("/cases/:name/disclosure.zip") { request, context in try await self.disclosure(request, context) }
        router.get("/items/:id") { _, context in try await self.item(context) }
        router.get("/items/:id/certificates/:file") { _, context in try await self.certificate(context) }
        router.get("/items/:id/poster.png") { _, context in try await self.poster(context) }
        router.get("/items/:id/bundle.zip") { request, context in try await self.bundle(request, context, .zip) }
        router.get("/items/:id/bundle.tar") { request, context in try await self.bundle(request, context, .tar) }
    }

    /// The query parameters the pages take, as an HTML form sends them (`+` is a space),
    /// decoded by Hummingbird's form decoder. Nil for a malformed query (bad percent-encoding,
    /// a parameter given twice): the page answers 400 rather than guessing which one was meant.
    struct Parameters: Decodable {
        var q: String?
        var older: String?
        var rule: String?
        var state: String?
        var `case`: String?
        var tag: String?
        var from: String?
        var to: String?
        var page: String?
    }

    static func parameters(_ request: Request) -> Parameters? {
        try? URLEncodedFormDecoder().decode(Parameters.self, from: request.uri.query ?? "")
    }

    static func badQuery() -> Response {
        Pages.html(.badRequest, ErrorPage.render(status: 400, title: "Bad request",
                                                 message: "The query could not be read: a malformed escape, or a parameter given twice."))
    }

    func search(_ request: Request) async throws -> Response {
        guard let parameters = Self.parameters(request) else { return Self.badQuery() }
        let query = SearchQuery(parameters.q ?? "")
        let (parsed, problem) = ListFilter.parse(rule: parameters.rule, state: parameters.state, caseName: parameters.case,
                                                 tag: parameters.tag, from: parameters.from, to: parameters.to, page: parameters.page)
        guard let filter = parsed else {
            return Pages.html(.badRequest, ErrorPage.render(status: 400, title: "Bad request", message: problem ?? "bad filter"))
        }
        let data = self.data
        let (page, rules, book) = try await onIOThread {
            (try data.list(query, filter), try data.home.catalog.summary().byRule.keys.sorted(), try data.cases())
        }
        return Pages.html(.ok, SearchPage.render(query: query, filter: filter, page: page, rules: rules, book: book, timezone: data.timezone))
    }

    func cases() async throws -> Response {
        let data = self.data
        let book = try await onIOThread { try data.cases() }
        return Pages.html(.ok, CasesPage.render(book, timezone: data.timezone))
    }

    func status(_ request: Request) async throws -> Response {
        guard let parameters = Self.parameters(request) else { return Self.badQuery() }
        var stuckAfter = self.stuckAfter
        if let older = parameters.older, !older.isEmpty {
            guard let s = try? DurationText.seconds(older) else {
                return Pages.html(.badRequest, ErrorPage.render(status: 400, title: "Bad request",
                                                               message: "older=\(older): expected a duration like 10m, 2h or 1d"))
            }
            stuckAfter = s
        }
        let data = self.data
        let report = try await onIOThread { [stuckAfter] in try data.status(stuckAfter: stuckAfter) }
        return Pages.html(.ok, StatusPage.render(report))
    }

    func item(_ context: PortalContext) async throws -> Response {
        guard let id = Self.itemID(context) else { return Pages.notFound("No such item.") }
        let data = self.data
        guard let details = try await onIOThread({ try data.details(itemID: id) }) else {
            return Pages.notFound("There is no item #\(id).")
        }
        await recordAccess(id, "item page", context)
        return Pages.html(.ok, ItemPage.render(details))
    }

    /// A custody event naming who looked at item `id` and at what (Axon-type systems log every
    /// view and download). Not recorded is said in the log, and the page is still served.
    func recordAccess(_ id: Int64, _ what: String, _ context: PortalContext) async {
        let catalog = data.home.catalog, actor = context.principal ?? "portal:unknown"
        do {
            _ = try await onIOThread { () throws(CatalogError) in
                try catalog.appendEvent(itemID: id, kind: .accessed, actor: actor, details: ["what": what, "via": "portal"])
            }
        } catch {
            context.logger.error("access not recorded in the custody log", metadata: ["item": "\(id)", "what": "\(what)", "error": "\(error)"])
        }
    }

    func certificate(_ context: PortalContext) async throws -> Response {
        guard let id = Self.itemID(context), let file = context.parameters.get("file"), file.hasSuffix(".pdf") else {
            return Pages.notFound("No such certificate.")
        }
        let origin = String(file.dropLast(4))
        let home = data.home
        let found: (Item, Certificate, Data)? = try await onIOThread {
            guard let item = try home.catalog.item(id: id),
                  let cert = try home.catalog.certificates(itemID: id).first(where: { $0.origin == origin }) else { return nil }
            let bytes = try home.store.read(cert.sha256)
            // What an auditor takes away must be what was recorded.
            guard SHA256Hasher.hash(bytes) == cert.sha256 else {
                throw PortalError.corruptObject(home.store.location(of: cert.sha256))
            }
            return (item, cert, bytes)
        }
        guard let (item, cert, bytes) = found else { return Pages.notFound("Item #\(id) has no certificate from “\(origin)”.") }
        await recordAccess(id, "certificate \(cert.origin) downloaded", context)
        return Response(status: .ok, headers: [.contentType: "application/pdf",
                                               .contentDisposition: Pages.attachment("evidence-item-\(item.id)-\(item.sha256.short)-\(cert.origin).pdf")],
                        body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The item's poster frame, as recorded by its `poster` event and checked against its hash.
    /// Part of the item page (not recorded again as an access).
    func poster(_ context: PortalContext) async throws -> Response {
        guard let id = Self.itemID(context) else { return Pages.notFound("No such item.") }
        let home = data.home
        let found = try await onIOThread { PosterFrames.recorded(home: home, events: try home.catalog.events(itemID: id)) }
        guard let p = found else { return Pages.notFound("Item #\(id) has no poster frame.") }
        return Response(status: .ok, headers: [.contentType: "image/png", .cacheControl: "private, max-age=3600"],
                        body: .init(byteBuffer: ByteBuffer(bytes: p.png)))
    }

    /// HEAD is answered from the catalog alone; a GET builds the bundle when a build slot is free
    /// and the home's file system has room for it (a margin for the proofs and certificates, plus
    /// the original twice for a `.zip`; a `.tar` streams the original from the store).
    func bundle(_ request: Request, _ context: PortalContext, _ format: BundleDownload.Format) async throws -> Response {
        guard let id = Self.itemID(context) else { return Pages.notFound("No such item.") }
        let home = data.home, cas = tsaCAFiles
        guard let item = try await onIOThread({ try home.catalog.item(id: id) }) else {
            return Pages.notFound("There is no item #\(id).")
        }
        let fileName = BundleDownload.folderName(for: item) + "." + format.rawValue
        if request.method == .head {
            return Response(status: .ok, headers: [.contentType: format.contentType, .contentDisposition: Pages.attachment(fileName)])
        }
        // A .zip copies the original into tmp/ and packs it there; a .tar streams it from the store.
        let needed = (format == .zip ? 2 * item.size : 0) + (16 << 20)
        if let refused = Self.noRoom(home.store.tmpDir, needed: needed, what: "this bundle") { return refused }
        guard let slot = builds.take() else { return busy() }
        // Recorded before it is built: the bundle's custody log then shows its own download.
        await recordAccess(id, "bundle.\(format.rawValue) downloaded", context)
        let download = try await onIOThread { try BundleDownload.make(home: home, item: item, format: format, tsaCAFiles: cas) }
        withExtendedLifetime(slot) {}   // held until the bundle is built
        switch download.body {
        case .file(let file):
            return Pages.download(file, size: download.size, contentType: format.contentType, fileName: download.fileName)
        case .tar(let stream):
            return Pages.stream(stream, contentType: format.contentType, fileName: download.fileName)
        }
    }

    /// A case's disclosure package as a `.zip`, built like a bundle (a build slot, room for
    /// every original twice); each item's disclosure is an `accessed` event by the portal user,
    /// recorded before the package is built so every bundle in it shows its own download.
    func disclosure(_ request: Request, _ context: PortalContext) async throws -> Response {
        guard let name = context.parameters.get("name"), CaseBook.nameProblem(name) == nil else { return Pages.notFound("No such case.") }
        let data = self.data, home = data.home, cas = tsaCAFiles
        let book = try await onIOThread { try data.cases() }
        guard let theCase = book.cases[name] else { return Pages.notFound("There is no case “\(name)”.") }
        let fileName = "disclosure-\(name).zip"
        if request.method == .head {
            return Response(status: .ok, headers: [.contentType: "application/zip", .contentDisposition: Pages.attachment(fileName)])
        }
        let sizes = try await onIOThread { try theCase.items.compactMap { try home.catalog.item(id: $0)?.size } }
        let needed = 2 * sizes.reduce(0, +) + (16 << 20) * Int64(max(1, sizes.count))
        if let refused = Self.noRoom(home.store.tmpDir, needed: needed, what: "this package") { return refused }
        guard let slot = builds.take() else { return busy() }
        for id in theCase.items { await recordAccess(id, "disclosure of case \(name) downloaded", context) }
        let actor = context.principal ?? "portal:unknown"
        let (file, size) = try await onIOThread {
            try DisclosureDownload.make(home: home, book: book, caseName: name, tsaCAFiles: cas, timezone: data.timezone, actor: actor)
        }
        withExtendedLifetime(slot) {}
        return Pages.download(file, size: size, contentType: "application/zip", fileName: fileName)
    }

    /// 507 when the file system of `path` has less than `needed` bytes free, else nil.
    static func noRoom(_ path: String, needed: Int64, what: String) -> Response? {
        guard let free = freeBytes(path), free < needed else { return nil }
        return Pages.html(.init(code: 507, reasonPhrase: "Insufficient Storage"), ErrorPage.render(status: 507, title: "Not enough space",
            message: "Building \(what) needs about \(needed >> 20) MiB of free space where the evidence is kept; there is \(free >> 20) MiB. Ask the operator."))
    }

    /// 503 with Retry-After when every build slot is taken.
    func busy() -> Response {
        var busy = Pages.html(.serviceUnavailable, ErrorPage.render(status: 503, title: "Busy",
            message: "Other bundles or packages are being built right now (at most \(builds.limit) at once). Try again in a few seconds."))
        busy.headers[.retryAfter] = "5"
        return busy
    }

    static func freeBytes(_ path: String) -> Int64? {
        var fs = statvfs()
        guard statvfs(path, &fs) == 0 else { return nil }
        return Int64(fs.f_bavail) * Int64(fs.f_frsize)
    }

    static func itemID(_ context: PortalContext) -> Int64? {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else { return nil }
        return id
    }
}

enum PortalError: Error, CustomStringConvertible {
    case corruptObject(String)
    var description: String {
        switch self {
        case .corruptObject(let p): return "\(p): the stored certificate does not match its recorded SHA-256; run `evidence fsck`"
        }
    }
}
