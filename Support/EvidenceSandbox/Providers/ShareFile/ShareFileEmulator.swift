import EvidenceCore
import Foundation
import Glibc
import Hummingbird

/// ShareFile (OAuth 2.0, the v3 OData API and the storage-zone upload server) as the sandbox
/// serves it, under `/sharefile/`.
///
/// Client configuration: `subdomain = sandbox`, `auth_url = {S}/sharefile/oauth/token`,
/// `base_url = {S}/sharefile/sf/v3` (`https://sandbox.sf-api.com/sf/v3/X` ↔ `{S}/sharefile/sf/v3/X`).
///
/// Fixed sandbox credentials: client id `sandbox-sharefile-client`, secret
/// `sandbox-sharefile-secret`, user `sandbox@example.org` / `sandbox-password`.
///
/// Endpoints:
/// - `POST /sharefile/oauth/token` (form): `password`, `refresh_token` (the refresh token stays
///   valid and is answered again), `authorization_code` → `{"access_token","refresh_token",
///   "token_type":"bearer","expires_in","appcp":"sharefile.com","apicp":"sf-api.com","subdomain":"sandbox"}`;
///   errors 400 `{"error":"invalid_grant"|"invalid_client"|"unsupported_grant_type"|"invalid_request","error_description"}`.
/// - `GET /sharefile/oauth/authorize?response_type=code&client_id&redirect_uri?&state?` → HTML with
///   `<code id="auth-code">` (single use, 5 minutes); the "Continue" link is the redirect ShareFile
///   would make (`code`, `state`, `subdomain`, `apicp`, `appcp`).
/// - `GET /sharefile/sf/v3/Items` (home folder), `GET …/Items/ByPath?path=/a/b` (absolute: from the
///   account root, read-only, whose child is the home folder "My Files & Folders"; `/` = the root),
///   `GET …/Items({id})/ByPath?path=/a/b` (relative to folder `id`; case-insensitive),
///   `GET …/Items({id})` (`home` is an alias), `GET …/Items({id})/Children`,
///   `POST …/Items({parent})/Folder?overwrite=false`, `DELETE …/Items({id})` → 204,
///   `GET …/Items({id})/Download` → 302 to `{S}/sharefile/dl/<opaque>` (no auth, 15 min; `redirect=false`
///   answers the DownloadSpecification instead), `POST …/Items({folder})/Upload2`.
/// - Upload server (no Authorization: the upload id is the capability):
///   `POST {S}/sharefile/upload/{id}/chunk?uploadid=…` and `GET|POST {S}/sharefile/upload/{id}/finish?uploadid=…`.
/// - `POST /sharefile/sf/v3/Shares?notify=false`, `GET /sharefile/sf/v3/Shares`, `GET …/Shares({id})`.
///
/// Quirks emulated:
/// - 401 (missing, unknown, expired or pre-`expire-tokens` token):
///   `{"code":"Unauthorized","message":{"lang":"en-US","value":"Unauthorized"},"reason":"Unauthorized"}`.
///   Other errors are OData: `{"code":"NotFound"|"Conflict"|"BadRequest","message":{"lang":"en-US","value"},"reason"}`.
/// - Items carry `odata.metadata` (single answers), `odata.type`, `Id` (`fo…` folders, `fi…` files),
///   `Name`, `FileName`, `FileSizeBytes`, `Hash` (MD5 hex, files), `CreationDate`, `Parent`, `url`.
///   Collections are `{"odata.metadata","odata.count","value":[…]}`.
/// - Names are case-insensitive; `\ / : * ? " < > |`, control characters, a trailing space or
///   period, empty and over-255-character names → 400 BadRequest.
/// - Folder create: a same-named item exists → 409 Conflict "A folder with the same name already
///   exists"; with `overwrite=true` the existing folder is answered (200) instead.
/// - Request bodies are read as ShareFile's .NET binder reads them: member names and enum values
///   in any letter case (`"fileName"`, `"method":"threaded"` as rclone sends them).
/// - Upload2 takes the SDK's `UploadRequestParams`: the size is `FileSize` (required for Threaded;
///   an unknown `FileLength` is ignored, as ShareFile ignores it). It needs `"Raw":true` (the
///   sandbox does not take multipart bodies). `Overwrite:false` and
///   the name exists → 409 Conflict at Upload2 (the contract's choice: real accounts differ with
///   versioning settings); `Overwrite:true` replaces the file (the new version gets a new `Id`).
///   Standard is limited to 128 MiB. Threaded: each chunk is `POST ChunkUri&index=N&byteOffset=X&hash=<md5>`;
///   chunks are sent in parallel, so they come in any order and each is written at its `byteOffset`
///   (rclone sends its chunks concurrently; the last also carries `finish=true&fileSize&fileHash`,
///   and FinishUri follows); the chunk's MD5 must match `hash`; finishing before every byte is
///   there fails with `expectedByteOffset` = the first missing byte. Then `GET FinishUri&respformat=json&filehash=<md5>` (the SDK's
///   call; rclone POSTs FinishUri bare and gets the same JSON); with another `respformat` the finish answers
///   `OK` or `ERROR: message` as text.
/// - The upload server answers HTTP 200 even on failure, with `{"error":true,"errorMessage","errorCode"}`
///   (wrong file hash, missing chunks, bad chunk hash or offset, unknown upload id). Success is
///   `{"error":false,"value":[{"uploadid","parentid","id","filename","displayname","size","md5"}]}`
///   (a threaded chunk: `{"error":false,"value":null}`). A Standard upload without `fmt=json` answers `OK`.
///   Quirks `sharefile-chunk-error-text` / `-json`: the next chunk or finish answers 200 with
///   `ERROR: …` (the SDK's documented failure form) or `{"error":true,…}`, storing nothing.
/// - Upload ids persist: a client that crashed re-posts the remaining chunks to the same ChunkUri,
///   and a Threaded Upload2 for the same folder, name and length while one is unfinished answers that
///   upload's specification again with `IsResume:true`, `ResumeIndex`, `ResumeOffset`, `ResumeFileHash`.
/// - Corruption (`/_sandbox/corrupt-next-upload?provider=sharefile`) hits the next body carrying file
///   bytes: a Standard upload (stored `Hash` differs from the client's MD5) or a Threaded chunk
///   (its `hash` check fails; the client re-posts it).
/// - Shares: `ShareType:"Send"` only (others → 400); `Uri` is `https://sandbox.sharefile.com/d-<Id>`;
///   without `ExpirationDate` a share expires 30 days after it is made (`9999-12-31…` = never);
///   `GET Shares` lists them with `Items` (`includeExpired=false`: only those not expired). Lists (`Shares`, `Items(id)/Children`) are OData feeds:
///   `$top`/`$skip`, `odata.nextLink` while more follow; quirk `sharefile-small-pages` makes a
///   page hold one entry.
/// - Quirk `sharefile-eu-tenant`: token answers name `apicp: sf-api.eu`, `appcp: sharefile.eu`.
public final class ShareFileEmulator: Sendable {
    let env: ProviderEnvironment
    let store: BoxShareFilePersisted<ShareFileState>
    let memory = ShareFileMemory()
    let filesDirectory: String
    let uploadsDirectory: String
    let tmpDirectory: String

