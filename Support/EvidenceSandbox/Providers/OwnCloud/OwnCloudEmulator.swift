import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import HTTPTypes
import Hummingbird

/// ownCloud 10 (WebDAV + OCS v1 sharing) as the sandbox serves it, under `/owncloud/`
/// (`{S}/owncloud` is the server URL a client is configured with); with the Nextcloud flavour
/// (`--owncloud-flavour nextcloud`) it is a Nextcloud server instead: status.php says so, and
/// checksums are the client's (see `OwnCloudFlavour`).
///
/// Fixed sandbox credentials: user `sandbox`, app password `sandbox-app-password`, HTTP Basic
/// on every endpoint (wrong → 401 `WWW-Authenticate: Basic realm="ownCloud"` + Sabre XML).
///
/// Endpoints:
/// - `GET /owncloud/status.php` (no auth): the server's status JSON.
/// - WebDAV, `/owncloud/remote.php/dav/files/sandbox/<path>`: `PROPFIND` (Depth 0/1; infinity
///   is served as 1, as ownCloud's default config does), `MKCOL`, `PUT`, `GET`, `HEAD`,
///   `DELETE`, `MOVE` (`Destination`, `Overwrite`), `OPTIONS`.
/// - Chunked upload v2 ("NG chunking"), `/owncloud/remote.php/dav/uploads/sandbox/<transfer-id>`:
///   `MKCOL` the folder, `PUT …/<chunk-name>` (re-PUT replaces), `PROPFIND` Depth 1 lists chunks
///   with sizes, `DELETE` a chunk or the folder, `MOVE …/.file` with `Destination` (a files URL),
///   `OC-Total-Length`, optional `OC-Checksum`, `Overwrite`, `X-OC-Mtime`.
/// - OCS v1 shares, `/owncloud/ocs/v1.php/apps/files_sharing/api/v1/shares` (`GET ?path=`,
///   `POST`) and `…/shares/<id>` (`GET`, `DELETE`), header `OCS-APIRequest: true` required.
///
/// Quirks emulated:
/// - Names are case-sensitive (Linux). `\ : ? * " > < |` are allowed in names; `.htaccess`
///   → 403, `.`/`..`, names ending in a space, `*` alone, or longer than 255 bytes → 400, each
///   with the Sabre `<d:error>` body ownCloud writes.
/// - Preconditions as Sabre checks them, against the request URI: `If-Match` (412 when nothing
///   is there or no etag matches) and `If-None-Match` (`*` or a matching etag → 412). For `MOVE`
///   that is the source: `If-None-Match: *` on `MOVE …/.file` always fails, as `.file` exists.
///   `Overwrite: F` → 412 when the destination exists; `T` (the default) replaces it. The
///   RFC 4918 `If` header (what the desktop clients send to guard a MOVE's destination,
///   `If: <dest> (["etag"])`) is judged per tagged resource, etags only (no locks are held).
/// - PROPFIND answers what the desktop clients ask on every listing: `oc:share-types` (empty,
///   or `3` for a public link), `oc:data-fingerprint` (empty, root only), `oc:permissions`
///   (`RDNVW`/`RDNVCK`; Nextcloud adds `G`), `oc:favorite`, and on Nextcloud `nc:is-encrypted`
///   (`0`, folders). `oc:downloadURL`/`oc:dDC` are 404, as on a server without direct download.
/// - `GET /owncloud/ocs/v{1,2}.php/cloud/capabilities` and `…/cloud/user`: see `OwnCloudCapabilities.swift`.
/// - `MKCOL`: 201; existing → 405; parent missing → 409. `PUT`: 201 new / 204 replaced, parent
///   missing → 409, onto a folder → 409, `If-None-Match: *` on an existing file → 412;
///   answers `OC-FileId`, `ETag`, `OC-ETag` (and `X-OC-MTime: accepted` when `X-OC-Mtime` was sent).
/// - Every stored file gets SHA1, MD5 and ADLER32 checksums, listed by `oc:checksums` as
///   `SHA1:… MD5:… ADLER32:…` and sent as `OC-Checksum` on `GET`. A client `OC-Checksum`
///   (SHA1/MD5/ADLER32) that does not match the bytes that arrived → 400 "The computed
///   checksum does not match the one received from the client." and nothing stored.
/// - Etags change on every write and propagate to all parent folders.
/// - Chunk assembly: chunks in name order (zero-padded offsets); `OC-Total-Length` ≠ the
///   chunks' sum → 400 "Chunks on server do not sum up to N but to M bytes"; the upload
///   folder is removed after a successful assembly (kept on a failed one). Upload folders
///   and chunks persist across a restart.
/// - OCS v1 answers HTTP 200 even for failures: check `ocs.meta.statuscode == 100`
///   (404 wrong path, 400 bad `expireDate`, 404 past `expireDate`, 403 public upload disabled,
///   404 unknown share id). Missing `OCS-APIRequest` → HTTP 401 with statuscode 997.
///   `format=json` gives JSON, otherwise XML. Passwords are optional for public links;
///   several links on one path are allowed (as in ownCloud), each a new share.
/// - `/_sandbox/corrupt-next-upload?provider=owncloud`: the next stored file (PUT or chunk
///   assembly) has one byte flipped after it arrived and before its checksums are computed.
/// - `/_sandbox/quirk` (`ProviderControl.Quirk`): an enforced default link expiry, a link made
///   without its password, an assembly answering 412 after it finished, a silent slow assembly,
///   an assembly answering 423 Locked and finishing after it (then 404), and no uploads
///   endpoint at all (Infinite Scale).
public final class OwnCloudEmulator: Sendable {
    public static let user = "sandbox"
    public static let password = "sandbox-app-password"
    static let instanceID = "ocsandbox01"
    static let davPrefix = "/owncloud/remote.php/dav/"

    let env: ProviderEnvironment
    let store: OwnCloudStore
    let flavour: OwnCloudFlavour

    public init(environment: ProviderEnvironment, flavour: OwnCloudFlavour = .owncloud) throws {
        self.env = environment
        self.flavour = flavour
        self.store = try OwnCloudStore(directory: environment.stateDirectory, random: environment.random,
                                       now: Int64(environment.clock().timeIntervalSince1970))
    }