    public static let clientId = "sandbox-sharefile-client"
    public static let clientSecret = "sandbox-sharefile-secret"
    public static let username = "sandbox@example.org"
    public static let password = "sandbox-password"
    static let codeLifetime: Double = 300
    static let downloadLifetime: Double = 15 * 60
    static let standardLimit: Int64 = 128 * 1024 * 1024

    public init(environment: ProviderEnvironment) throws {
        self.env = environment
        let dir = environment.stateDirectory
        filesDirectory = (dir as NSString).appendingPathComponent("files")
        uploadsDirectory = (dir as NSString).appendingPathComponent("uploads")
        tmpDirectory = (dir as NSString).appendingPathComponent("tmp")
        for sub in [filesDirectory, uploadsDirectory, tmpDirectory] {
            try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
        }
        let now = environment.clock().timeIntervalSince1970
        let random = environment.random
        store = try BoxShareFilePersisted(path: (dir as NSString).appendingPathComponent("state.json")) {
            var state = ShareFileState()
            let home = Self.itemId(prefix: "fo", random)
            state.homeId = home
            state.items[home] = ShareFileItem(id: home, isFolder: true, name: "My Files & Folders", parentId: nil,
                                              description: "", size: 0, md5: nil, createdAt: now, modifiedAt: now,
                                              clientCreatedAt: nil)
            return state
        }
    }

    /// ShareFile-looking ids: a two-letter type prefix on a UUID-shaped hex string.
    static func itemId(prefix: String, _ random: SandboxRandom) -> String {
        let h = Hex.encode(random.bytes(16))
        let u = Array(h)
        let uuid = String(u[0..<8]) + "-" + String(u[8..<12]) + "-" + String(u[12..<16]) + "-" + String(u[16..<20]) + "-" + String(u[20..<32])
        return prefix + uuid.dropFirst(prefix.count)
    }

    public func addRoutes(to router: Router<SandboxRequestContext>) {
        router.post("sharefile/oauth/token") { request, _ in try await self.token(request) }
        router.get("sharefile/oauth/authorize") { request, _ in self.authorizePage(request) }
        for method in [HTTPRequest.Method.get, .post, .delete, .put, .patch] {
            router.on("sharefile/sf/v3/**", method: method) { request, _ in try await self.api(request) }
        }
        router.post("sharefile/upload/:id/chunk") { request, context in
            try await self.chunk(try context.parameters.require("id"), request)
        }
        router.post("sharefile/upload/:id/finish") { request, context in
            try await self.finish(try context.parameters.require("id"), request)
        }
        router.get("sharefile/upload/:id/finish") { request, context in
            try await self.finish(try context.parameters.require("id"), request)
        }
        router.get("sharefile/dl/:token") { _, context in self.download(try context.parameters.require("token")) }
    }

    // MARK: Errors and auth

    func odataError(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        .json(.object([("code", .string(code)), ("message", .object([("lang", .string("en-US")), ("value", .string(message))])),
                       ("reason", .string(code))]), status: status)
    }

    func unauthorized() -> Response {
        .json(.object([("code", .string("Unauthorized")),
                       ("message", .object([("lang", .string("en-US")), ("value", .string("Unauthorized"))])),
                       ("reason", .string("Unauthorized"))]), status: .unauthorized)
    }

    func notFound(_ what: String = "Item") -> Response { odataError(.notFound, "NotFound", "\(what) not found") }

    func authorized(_ request: Request) -> Bool {
        guard let bearer = BoxShareFileSupport.bearer(request) else { return false }
        let now = env.clock().timeIntervalSince1970
        let generation = env.control.tokenGeneration
        return store.read { state in
            guard let t = state.accessTokens[bearer] else { return false }
            return t.expiresAt > now && t.generation >= generation
        }
    }

    func oauthError(_ code: String, _ description: String) -> Response {
        .json(.object([("error", .string(code)), ("error_description", .string(description))]), status: .badRequest)
    }