    public func addRoutes(to router: Router<SandboxRequestContext>) {
        let flavour = self.flavour
        let control = env.control
        router.get("owncloud/status.php") { _, _ in
            // Without the uploads endpoint it is Infinite Scale, and its status.php says so.
            if control.isArmed(.ownCloudNoUploads) {
                return Response.json(.object([
                    ("installed", .bool(true)), ("maintenance", .bool(false)), ("needsDbUpgrade", .bool(false)),
                    ("version", .string("10.11.0.0")), ("versionstring", .string("10.11.0")), ("edition", .string("Community")),
                    ("productname", .string("Infinite Scale")), ("product", .string("Infinite Scale")), ("productversion", .string("7.1.0")),
                ]))
            }
            switch flavour {
            case .owncloud:
                return Response.json(.object([
                    ("installed", .bool(true)), ("maintenance", .bool(false)), ("needsDbUpgrade", .bool(false)),
                    ("version", .string("10.15.0.2")), ("versionstring", .string("10.15.0")), ("edition", .string("Community")),
                    ("productname", .string("ownCloud")), ("product", .string("ownCloud")),
                ]))
            case .nextcloud:
                return Response.json(.object([
                    ("installed", .bool(true)), ("maintenance", .bool(false)), ("needsDbUpgrade", .bool(false)),
                    ("version", .string("30.0.4.1")), ("versionstring", .string("30.0.4")), ("edition", .string("")),
                    ("productname", .string("Nextcloud")), ("extendedSupport", .bool(false)),
                ]))
            }
        }
        let methods = ["PROPFIND", "MKCOL", "PUT", "GET", "HEAD", "DELETE", "MOVE", "OPTIONS"]
        for space in ["files", "uploads"] {
            for path in ["owncloud/remote.php/dav/\(space)/:user", "owncloud/remote.php/dav/\(space)/:user/**"] {
                for m in methods {
                    router.on(RouterPath(path), method: HTTPRequest.Method(m)!) { request, context in
                        try await self.dav(request, context: context)
                    }
                }
            }
        }
        addCapabilityRoutes(to: router)
        let shares = "owncloud/ocs/v1.php/apps/files_sharing/api/v1/shares"
        router.get(RouterPath(shares)) { request, context in try await self.ocs(request, context: context, id: nil) }
        router.post(RouterPath(shares)) { request, context in try await self.ocs(request, context: context, id: nil) }
        router.get(RouterPath(shares + "/:id")) { request, context in
            try await self.ocs(request, context: context, id: context.parameters.get("id") ?? "")
        }
        router.delete(RouterPath(shares + "/:id")) { request, context in
            try await self.ocs(request, context: context, id: context.parameters.get("id") ?? "")
        }
    }

    // MARK: Auth and paths

    func authorized(_ request: Request) -> Bool {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("basic "),
              let data = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let text = String(data: data, encoding: .utf8) else { return false }
        return text == "\(Self.user):\(Self.password)"
    }

    private func notAuthenticated(_ request: Request) -> Response {
        let message = request.headers[.authorization] == nil
            ? "No 'Authorization: Basic' header found. Either the client didn't send one, or the server is misconfigured"
            : "Username or password was incorrect"
        return OwnCloudWire.sabreError(.unauthorized, "Sabre\\DAV\\Exception\\NotAuthenticated", message,
                                       headers: [.wwwAuthenticate: "Basic realm=\"\(flavour.productName)\", charset=\"UTF-8\""])
    }

    /// `files`/`uploads`, the user, and the decoded components after it.
    private struct DavPath {
        var space: String
        var user: String
        var components: [String]
        var filesPath: String { "/" + components.joined(separator: "/") }
    }

    private static func davPath(_ rawPath: String) -> DavPath? {
        guard rawPath.hasPrefix(davPrefix) else { return nil }
        let parts = rawPath.dropFirst(davPrefix.count).split(separator: "/", omittingEmptySubsequences: true)
            .map { String($0).removingPercentEncoding ?? String($0) }
        guard parts.count >= 2 else { return nil }
        return DavPath(space: parts[0], user: parts[1], components: Array(parts.dropFirst(2)))
    }

    /// The path of a `Destination` header (absolute URL or absolute path).
    private static func destination(_ value: String) -> DavPath? {
        var raw = value
        if let schemeEnd = value.range(of: "://") {
            let afterHost = value[schemeEnd.upperBound...]
            raw = afterHost.firstIndex(of: "/").map { String(afterHost[$0...]) } ?? "/"
        }
        if let q = raw.firstIndex(of: "?") { raw = String(raw[..<q]) }
        return davPath(raw)
    }

    private func fileIDString(_ id: Int64) -> String { String(format: "%08lld", id) + Self.instanceID }

    private func now() -> Int64 { Int64(env.clock().timeIntervalSince1970) }

    private func relative(_ path: String) -> String { String(path.dropFirst()) }

    /// Checks every component of a path to be created.
    private func checkNames(_ components: [String]) -> Response? {
        for c in components { if let problem = OwnCloudWire.nameProblem(c) { return problem } }
        return nil
    }

    // MARK: WebDAV dispatch

    func dav(_ request: Request, context: SandboxRequestContext) async throws -> Response {
        guard authorized(request) else { return notAuthenticated(request) }
        guard let path = Self.davPath(request.uri.path) else { return OwnCloudWire.notFound("File not found") }
        guard path.user == Self.user else {
            return OwnCloudWire.notFound("Principal with name \(path.user) not found")
        }
        let method = request.method.rawValue
        if method == "OPTIONS" {
            return Response(status: .ok, headers: [
                HTTPField.Name("DAV")!: "1, 3, extended-mkcol",
                .allow: "OPTIONS, GET, HEAD, DELETE, PROPFIND, PUT, PROPPATCH, COPY, MOVE, REPORT",
                .contentLength: "0",
            ])
        }
        if path.space == "uploads" {
            if env.control.isArmed(.ownCloudNoUploads) { return OwnCloudWire.notFound("File not found in root") }
            return try await uploads(request, path: path, context: context)
        }
        guard path.space == "files" else { return OwnCloudWire.notFound("File not found") }
        let target = path.filesPath
        switch method {
        case "PROPFIND": return try await propfindFiles(request, target, context: context)
        case "MKCOL": return try await mkcol(request, path: path, context: context)
        case "PUT": return try await put(request, path: path)
        case "GET", "HEAD": return try await get(target, head: method == "HEAD")
        case "DELETE":
            let e = await store.entry(target)
            if let failed = preconditions(request, exists: e != nil, etag: e?.folder == false ? e?.etag : nil) { return failed }
            if let failed = await ifHeader(request, requestPath: path) { return failed }
            if target == "/" { return OwnCloudWire.sabreError(.forbidden, "Sabre\\DAV\\Exception\\Forbidden", "Permission denied to delete home folder") }
            guard try await store.delete(target, now: now()) else {
                return OwnCloudWire.notFound("File with name \(relative(target)) could not be located")
            }
            return Response(status: .noContent)
        case "MOVE": return try await move(request, path: path)
        default:
            return OwnCloudWire.sabreError(.notImplemented, "Sabre\\DAV\\Exception\\NotImplemented", "There was no plugin in the system that was willing to handle this \(method) method.")
        }
    }