    func token(_ request: Request) async throws -> Response {
        guard let data = try await BoxShareFileSupport.collect(request) else {
            return oauthError("invalid_request", "request body too large")
        }
        guard let form = SandboxForm.fields(String(decoding: data, as: UTF8.self)) else {
            return oauthError("invalid_request", "the request body is not a valid form")
        }
        let now = env.clock().timeIntervalSince1970
        guard let grant = form["grant_type"], !grant.isEmpty else { return oauthError("invalid_request", "grant_type is required") }
        guard ["password", "refresh_token", "authorization_code"].contains(grant) else {
            return oauthError("unsupported_grant_type", "unsupported grant type: \(grant)")
        }
        guard form["client_id"] == Self.clientId, form["client_secret"] == Self.clientSecret else {
            return oauthError("invalid_client", "invalid client id or secret")
        }
        var refresh: String?
        switch grant {
        case "password":
            guard form["username"]?.lowercased() == Self.username, form["password"] == Self.password else {
                return oauthError("invalid_grant", "invalid username or password")
            }
        case "refresh_token":
            guard let presented = form["refresh_token"], store.read({ $0.refreshTokens.contains(presented) }) else {
                return oauthError("invalid_grant", "invalid refresh token")
            }
            refresh = presented
        default:
            guard let code = form["code"], let expiry = memory.takeCode(code), expiry > now else {
                return oauthError("invalid_grant", "invalid or expired authorization code")
            }
        }
        let access = env.random.slug(length: 32)
        let newRefresh = refresh ?? env.random.slug(length: 40)
        try store.update { state in
            state.accessTokens = state.accessTokens.filter { $0.value.expiresAt > now }
            state.accessTokens[access] = ShareFileAccessToken(expiresAt: now + self.env.tokenLifetime,
                                                              generation: self.env.control.tokenGeneration)
            state.refreshTokens.insert(newRefresh)
        }
        return .json(.object([
            ("access_token", .string(access)),
            ("refresh_token", .string(newRefresh)),
            ("token_type", .string("bearer")),
            ("expires_in", .int(Int64(env.tokenLifetime))),
            ("appcp", .string(env.control.isArmed(.shareFileEUTenant) ? "sharefile.eu" : "sharefile.com")),
            ("apicp", .string(env.control.isArmed(.shareFileEUTenant) ? "sf-api.eu" : "sf-api.com")),
            ("subdomain", .string("sandbox")),
            ("access_files_folders", .bool(true)),
            ("modify_files_folders", .bool(true)),
            ("admin_users", .bool(false)),
            ("admin_accounts", .bool(false)),
            ("change_my_settings", .bool(true)),
            ("web_app_login", .bool(true)),
        ]))
    }

    func authorizePage(_ request: Request) -> Response {
        let q = request.uri.queryParameters
        guard q.get("response_type") == "code", q.get("client_id") == Self.clientId else {
            return .bytes(Array("<html><body><p>Invalid response_type or client_id</p></body></html>".utf8),
                          contentType: "text/html; charset=utf-8", status: .badRequest)
        }
        let code = env.random.slug(length: 32)
        memory.addCode(code, expiresAt: env.clock().timeIntervalSince1970 + Self.codeLifetime)
        var redirect: String?
        if let uri = q.get("redirect_uri") {
            var r = uri + (uri.contains("?") ? "&" : "?") + "code=\(code)"
            if let state = q.get("state") { r += "&state=" + (state.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? state) }
            r += "&subdomain=sandbox&apicp=sf-api.com&appcp=sharefile.com"
            redirect = r
        }
        return BoxShareFileSupport.authorizePage(provider: "ShareFile", code: code, redirect: redirect)
    }

    // MARK: API dispatch

    /// `…/sf/v3` as the client addressed it (for `odata.metadata` and `url` fields).
    func apiBase(_ request: Request) -> String { String(PublicHosts.url(request, sandboxPath: "/sharefile/sf/v3/").dropLast()) }

    /// `Items(fo…)` / `Items('fo…')` → the id.
    static func entityId(_ segment: String, collection: String) -> String? {
        guard segment.hasPrefix(collection + "("), segment.hasSuffix(")") else { return nil }
        var id = String(segment.dropFirst(collection.count + 1).dropLast())
        if id.hasPrefix("'"), id.hasSuffix("'"), id.count >= 2 { id = String(id.dropFirst().dropLast()) }
        return id
    }