    // MARK: PROPFIND

    /// What a multistatus `<d:response>` describes.
    private struct DavItem {
        var href: String
        var name: String
        var folder: Bool
        var size: Int64
        var etag: String
        var mtime: Int64
        var fileID: Int64?
        var digests: OwnCloudHasher.Digests?
        var clientChecksum: String?
        /// Share types of the item's shares (3: public link); nil where shares do not apply (uploads).
        var shareTypes: [Int]?
        var isRoot = false
    }

    private func item(_ path: String, _ e: OwnCloudEntry) async -> DavItem {
        let href = Self.davPrefix + "files/\(Self.user)" + OwnCloudWire.hrefPath(path == "/" ? "/" : path + (e.folder ? "/" : ""))
        return DavItem(href: href, name: (path as NSString).lastPathComponent, folder: e.folder,
                       size: e.folder ? await store.treeSize(path) : e.size, etag: e.etag, mtime: e.mtime,
                       fileID: e.fileID, digests: e.digests, clientChecksum: e.clientChecksum,
                       shareTypes: await store.shares(fileIDs: [e.fileID]).isEmpty ? [] : [3], isRoot: path == "/")
    }

    static let davNS = "DAV:"
    static let ocNS = "http://owncloud.org/ns"
    static let ncNS = "http://nextcloud.org/ns"

    private func propValue(_ item: DavItem, ns: String, name: String) -> String? {
        switch (ns, name) {
        case (Self.davNS, "getlastmodified"): return OwnCloudWire.httpDate(item.mtime)
        case (Self.davNS, "getetag"): return "&quot;\(item.etag)&quot;"
        case (Self.davNS, "resourcetype"): return item.folder ? "<d:collection/>" : ""
        case (Self.davNS, "getcontentlength"): return item.folder ? nil : String(item.size)
        case (Self.davNS, "getcontenttype"): return item.folder ? nil : OwnCloudWire.mimeType(item.name)
        case (Self.davNS, "quota-used-bytes"): return item.folder ? String(item.size) : nil
        case (Self.davNS, "quota-available-bytes"): return item.folder ? "-3" : nil
        case (Self.ocNS, "fileid"): return item.fileID.map { String($0) }
        case (Self.ocNS, "id"): return item.fileID.map { fileIDString($0) }
        case (Self.ocNS, "size"): return String(item.size)
        // Nextcloud (since 27) adds G, "readable", to both.
        case (Self.ocNS, "permissions"):
            guard item.fileID != nil else { return nil }
            let g = flavour == .nextcloud ? "G" : ""
            return item.folder ? "R\(g)DNVCK" : "R\(g)DNVW"
        // Every item answers share-types, empty when unshared (the clients ask on every PROPFIND).
        case (Self.ocNS, "share-types"):
            return item.shareTypes.map { $0.map { "<oc:share-type>\($0)</oc:share-type>" }.joined() }
        // The home root answers data-fingerprint, empty until an admin restores a backup.
        case (Self.ocNS, "data-fingerprint"): return item.isRoot ? "" : nil
        case (Self.ocNS, "favorite"): return item.fileID == nil ? nil : "0"
        case (Self.ncNS, "is-encrypted"): return flavour == .nextcloud && item.folder && item.fileID != nil ? "0" : nil
        case (Self.ocNS, "owner-id"), (Self.ocNS, "owner-display-name"): return item.fileID == nil ? nil : Self.user
        case (Self.ocNS, "checksums"):
            switch flavour {
            case .owncloud:
                // ownCloud keeps the three as one space-separated value: one <oc:checksum>.
                guard let d = item.digests else { return nil }
                return "<oc:checksum>SHA1:\(d.sha1) MD5:\(d.md5) ADLER32:\(d.adler32)</oc:checksum>"
            case .nextcloud:
                // Nextcloud echoes what the client sent, one <oc:checksum> per space-separated part.
                guard let c = item.clientChecksum, !c.isEmpty else { return nil }
                return c.split(separator: " ").map { "<oc:checksum>\(OwnCloudWire.xmlEscape(String($0)))</oc:checksum>" }.joined()
            }
        default: return nil
        }
    }

    private func multistatus(_ items: [DavItem], props: [(String, String)]?) -> Response {
        let wanted = props ?? [(Self.davNS, "getlastmodified"), (Self.davNS, "resourcetype"), (Self.davNS, "getetag"),
                               (Self.davNS, "getcontentlength"), (Self.davNS, "getcontenttype"),
                               (Self.davNS, "quota-used-bytes"), (Self.davNS, "quota-available-bytes")]
        let nc = flavour == .nextcloud ? " xmlns:nc=\"\(Self.ncNS)\"" : ""
        var xml = "<?xml version=\"1.0\"?>\n<d:multistatus xmlns:d=\"DAV:\" xmlns:s=\"http://sabredav.org/ns\" xmlns:oc=\"http://owncloud.org/ns\"\(nc)>"
        for item in items {
            var found = ""
            var missing = ""
            for (ns, name) in wanted {
                let tag: String
                let open: String
                switch ns {
                case Self.davNS: tag = "d:\(name)"; open = tag
                case Self.ocNS: tag = "oc:\(name)"; open = tag
                case Self.ncNS where flavour == .nextcloud: tag = "nc:\(name)"; open = tag
                default: tag = "x1:\(name)"; open = "\(tag) xmlns:x1=\"\(OwnCloudWire.xmlEscape(ns))\""
                }
                if let value = propValue(item, ns: ns, name: name) {
                    found += value.isEmpty ? "<\(open)/>" : "<\(open)>\(value)</\(tag)>"
                } else if props != nil {
                    missing += "<\(open)/>"
                }
            }
            xml += "<d:response><d:href>\(OwnCloudWire.xmlEscape(item.href))</d:href>"
            if !found.isEmpty || missing.isEmpty {
                xml += "<d:propstat><d:prop>\(found)</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>"
            }
            if !missing.isEmpty {
                xml += "<d:propstat><d:prop>\(missing)</d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat>"
            }
            xml += "</d:response>"
        }
        xml += "</d:multistatus>\n"
        return .bytes(Array(xml.utf8), contentType: OwnCloudWire.xmlType, status: .init(code: 207, reasonPhrase: "Multi-Status"))
    }

    private func propfindRequest(_ request: Request, context: SandboxRequestContext) async throws -> (depth1: Bool, props: [(String, String)]?) {
        var request = request
        let body = try await request.collectBody(upTo: SandboxRequestContext.maxJSONBody)
        let depth = (request.headers[.davDepth] ?? "infinity").lowercased()
        return (depth != "0", OwnCloudWire.requestedProperties(Data(body.readableBytesView)))
    }

    private func propfindFiles(_ request: Request, _ path: String, context: SandboxRequestContext) async throws -> Response {
        let (depth1, props) = try await propfindRequest(request, context: context)
        guard let e = await store.entry(path) else {
            return OwnCloudWire.notFound("File with name \(relative(path)) could not be located")
        }
        var items = [await item(path, e)]
        if depth1 && e.folder {
            for (p, child) in await store.children(path) { items.append(await item(p, child)) }
        }
        return multistatus(items, props: props)
    }

    // MARK: MKCOL, PUT, GET, MOVE

    private func mkcol(_ request: Request, path: DavPath, context: SandboxRequestContext) async throws -> Response {
        if path.components.isEmpty {
            return OwnCloudWire.sabreError(.methodNotAllowed, "Sabre\\DAV\\Exception\\MethodNotAllowed", "The resource you tried to create already exists")
        }
        var request = request
        let body = try await request.collectBody(upTo: 1 << 20)
        if body.readableBytes > 0 {
            return OwnCloudWire.sabreError(.unsupportedMediaType, "Sabre\\DAV\\Exception\\UnsupportedMediaType", "The request body for the MKCOL request must have an xml Content-Type")
        }
        if let problem = checkNames([path.components.last!]) { return problem }
        switch try await store.mkcol(path.filesPath, now: now()) {
        case true?: return Response(status: .created, headers: [.contentLength: "0"])
        case false?:
            return OwnCloudWire.sabreError(.methodNotAllowed, "Sabre\\DAV\\Exception\\MethodNotAllowed", "The resource you tried to create already exists")
        case nil: return OwnCloudWire.conflict("Parent node does not exist")
        }
    }

    /// `OC-Checksum: TYPE:hex` compared with what arrived; false when absent, unknown or equal,
    /// and always false on Nextcloud, which stores the client's checksum without checking it.
    private func checksumMismatch(_ request: Request, _ d: OwnCloudHasher.Digests) -> Bool {
        guard flavour == .owncloud, let header = request.headers[.ocChecksum] else { return false }
        for token in header.split(separator: " ") {
            let kv = token.split(separator: ":", maxSplits: 1)
            guard kv.count == 2 else { continue }
            let value = kv[1].lowercased()
            switch kv[0].uppercased() {
            case "SHA1": return value != d.sha1
            case "MD5": return value != d.md5
            case "ADLER32": return value != d.adler32
            default: continue
            }
        }
        return false
    }

    private func mtime(_ request: Request) -> Int64? {
        guard let v = request.headers[.xOCMtime], let d = Double(v.trimmingCharacters(in: .whitespaces)), d.isFinite, d >= 0 else { return nil }
        return Int64(d)
    }

    private func storedHeaders(_ e: OwnCloudEntry, mtimeGiven: Bool) -> HTTPFields {
        var h: HTTPFields = [.ocFileID: fileIDString(e.fileID), .eTag: "\"\(e.etag)\"", .ocETag: "\"\(e.etag)\"", .contentLength: "0"]
        if mtimeGiven { h[HTTPField.Name("X-OC-MTime")!] = "accepted" }
        return h
    }