    func api(_ request: Request) async throws -> Response {
        guard authorized(request) else { await BoxShareFileSupport.drain(request); return unauthorized() }
        let raw = request.uri.path
        let prefix = "/sharefile/sf/v3/"
        let rest = raw.hasPrefix(prefix) ? String(raw.dropFirst(prefix.count)) : ""
        let segments = rest.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let method = request.method
        let api = apiBase(request)
        switch (method, segments.count) {
        case (.get, 1) where segments[0] == "Items":
            if env.control.isArmed(.shareFileClientUser) { return odataError(.notFound, "NotFound", "Item not found: home") }
            return itemResponse(store.read { $0.homeId }, api)
        case (.get, 2) where segments[0] == "Items" && segments[1] == "ByPath":
            return byPath(request.uri.queryParameters.get("path") ?? "/", from: nil, api)
        case (.get, 1) where segments[0] == "Shares":
            return listShares(request, api)
        case (.post, 1) where segments[0] == "Shares":
            return try await createShare(request, api)
        default: break
        }
        if let shareId = segments.first.flatMap({ Self.entityId($0, collection: "Shares") }), segments.count == 1, method == .get {
            return store.read { state in
                guard let s = state.shares[shareId] else { return notFound("Share") }
                return .json(ShareFileJSON.share(s, in: state, api: api, metadata: true))
            }
        }
        guard let first = segments.first, let rawId = Self.entityId(first, collection: "Items") else {
            await BoxShareFileSupport.drain(request)
            return odataError(.notFound, "NotFound", "Resource not found: \(raw)")
        }
        if rawId.lowercased() == "home", env.control.isArmed(.shareFileClientUser) {
            await BoxShareFileSupport.drain(request)
            return odataError(.notFound, "NotFound", "Item not found: home")
        }
        let id = rawId.lowercased() == "home" ? store.read { $0.homeId } : rawId
        switch (method, segments.count > 1 ? segments[1] : "") {
        case (.get, ""): return itemResponse(id, api)
        case (.delete, ""): return try deleteItem(id)
        case (.get, "Children"): return children(id, request, api)
        case (.get, "ByPath"): return byPath(request.uri.queryParameters.get("path") ?? "/", from: id, api)
        case (.post, "Folder"): return try await createFolder(parent: id, request, api)
        case (.post, "Upload2"), (.post, "Upload"): return try await upload2(folder: id, request, api)
        case (.get, "Download"): return downloadRedirect(id, request, api)
        default:
            await BoxShareFileSupport.drain(request)
            return odataError(.notFound, "NotFound", "Resource not found: \(raw)")
        }
    }

    func itemResponse(_ id: String, _ api: String) -> Response {
        store.read { state in
            guard let item = state.items[id] else { return notFound() }
            return .json(ShareFileJSON.item(item, in: state, api: api, metadata: true))
        }
    }

    /// The account root above the home folder: what an absolute `Items/ByPath` starts from.
    /// Read-only: nothing is created in it.
    static let rootId = "root"
    static let homeName = "My Files & Folders"

    func rootItem(_ state: ShareFileState) -> ShareFileItem {
        let home = state.items[state.homeId]
        return ShareFileItem(id: Self.rootId, isFolder: true, name: "Root", parentId: nil, description: "", size: 0, md5: nil,
                             createdAt: home?.createdAt ?? 0, modifiedAt: home?.modifiedAt ?? 0, clientCreatedAt: nil)
    }

    /// `Items/ByPath?path=/a/b` (absolute: from the account root, whose child is the home folder
    /// "My Files & Folders") or `Items(id)/ByPath?path=/a/b` (relative to folder `id`).
    func byPath(_ path: String, from start: String?, _ api: String) -> Response {
        store.read { state in
            var names = path.split(separator: "/").filter { !$0.isEmpty }.map(String.init)
            var current: String
            if let start {
                guard state.items[start]?.isFolder == true else { return notFound() }
                current = start
            } else {
                guard let first = names.first else { return .json(ShareFileJSON.item(rootItem(state), in: state, api: api, metadata: true)) }
                guard first.lowercased() == Self.homeName.lowercased() else {
                    return odataError(.notFound, "NotFound", "Item not found: \(path)")
                }
                names.removeFirst()
                current = state.homeId
            }
            for name in names {
                guard let child = ShareFileJSON.child(named: name, in: current, state: state) else {
                    return odataError(.notFound, "NotFound", "Item not found: \(path)")
                }
                current = child.id
            }
            guard let item = state.items[current] else { return notFound() }
            return .json(ShareFileJSON.item(item, in: state, api: api, metadata: true))
        }
    }

    /// Entries a page holds: all, or one under the quirk `sharefile-small-pages`.
    func pageSize(_ request: Request) -> Int {
        let top = request.uri.queryParameters.get("$top").flatMap { Int($0) }.map { max(1, $0) } ?? Int.max
        return env.control.isArmed(.shareFileSmallPages) ? 1 : top
    }

    /// An OData feed page of `all` from `$skip`, with `odata.nextLink` when more follow.
    func feed(_ all: [JSONValue], metadata: String, _ request: Request, _ api: String, path: String) -> Response {
        let skip = request.uri.queryParameters.get("$skip").flatMap { Int($0) }.map { max(0, $0) } ?? 0
        let size = pageSize(request)
        let page = Array(all.dropFirst(skip).prefix(size))
        var fields: [(String, JSONValue)] = [("odata.metadata", .string(metadata)), ("odata.count", .int(Int64(all.count))),
                                             ("value", .array(page))]
        if skip + page.count < all.count {
            var items = request.uri.queryParameters.filter { $0.key != "$skip" }.map { "\($0.key)=\($0.value)" }
            items.append("$skip=\(skip + page.count)")
            fields.append(("odata.nextLink", .string("\(api)/\(path)?" + items.joined(separator: "&"))))
        }
        return .json(.object(fields))
    }

    func children(_ id: String, _ request: Request, _ api: String) -> Response {
        store.read { state in
            guard let folder = state.items[id], folder.isFolder else { return notFound() }
            let list = ShareFileJSON.children(of: id, in: state).map { ShareFileJSON.item($0, in: state, api: api, metadata: false) }
            return feed(list, metadata: "\(api)/$metadata#Items", request, api, path: "Items(\(id))/Children")
        }
    }

    func jsonBody(_ request: Request) async throws -> JSONValue? {
        guard let data = try await BoxShareFileSupport.collect(request), let value = try? JSONValue.parse(data),
              case .object = value else { return nil }
        return value
    }

    func createFolder(parent: String, _ request: Request, _ api: String) async throws -> Response {
        guard let body = try await jsonBody(request) else { return odataError(.badRequest, "BadRequest", "Invalid JSON body") }
        guard let name = body[anyCase: "Name"]?.stringValue else { return odataError(.badRequest, "BadRequest", "Name is required") }
        if let problem = ShareFileJSON.nameProblem(name) { return odataError(.badRequest, "BadRequest", problem) }
        let overwrite = ["true", "1"].contains(request.uri.queryParameters.get("overwrite")?.lowercased() ?? "")
        let description = body[anyCase: "Description"]?.stringValue ?? ""
        let now = env.clock().timeIntervalSince1970
        let newId = Self.itemId(prefix: "fo", env.random)
        enum Outcome { case missing, notFolder, conflict, existing(ShareFileItem), created(ShareFileItem) }
        let outcome: Outcome = try store.update { state in
            guard let p = state.items[parent] else { return .missing }
            guard p.isFolder else { return .notFolder }
            if let other = ShareFileJSON.child(named: name, in: parent, state: state) {
                return overwrite && other.isFolder ? .existing(other) : .conflict
            }
            let folder = ShareFileItem(id: newId, isFolder: true, name: name, parentId: parent, description: description,
                                       size: 0, md5: nil, createdAt: now, modifiedAt: now, clientCreatedAt: nil)
            state.items[newId] = folder
            return .created(folder)
        }
        switch outcome {
        case .missing: return notFound()
        case .notFolder: return odataError(.badRequest, "BadRequest", "The parent item is not a folder")
        case .conflict: return odataError(.conflict, "Conflict", "A folder with the same name already exists")
        case .existing(let f), .created(let f):
            return store.read { .json(ShareFileJSON.item(f, in: $0, api: api, metadata: true)) }
        }
    }