    /// Streams a body to a temp file with ownCloud's digests.
    private func receive(_ request: Request, into temp: String) async throws -> (Int64, OwnCloudHasher.Digests) {
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DropboxFiles.IOError(description: "open \(temp)") }
        defer { close(fd) }
        var hasher = OwnCloudHasher()
        var size: Int64 = 0
        for try await buffer in request.body {
            size += Int64(buffer.readableBytes)
            try buffer.withUnsafeReadableBytes { raw in
                hasher.update(raw)
                try DropboxFiles.writeAll(fd, raw, path: temp)
            }
        }
        _ = fsync(fd)
        return (size, hasher.finish())
    }

    /// Simulated transit corruption of a file about to be stored; returns its new digests.
    private func maybeCorrupt(_ temp: String, size: Int64, digests: OwnCloudHasher.Digests) throws -> OwnCloudHasher.Digests {
        guard size > 0, env.control.takeCorruption(provider: "owncloud") else { return digests }
        try DropboxFiles.corrupt(temp, from: 0, size: size)
        return try OwnCloudHasher.digests(ofFile: temp)
    }

    private func put(_ request: Request, path: DavPath) async throws -> Response {
        guard let name = path.components.last else {
            return OwnCloudWire.conflict("PUT is not allowed on non-files.")
        }
        if let problem = checkNames([name]) { return problem }
        let target = path.filesPath
        // The request URI is the destination: If-None-Match: * is "only if nothing is there".
        let ifNoneMatchStar = request.headers[.ifNoneMatch]?.trimmingCharacters(in: .whitespaces) == "*"
        let existing = await store.entry(target)
        if let failed = preconditions(request, exists: existing != nil, etag: existing?.folder == false ? existing?.etag : nil) {
            return failed
        }
        if let failed = await ifHeader(request, requestPath: path) { return failed }
        if let existing, existing.folder { return OwnCloudWire.conflict("PUT is not allowed on non-files.") }
        guard let parent = await store.entry(OwnCloudStore.parent(target)), parent.folder else {
            return OwnCloudWire.conflict("Files can only be created as children of collections")
        }
        let temp = store.tempPath()
        var (size, digests): (Int64, OwnCloudHasher.Digests)
        do { (size, digests) = try await receive(request, into: temp) } catch { unlink(temp); throw error }
        digests = try maybeCorrupt(temp, size: size, digests: digests)
        if checksumMismatch(request, digests) {
            unlink(temp)
            return OwnCloudWire.badRequest("The computed checksum does not match the one received from the client.")
        }
        let given = mtime(request)
        return try await commit(request, temp: temp, at: target, size: size, digests: digests, mtime: given, ifNoneMatchStar: ifNoneMatchStar)
    }

    /// Stores `temp` at `target`; `mustNotExist` (If-None-Match: * on a PUT, Overwrite: F on an
    /// assembly) is checked again atomically with the store.
    private func commit(_ request: Request, temp: String, at target: String, size: Int64, digests: OwnCloudHasher.Digests,
                        mtime given: Int64?, ifNoneMatchStar mustNotExist: Bool) async throws -> Response {
        var clientChecksum: String?
        if flavour == .nextcloud, let sent = request.headers[.ocChecksum]?.trimmingCharacters(in: .whitespaces), !sent.isEmpty {
            clientChecksum = sent
        }
        let outcome = try await store.putFile(target, temp: temp, size: size, digests: digests, clientChecksum: clientChecksum,
                                              mtime: given ?? now(), ifNoneMatchStar: mustNotExist, now: now())
        switch outcome {
        case .created(let e), .replaced(let e):
            env.counters.recordUpload(provider: "owncloud", path: target)
            if case .created = outcome { return Response(status: .created, headers: storedHeaders(e, mtimeGiven: given != nil)) }
            return Response(status: .noContent, headers: storedHeaders(e, mtimeGiven: given != nil))
        case .parentMissing:
            unlink(temp)
            return OwnCloudWire.conflict("Files can only be created as children of collections")
        case .isFolder:
            unlink(temp)
            return OwnCloudWire.conflict("PUT is not allowed on non-files.")
        case .exists:
            unlink(temp)
            return OwnCloudWire.preconditionFailed("An If-None-Match header was specified, but the ETag matched (or * was specified).", header: "If-None-Match")
        }
    }

    /// One `( … )` of an `If` header: `Not`, a state token `<…>`, an entity tag `[…]`.
    struct IfCondition: Equatable {
        var negate = false
        var token: String?
        var etag: String?
    }

    /// RFC 4918's `If` header as Sabre reads it: each `(…)` is one condition, for the resource
    /// named before it (`<uri>`) or, untagged, the request URI (nil); a `(…)` without a resource
    /// joins the previous one's. nil when it cannot be read.
    static func parseIf(_ header: String) -> [(uri: String?, conditions: [IfCondition])]? {
        var out: [(uri: String?, conditions: [IfCondition])] = []
        let chars = Array(header)
        var i = 0
        var pendingURI: String?
        func read(until end: Character) -> String? {
            let start = i
            while i < chars.count, chars[i] != end { i += 1 }
            guard i < chars.count else { return nil }
            defer { i += 1 }
            return String(chars[start..<i])
        }
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace { i += 1; continue }
            if c == "<" {
                i += 1
                guard let uri = read(until: ">") else { return nil }
                pendingURI = uri
            } else if c == "(" {
                i += 1
                guard let inner = read(until: ")") else { return nil }
                var cond = IfCondition()
                var rest = Substring(inner).drop(while: \.isWhitespace)
                if rest.hasPrefix("Not") { cond.negate = true; rest = rest.dropFirst(3).drop(while: \.isWhitespace) }
                if rest.hasPrefix("<"), let close = rest.firstIndex(of: ">") {
                    cond.token = String(rest[rest.index(after: rest.startIndex)..<close])
                    rest = rest[rest.index(after: close)...].drop(while: \.isWhitespace)
                }
                if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                    cond.etag = String(rest[rest.index(after: rest.startIndex)..<close])
                }
                if let uri = pendingURI {
                    out.append((uri, [cond]))
                    pendingURI = nil
                } else if !out.isEmpty {
                    out[out.count - 1].conditions.append(cond)
                } else {
                    out.append((nil, [cond]))
                }
            } else {
                return nil
            }
        }
        return out
    }

    /// Sabre's evaluation of an `If` header (the desktop clients send `If: <destination>
    /// (["etag"])` on the MOVE that assembles a changed file, as If-Match would be judged
    /// against the source): for each resource one condition must hold; an etag condition holds
    /// when the resource is a file with that etag. The emulation holds no locks: a state token
    /// never matches (so `Not <token>` always does). 412 otherwise.
    private func ifHeader(_ request: Request, requestPath: DavPath) async -> Response? {
        guard let header = request.headers[HTTPField.Name("If")!] else { return nil }
        guard let lists = Self.parseIf(header) else { return OwnCloudWire.badRequest("The If header could not be parsed") }
        for (uri, conditions) in lists {
            var etag: String?
            if let target = uri.flatMap(Self.destination) ?? (uri == nil ? requestPath : nil), target.space == "files",
               let e = await store.entry(target.filesPath), !e.folder {
                etag = "\"\(e.etag)\""
            }
            let holds = conditions.contains { c in
                let tokenValid = c.token == nil
                var etagValid = true
                if let want = c.etag, tokenValid { etagValid = etag == want }
                return (tokenValid && etagValid) != c.negate
            }
            if !holds {
                return OwnCloudWire.preconditionFailed("Failed to find a valid token/etag combination for \(uri ?? request.uri.path)", header: "If")
            }
        }
        return nil
    }

    /// Sabre's `checkPreconditions`: `If-Match` and `If-None-Match` are judged against the node
    /// at the request URI (for MOVE and COPY the source, never the destination); `etag` is the
    /// node's when it is a file (Sabre compares file etags only). nil when they pass.
    private func preconditions(_ request: Request, exists: Bool, etag: String?) -> Response? {
        let quoted = etag.map { "\"\($0)\"" }
        func tags(_ value: String) -> [String] {
            value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "\\\"", with: "\"") }
        }
        if let ifMatch = request.headers[.ifMatch] {
            guard exists else {
                return OwnCloudWire.preconditionFailed("An If-Match header was specified and the resource did not exist", header: "If-Match")
            }
            if ifMatch.trimmingCharacters(in: .whitespaces) != "*", quoted == nil || !tags(ifMatch).contains(quoted!) {
                return OwnCloudWire.preconditionFailed("An If-Match header was specified, but none of the specified ETags matched.", header: "If-Match")
            }
        }
        if let ifNoneMatch = request.headers[.ifNoneMatch], exists {
            if ifNoneMatch.trimmingCharacters(in: .whitespaces) == "*" || (quoted != nil && tags(ifNoneMatch).contains(quoted!)) {
                return OwnCloudWire.preconditionFailed("An If-None-Match header was specified, but the ETag matched (or * was specified).", header: "If-None-Match")
            }
        }
        return nil
    }

    private func get(_ path: String, head: Bool) async throws -> Response {
        guard let e = await store.entry(path) else {
            return OwnCloudWire.notFound("File with name \(relative(path)) could not be located")
        }
        if e.folder {
            return OwnCloudWire.sabreError(.notImplemented, "Sabre\\DAV\\Exception\\NotImplemented", "GET is only implemented on File objects")
        }
        var headers: HTTPFields = [
            .contentType: OwnCloudWire.mimeType((path as NSString).lastPathComponent),
            .eTag: "\"\(e.etag)\"", .ocETag: "\"\(e.etag)\"",
            .lastModified: OwnCloudWire.httpDate(e.mtime),
            .ocFileID: fileIDString(e.fileID),
        ]
        switch flavour {
        case .owncloud: if let d = e.digests { headers[.ocChecksum] = "SHA1:\(d.sha1)" }
        case .nextcloud: if let c = e.clientChecksum, !c.isEmpty { headers[.ocChecksum] = c }
        }
        if head {
            headers[.contentLength] = String(e.size)
            return Response(status: .ok, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: DropboxFiles.responseBody(store.blobPath(e.blob), size: e.size))
    }

    /// Sabre's `Overwrite`: `T` (the default) replaces what is at the destination, `F` makes an
    /// existing destination a 412; anything else is refused.
    private func overwriteHeader(_ request: Request) -> Bool? {
        switch (request.headers[.davOverwrite] ?? "T").trimmingCharacters(in: .whitespaces).uppercased() {
        case "T": return true
        case "F": return false
        default: return nil
        }
    }

    private static let badOverwrite = OwnCloudWire.badRequest("The HTTP Overwrite header should be either T or F")

    private enum Destination {
        case success(String)
        case failure(Response)
    }

    private func filesDestination(_ request: Request) -> Destination {
        guard let value = request.headers[.davDestination] else {
            return .failure(OwnCloudWire.badRequest("The destination header was not supplied"))
        }
        guard let dest = Self.destination(value), dest.space == "files", dest.user == Self.user, !dest.components.isEmpty else {
            return .failure(OwnCloudWire.sabreError(.badGateway, "Sabre\\DAV\\Exception\\BadGateway", "The destination URL is not on this server"))
        }
        if let problem = checkNames([dest.components.last!]) { return .failure(problem) }
        return .success(dest.filesPath)
    }

    private func move(_ request: Request, path: DavPath) async throws -> Response {
        let source = await store.entry(path.filesPath)
        if let failed = preconditions(request, exists: source != nil, etag: source?.folder == false ? source?.etag : nil) { return failed }
        if let failed = await ifHeader(request, requestPath: path) { return failed }
        let to: String
        switch filesDestination(request) {
        case .success(let p): to = p
        case .failure(let r): return r
        }
        guard let overwrite = overwriteHeader(request) else { return Self.badOverwrite }
        switch try await store.move(path.filesPath, to: to, overwrite: overwrite, now: now()) {
        case .moved(let created):
            var h: HTTPFields = [.contentLength: "0"]
            if let e = await store.entry(to) { h[.ocFileID] = fileIDString(e.fileID); h[.eTag] = "\"\(e.etag)\""; h[.ocETag] = "\"\(e.etag)\"" }
            return Response(status: created ? .created : .noContent, headers: h)
        case .notFound: return OwnCloudWire.notFound("File with name \(relative(path.filesPath)) could not be located")
        case .parentMissing: return OwnCloudWire.conflict("The destination node is not found")
        case .exists:
            return OwnCloudWire.preconditionFailed("The destination node already exists, and the overwrite header is set to false", header: "Overwrite")
        case .identical:
            return OwnCloudWire.sabreError(.forbidden, "Sabre\\DAV\\Exception\\Forbidden", "Source and destination uri are identical.")
        case .intoItself:
            return OwnCloudWire.conflict("The destination may not be part of the same subtree as the source path.")
        }
    }

    // MARK: Chunked uploads

    private func uploadHref(_ id: String?, _ chunk: String? = nil) -> String {
        var href = Self.davPrefix + "uploads/\(Self.user)/"
        if let id { href += OwnCloudWire.hrefPath(id) + "/" }
        if let chunk { href = String(href.dropLast()) + "/" + OwnCloudWire.hrefPath(chunk) }
        return href
    }

    private static func chunkOrder(_ a: String, _ b: String) -> Bool {
        if let x = Int64(a), let y = Int64(b), x != y { return x < y }
        return a < b
    }

    private func uploads(_ request: Request, path: DavPath, context: SandboxRequestContext) async throws -> Response {
        let method = request.method.rawValue
        let comps = path.components
        if comps.isEmpty {
            guard method == "PROPFIND" else {
                return OwnCloudWire.sabreError(.methodNotAllowed, "Sabre\\DAV\\Exception\\MethodNotAllowed", "Method not allowed")
            }
            let (depth1, props) = try await propfindRequest(request, context: context)
            var items = [DavItem(href: uploadHref(nil), name: Self.user, folder: true, size: 0, etag: "", mtime: now())]
            if depth1 {
                for (id, up) in await store.allUploads() {
                    items.append(DavItem(href: uploadHref(id), name: id, folder: true, size: up.chunks.values.reduce(0) { $0 + $1.size },
                                         etag: up.etag, mtime: up.created))
                }
            }
            return multistatus(items, props: props)
        }
        let id = comps[0]
        let missing = OwnCloudWire.notFound("File with name \(comps.joined(separator: "/")) could not be located")
        switch (method, comps.count) {
        case ("MKCOL", 1):
            if let problem = checkNames([id]) { return problem }
            guard try await store.createUpload(id, now: now()) else {
                return OwnCloudWire.sabreError(.methodNotAllowed, "Sabre\\DAV\\Exception\\MethodNotAllowed", "The resource you tried to create already exists")
            }
            return Response(status: .created, headers: [.contentLength: "0"])
        case ("PROPFIND", 1):
            let (depth1, props) = try await propfindRequest(request, context: context)
            guard let up = await store.upload(id) else { return missing }
            var items = [DavItem(href: uploadHref(id), name: id, folder: true, size: up.chunks.values.reduce(0) { $0 + $1.size },
                                 etag: up.etag, mtime: up.created)]
            if depth1 {
                for name in up.chunks.keys.sorted(by: Self.chunkOrder) {
                    let c = up.chunks[name]!
                    items.append(DavItem(href: uploadHref(id, name), name: name, folder: false, size: c.size, etag: c.blob.prefix(13).description, mtime: c.mtime))
                }
            }
            return multistatus(items, props: props)
        case ("PROPFIND", 2):
            let (_, props) = try await propfindRequest(request, context: context)
            guard let c = await store.upload(id)?.chunks[comps[1]] else { return missing }
            return multistatus([DavItem(href: uploadHref(id, comps[1]), name: comps[1], folder: false, size: c.size,
                                        etag: c.blob.prefix(13).description, mtime: c.mtime)], props: props)
        case ("PUT", 2):
            if let problem = checkNames([comps[1]]) { return problem }
            guard await store.upload(id) != nil else { return OwnCloudWire.conflict("Files can only be created as children of collections") }
            let temp = store.tempPath()
            let size: Int64
            do { (size, _) = try await receive(request, into: temp) } catch { unlink(temp); throw error }
            guard let new = try await store.putChunk(id, name: comps[1], temp: temp, size: size, now: now()) else {
                unlink(temp)
                return OwnCloudWire.conflict("Files can only be created as children of collections")
            }
            return Response(status: new ? .created : .noContent, headers: [.contentLength: "0"])
        case ("DELETE", 1):
            return try await store.deleteUpload(id) ? Response(status: .noContent) : missing
        case ("DELETE", 2):
            return try await store.deleteChunk(id, name: comps[1]) ? Response(status: .noContent) : missing
        case ("MOVE", 2) where comps[1] == ".file":
            return try await assemble(request, id: id)
        case ("GET", _), ("HEAD", _):
            return OwnCloudWire.sabreError(.notImplemented, "Sabre\\DAV\\Exception\\NotImplemented", "GET is only implemented on File objects")
        default:
            if await store.upload(id) == nil { return missing }
            return OwnCloudWire.sabreError(.methodNotAllowed, "Sabre\\DAV\\Exception\\MethodNotAllowed", "Method not allowed")
        }
    }

    private func assemble(_ request: Request, id: String) async throws -> Response {
        guard let up = await store.upload(id) else {
            return OwnCloudWire.notFound("File with name \(id)/.file could not be located")
        }
        // Preconditions are the request URI's: `.file` exists while the upload does, so
        // If-None-Match: * always fails here; Overwrite: F is what guards the destination.
        if let failed = preconditions(request, exists: true, etag: up.etag) { return failed }
        if let failed = await ifHeader(request, requestPath: DavPath(space: "uploads", user: Self.user, components: [id, ".file"])) { return failed }
        let target: String
        switch filesDestination(request) {
        case .success(let p): target = p
        case .failure(let r): return r
        }
        guard let overwrite = overwriteHeader(request) else { return Self.badOverwrite }
        guard let parent = await store.entry(OwnCloudStore.parent(target)), parent.folder else {
            return OwnCloudWire.conflict("The destination node is not found")
        }
        let existing = await store.entry(target)
        if existing != nil && !overwrite {
            return OwnCloudWire.preconditionFailed("The destination node already exists, and the overwrite header is set to false", header: "Overwrite")
        }
        if let existing, existing.folder { return OwnCloudWire.conflict("PUT is not allowed on non-files.") }
        if env.control.take(.ownCloudSlowAssembly) { try await Task.sleep(for: .seconds(3)) }
        let names = up.chunks.keys.sorted(by: Self.chunkOrder)
        let sum = up.chunks.values.reduce(Int64(0)) { $0 + $1.size }
        if let text = request.headers[.ocTotalLength] {
            guard let total = Int64(text.trimmingCharacters(in: .whitespaces)), total == sum else {
                return OwnCloudWire.badRequest("Chunks on server do not sum up to \(text) but to \(sum) bytes")
            }
        }
        let temp = store.tempPath()
        var hasher = OwnCloudHasher()
        do {
            let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw DropboxFiles.IOError(description: "open \(temp)") }
            defer { close(fd) }
            for name in names {
                try DropboxFiles.read(store.blobPath(up.chunks[name]!.blob)) { raw in
                    hasher.update(raw)
                    try DropboxFiles.writeAll(fd, raw, path: temp)
                }
            }
            _ = fsync(fd)
        } catch {
            unlink(temp)
            throw error
        }
        let digests = try maybeCorrupt(temp, size: sum, digests: hasher.finish())
        if checksumMismatch(request, digests) {
            unlink(temp)
            return OwnCloudWire.badRequest("The computed checksum does not match the one received from the client.")
        }
        let response = try await commit(request, temp: temp, at: target, size: sum, digests: digests, mtime: mtime(request),
                                        ifNoneMatchStar: !overwrite)
        if response.status == .created || response.status == .noContent {
            _ = try await store.deleteUpload(id)
            if env.control.take(.ownCloudAssembled412) {
                return OwnCloudWire.preconditionFailed("The destination node already exists, and the overwrite header is set to false",
                                                       header: "Overwrite")
            }
            if env.control.take(.ownCloudAssemblyLocked) {
                return OwnCloudWire.sabreError(HTTPResponse.Status(code: 423, reasonPhrase: "Locked"), "OCA\\DAV\\Connector\\Sabre\\Exception\\FileLocked",
                                               "\"\(target)\" is locked")
            }
        }
        return response
    }

    // MARK: OCS shares

    private func ocs(_ request: Request, context: SandboxRequestContext, id: String?) async throws -> Response {
        var request = request
        let query = request.uri.queryParameters
        let json = query.get("format")?.lowercased() == "json"
        guard authorized(request) else {
            return OwnCloudWire.ocs(status: .unauthorized, code: 997, message: "Unauthorised", data: .array([]), json: json)
        }
        guard request.headers[.ocsAPIRequest]?.lowercased() == "true" else {
            return OwnCloudWire.ocs(status: .unauthorized, code: 997, message: "CSRF check failed", data: .array([]), json: json)
        }
        let body = try await request.collectBody(upTo: 1 << 20)
        let host = request.head.authority ?? "127.0.0.1"
        func fail(_ code: Int, _ message: String) -> Response {
            OwnCloudWire.ocs(code: code, message: message, data: .array([]), json: json)
        }
        guard var fields = SandboxForm.fields(request.uri.query ?? ""),
              let form = SandboxForm.fields(String(decoding: body.readableBytesView, as: UTF8.self)) else {
            return OwnCloudWire.ocs(status: .badRequest, code: 400, message: "Malformed query or form", data: .array([]), json: json)
        }
        fields.merge(form) { _, body in body }
        func ok(_ data: JSONValue) -> Response { OwnCloudWire.ocs(code: 100, message: "OK", data: data, json: json) }

        if let id {
            guard let shareID = Int64(id), let share = await store.share(id: shareID) else {
                return fail(404, "Wrong share ID, share doesn't exist")
            }
            if request.method == .delete {
                _ = try await store.deleteShare(id: shareID)
                return ok(.array([]))
            }
            return ok(.array([await shareJSON(share, host: host)].compactMap { $0 }))
        }

        if request.method == .get {
            var ids: Set<Int64>?
            if let path = fields["path"], !path.isEmpty {
                let normalized = Self.normalize(path)
                guard let e = await store.entry(normalized) else { return fail(404, "Wrong path, file/folder doesn't exist") }
                ids = [e.fileID]
                if fields["subfiles"] == "true" {
                    guard e.folder else { return fail(400, "not a directory") }
                    ids = Set(await store.children(normalized).map(\.1.fileID))
                }
            }
            var out: [JSONValue] = []
            for s in await store.shares(fileIDs: ids) { if let j = await shareJSON(s, host: host) { out.append(j) } }
            return ok(.array(out))
        }

        // POST: create a share.
        guard let rawPath = fields["path"], !rawPath.isEmpty else { return fail(404, "Please specify a file or folder path") }
        let path = Self.normalize(rawPath)
        guard let entry = await store.entry(path), path != "/" else { return fail(404, "Wrong path, file/folder doesn't exist") }
        guard let typeText = fields["shareType"], let shareType = Int(typeText) else { return fail(404, "unknown share type") }
        guard shareType == 3 else {
            return shareType == 0 || shareType == 1 || shareType == 6
                ? fail(404, "Please specify a valid user") : fail(400, "unknown share type")
        }
        var permissions = 1
        if let p = fields["permissions"], !p.isEmpty {
            guard let n = Int(p), n >= 0 && n <= 31 else { return fail(404, "invalid permissions") }
            permissions = n
        }
        let publicUpload = fields["publicUpload"]?.lowercased() == "true" || permissions & ~(1 | 16) != 0
        if publicUpload {
            return entry.folder ? fail(403, "Public upload disabled by the administrator")
                : fail(404, "Public upload is only possible for publicly shared folders")
        }
        var expiration: String?
        if let text = fields["expireDate"], !text.isEmpty {
            guard let date = OwnCloudWire.parseCivilDate(text) else { return fail(400, "Invalid date, date format must be YYYY-MM-DD") }
            guard date >= OwnCloudWire.civilDate(env.clock()) else { return fail(404, "Expiration date is in the past") }
            expiration = date
        }
        if expiration == nil, env.control.isArmed(.ownCloudEnforcedExpiry) {
            expiration = OwnCloudWire.civilDate(env.clock().addingTimeInterval(7 * 86_400))
        }
        let password = !(fields["password"] ?? "").isEmpty && !env.control.take(.ownCloudLinkWithoutPassword)
        let share = try await store.createShare(fileID: entry.fileID, permissions: permissions & 1 == 0 ? 1 : permissions, password: password,
                                                expiration: expiration, name: fields["name"] ?? "", now: now())
        return ok(await shareJSON(share, host: host) ?? .null)
    }

    private static func normalize(_ path: String) -> String {
        let parts = path.split(separator: "/").map(String.init)
        return "/" + parts.joined(separator: "/")
    }

    private func shareJSON(_ s: OwnCloudShare, host: String) async -> JSONValue? {
        guard let (path, e) = await store.entry(fileID: s.fileID) else { return nil }
        let parentID = await store.entry(OwnCloudStore.parent(path))?.fileID ?? 0
        let redacted: JSONValue = s.password ? .string("***redacted***") : .null
        let name = (path as NSString).lastPathComponent
        return .object([
            ("id", .string(String(s.id))),
            ("share_type", .int(3)),
            ("uid_owner", .string(Self.user)),
            ("displayname_owner", .string(Self.user)),
            ("permissions", .int(Int64(s.permissions))),
            ("stime", .int(s.stime)),
            ("parent", .null),
            ("expiration", s.expiration.map { .string("\($0) 00:00:00") } ?? .null),
            ("token", .string(s.token)),
            ("uid_file_owner", .string(Self.user)),
            ("displayname_file_owner", .string(Self.user)),
            ("additional_info_owner", .null),
            ("additional_info_file_owner", .null),
            ("path", .string(path)),
            ("item_type", .string(e.folder ? "folder" : "file")),
            ("mimetype", .string(e.folder ? "httpd/unix-directory" : OwnCloudWire.mimeType(name))),
            ("storage_id", .string("home::\(Self.user)")),
            ("storage", .int(1)),
            ("item_source", .int(e.fileID)),
            ("file_source", .int(e.fileID)),
            ("file_parent", .int(parentID)),
            ("file_target", .string("/" + name)),
            ("share_with", redacted),
            ("share_with_displayname", redacted),
            ("share_with_additional_info", .null),
            ("name", .string(s.name)),
            ("url", .string("http://\(host)/owncloud/s/\(s.token)")),
            ("mail_send", .int(0)),
            ("attributes", .null),
        ])
    }
}