    func blobPath(_ id: String) -> String { (filesDirectory as NSString).appendingPathComponent(id) }
    func partialPath(_ uploadId: String) -> String { (uploadsDirectory as NSString).appendingPathComponent(uploadId) }
    func tmpPath() -> String { (tmpDirectory as NSString).appendingPathComponent(BoxShareFileSupport.hex(env.random, bytes: 12)) }

    func deleteItem(_ id: String) throws -> Response {
        enum Outcome { case missing, root, deleted([String]) }
        let outcome: Outcome = try store.update { state in
            guard state.items[id] != nil else { return .missing }
            if id == state.homeId { return .root }
            var doomed = [id]
            var i = 0
            while i < doomed.count {
                doomed += state.items.values.filter { $0.parentId == doomed[i] }.map(\.id)
                i += 1
            }
            for d in doomed { state.items[d] = nil }
            return .deleted(doomed)
        }
        switch outcome {
        case .missing: return notFound()
        case .root: return odataError(.forbidden, "Forbidden", "The home folder cannot be deleted")
        case .deleted(let ids):
            for d in ids { try? FileManager.default.removeItem(atPath: blobPath(d)) }
            return Response(status: .noContent)
        }
    }

    func downloadRedirect(_ id: String, _ request: Request, _ api: String) -> Response {
        guard let item = store.read({ $0.items[id] }) else { return notFound() }
        guard !item.isFolder else { return odataError(.badRequest, "BadRequest", "The sandbox does not zip folders for download") }
        let token = env.random.slug(length: 40)
        memory.addDownload(token, fileId: id, expiresAt: env.clock().timeIntervalSince1970 + Self.downloadLifetime)
        let url = PublicHosts.url(request, sandboxPath: "/sharefile/dl/" + token)
        if request.uri.queryParameters.get("redirect")?.lowercased() == "false" {
            return .json(.object([
                ("odata.metadata", .string("\(api)/$metadata#ShareFile.Api.Models.DownloadSpecification@Element")),
                ("odata.type", .string("ShareFile.Api.Models.DownloadSpecification")),
                ("DownloadToken", .string(token)),
                ("PrepareXmlInfo", .string("")),
                ("DownloadUrl", .string(url)),
                ("DownloadPrepStatusURL", .null),
            ]))
        }
        return Response(status: .found, headers: [.location: url, .contentLength: "0"])
    }

    func download(_ token: String) -> Response {
        guard let grant = memory.download(token), grant.expiresAt > env.clock().timeIntervalSince1970,
              let file = store.read({ $0.items[grant.fileId] }) else {
            return .bytes(Array("Not Found".utf8), contentType: "text/plain", status: .notFound)
        }
        return BoxShareFileSupport.fileResponse(path: blobPath(file.id), size: file.size, filename: file.name)
    }

    // MARK: Shares

    func listShares(_ request: Request, _ api: String) -> Response {
        store.read { state in
            var shares = state.shareOrder.compactMap { state.shares[$0] }
            // `includeExpired=false` leaves out the shares past their ExpirationDate (the default lists them all).
            if request.uri.queryParameters.get("includeExpired")?.lowercased() == "false" {
                let now = env.clock().timeIntervalSince1970
                shares = shares.filter { s in ShareFileJSON.parseDate(s.expiration).map { $0 > now } ?? true }
            }
            return feed(shares.map { ShareFileJSON.share($0, in: state, api: api, metadata: false) },
                        metadata: "\(api)/$metadata#Shares", request, api, path: "Shares")
        }
    }

    func createShare(_ request: Request, _ api: String) async throws -> Response {
        guard let body = try await jsonBody(request) else { return odataError(.badRequest, "BadRequest", "Invalid JSON body") }
        let type = (body[anyCase: "ShareType"]?.stringValue ?? "Send").capitalized
        guard type == "Send" else {
            return odataError(.badRequest, "BadRequest", "The sandbox supports ShareType 'Send' only")
        }
        guard case .array(let listed)? = body[anyCase: "Items"], !listed.isEmpty else {
            return odataError(.badRequest, "BadRequest", "A Send share needs at least one item in Items")
        }
        let ids = listed.compactMap { $0[anyCase: "Id"]?.stringValue }
        guard ids.count == listed.count else { return odataError(.badRequest, "BadRequest", "Each item in Items needs an Id") }
        // Without an ExpirationDate a share lives 30 days; `9999-12-31` is "never".
        var expiration = ShareFileJSON.neverExpires
        if case .string(let s) = ShareFileJSON.date(env.clock().timeIntervalSince1970 + 30 * 86400) { expiration = s }
        if let text = body[anyCase: "ExpirationDate"]?.stringValue, !text.isEmpty {
            guard let t = ShareFileJSON.parseDate(text) else {
                return odataError(.badRequest, "BadRequest", "Invalid ExpirationDate: \(text)")
            }
            if text.hasPrefix("9999-12-31") {
                expiration = ShareFileJSON.neverExpires
            } else if case .string(let s) = ShareFileJSON.date(t) { expiration = s }
        }
        func flag(_ key: String) -> Bool { if case .bool(let b)? = body[anyCase: key] { return b }; return false }
        let now = env.clock().timeIntervalSince1970
        let id = "s" + Hex.encode(env.random.bytes(16)).prefix(31)
        let json: JSONValue? = try store.update { state in
            guard ids.allSatisfy({ state.items[$0] != nil }) else { return nil }
            let title = body[anyCase: "Title"]?.stringValue ?? (state.items[ids[0]]?.name ?? "")
            let share = ShareFileShare(id: id, title: title, itemIds: ids, expiration: expiration,
                                       requireLogin: flag("RequireLogin"), requireUserInfo: flag("RequireUserInfo"), createdAt: now)
            state.shares[id] = share
            state.shareOrder.append(id)
            return ShareFileJSON.share(share, in: state, api: api, metadata: true)
        }
        guard let json else { return notFound() }
        return .json(json)
    }
}

/// Short-lived grants kept in memory only: authorization codes and download links.
final class ShareFileMemory: @unchecked Sendable {
    struct Download { var fileId: String; var expiresAt: Double }
    private let lock = NSLock()
    private var codes: [String: Double] = [:]
    private var downloads: [String: Download] = [:]

    func addCode(_ code: String, expiresAt: Double) {
        lock.lock(); codes[code] = expiresAt; lock.unlock()
    }

    func takeCode(_ code: String) -> Double? {
        lock.lock(); defer { lock.unlock() }
        return codes.removeValue(forKey: code)
    }

    func addDownload(_ token: String, fileId: String, expiresAt: Double) {
        lock.lock(); downloads[token] = Download(fileId: fileId, expiresAt: expiresAt); lock.unlock()
    }

    func download(_ token: String) -> Download? {
        lock.lock(); defer { lock.unlock() }
        return downloads[token]
    }
}
