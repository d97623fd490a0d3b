import EvidenceCore
import Foundation
import Hummingbird

/// Box (API 2.0, upload API and OAuth 2.0) as the sandbox serves it, under `/box/`.
///
/// Client configuration: `base_url = {S}/box/api/2.0`, `upload_url = {S}/box/upload/api/2.0`,
/// `auth_url = {S}/box/api/oauth2/token` (`https://api.box.com/2.0/X` ↔ `{S}/box/api/2.0/X`,
/// `https://upload.box.com/api/2.0/X` ↔ `{S}/box/upload/api/2.0/X`).
///
/// Fixed sandbox credentials: client id `sandbox-box-client`, secret `sandbox-box-secret`;
/// Client Credentials Grant subject `box_subject_type=enterprise` + `box_subject_id=sandbox-enterprise`
/// (a service account) or `user` + `sandbox-user`; one initial refresh token
/// `sandbox-box-refresh`, valid once (seeded into a fresh state folder). All subjects see the
/// same single file tree (the sandbox has one account).
///
/// Endpoints:
/// - `POST /box/api/oauth2/token` (form): `client_credentials`, `refresh_token`, `authorization_code`
///   (PKCE S256). Refresh tokens are single use: each refresh answers a new one and the used one is
///   dead (`400 invalid_grant "Invalid refresh token"`). Bad client → `400 invalid_client`; unknown
///   grant → `400 unsupported_grant_type`; missing parameters → `400 invalid_request`.
/// - `GET /box/api/oauth2/authorize?response_type=code&client_id&code_challenge&code_challenge_method=S256`
///   → HTML with `<code id="auth-code">`; codes are single use and live 30 s, like Box's.
/// - `GET /box/api/2.0/users/me`
/// - `GET /box/api/2.0/folders/{id}` (root is `0`, "All Files") with `item_collection`;
///   `GET /box/api/2.0/folders/{id}/items?fields&limit&offset` (default limit 100, max 1000), or with
///   `usemarker=true` marker paging (`next_marker`, null on the last page; then `marker=`);
///   `POST /box/api/2.0/folders` `{"name","parent":{"id"}}` → 201.
/// - `GET /box/api/2.0/files/{id}?fields`, `DELETE /box/api/2.0/files/{id}` → 204,
///   `PUT /box/api/2.0/files/{id}?fields=shared_link` `{"shared_link":{…}|null}`,
///   `GET /box/api/2.0/files/{id}/content` → 302 to `{S}/box/dl/<opaque>` (no auth, 15 min).
/// - `OPTIONS /box/api/2.0/files/content` `{"name","parent":{"id"},"size"?}`: the upload
///   preflight. 200 `{"upload_url","upload_token":null}` when an upload would be taken; 409
///   `item_name_in_use` with the holder as one conflicts OBJECT (like an upload conflict); 404
///   `not_found` for a missing parent; 400 for a bad name or a `size` that is not a number.
/// - `POST /box/upload/api/2.0/files/content` (multipart, `attributes` then the file part: `file`, or any part with a `filename`, as rclone's `contents`);
///   `POST /box/upload/api/2.0/files/{id}/content` the same for a new version of a file (same id; new
///   `file_version`, `etag` + 1; `attributes.name` optional, renames); likewise by upload session,
///   `POST /box/upload/api/2.0/files/{id}/upload_sessions` (`file_size`; `file_name` optional).
/// - Upload sessions: `POST /box/upload/api/2.0/files/upload_sessions`,
///   `PUT|GET|DELETE …/upload_sessions/{id}`, `GET …/{id}/parts`, `POST …/{id}/commit`.
///
/// Quirks emulated:
/// - 401 has an empty body and `WWW-Authenticate: Bearer realm="Service", error="invalid_token", …`
///   (missing, unknown, expired, or issued before `POST /_sandbox/expire-tokens`).
/// - Errors are `{"type":"error","status","code","context_info"?,"help_url","message","request_id"}`.
/// - Names are case-insensitive and files and folders share one namespace. A folder conflict
///   answers `context_info.conflicts` as an ARRAY of folder minis; an upload conflict (small upload,
///   session create, commit) as one OBJECT (the file mini, with `sha1` and `file_version`).
/// - Name rules: `item_name_invalid` for empty, `.`/`..`, `/`, `\`, leading/trailing space, control
///   characters; over 255 characters → `item_name_too_long` (Box's own code for that case).
/// - `fields=` answers `type`, `id`, `etag` plus the fields asked for; without it, folder item
///   entries are mini objects (files: `type,id,file_version,sequence_id,etag,name,sha1`; no size).
/// - Small upload: `attributes` after `file` → 400 `metadata_after_file_contents` (the code Box
///   documents for that mistake); no file part → 400 `bad_request`; `Content-MD5` carries the
///   SHA-1 hex and a mismatch → 400 `bad_digest` ("The specified Content-MD5 did not match what we
///   received"), nothing stored; a file of 50,000,000 bytes or more → 413 `request_entity_too_large`.
/// - Upload sessions only for `file_size` ≥ 20,000,000 → else 400 `file_size_too_small`
///   ("File size N less than minimum allowed for this API: 20000000"); `part_size` 8,388,608;
///   sessions live 7 days (then 404). Parts: `Content-Range: bytes a-b/total` must sit on a part
///   boundary and span exactly `part_size` (the last part: the rest) and match the body, else
///   416 `requested_range_not_satisfiable`; `Digest: sha=<base64 SHA-1>` missing → 400
///   `bad_request`, wrong → 400 `bad_digest`. `part_id` is the first 4 bytes of the part's SHA-1 in
///   uppercase hex. Parts are immutable ("does not support re-uploading or overwriting of parts"):
///   a part sent again at an offset already uploaded → 416 `requested_range_not_satisfiable` when
///   it is the same bytes, 409 `conflict` when they differ; the client lists the parts instead.
///   Quirk `box-part-answer-lost`: the next part is stored and answered 502 (the answer lost).
/// - List parts: `limit` (default and max 1000) and `offset` (over 10,000 → 400), `total_count`;
///   quirk `box-small-part-pages` caps a page at 2 parts.
/// - Commit: the FIRST commit of every session answers 202 with `Retry-After: 1` and an empty body
///   (parts "still processing"); later ones assemble → 201. Quirk `box-parts-mismatch`: the first
///   commit answers 400 `parts_mismatch` instead, as Box does right after the last part. A `parts` list that is not exactly the
///   uploaded parts → 400 `bad_request`; whole-file digest mismatch → 400 `digest_mismatch`
///   ("File digest was incorrect. Actual: … Expected: …"), the session stays for another try.
/// - Shared links: the sandbox user is a personal account: `access:"company"` → 400
///   `bad_request` (no company on a personal account); `unshared_at` (link expiry, a paid feature)
///   → 403 `access_denied_insufficient_permissions`; a password is accepted, except with the quirk
///   `free-plan` (then 403 `access_denied_insufficient_permissions` too). Re-PUT keeps the URL;
///   `{"shared_link":null}` removes it.
/// - Corruption (`/_sandbox/corrupt-next-upload?provider=box`) hits the next body carrying file
///   bytes: a small upload (then a `Content-MD5` check fails, or the stored `sha1` differs) or a
///   session part (its `Digest` check fails and the client re-sends the part).
/// - Not emulated: the free account's 250 MB per-file limit and storage quota, trash, versions.
public final class BoxEmulator: Sendable {
    let env: ProviderEnvironment
    let store: BoxShareFilePersisted<BoxState>
    let memory = BoxMemory()
    let filesDirectory: String
    let sessionsDirectory: String
    let tmpDirectory: String

    public static let clientId = "sandbox-box-client"
    public static let clientSecret = "sandbox-box-secret"
    static let initialRefreshToken = "sandbox-box-refresh"
    static let refreshLifetime: Double = 60 * 24 * 3600
    static let codeLifetime: Double = 30
    static let downloadLifetime: Double = 15 * 60
    static let partSize: Int64 = 8_388_608
    static let minSessionSize: Int64 = 20_000_000
    static let maxDirectUpload: Int64 = 50_000_000
    static let sessionLifetime: Double = 7 * 24 * 3600
    static let defaultLimit = 100
    static let maxLimit = 1000

    public init(environment: ProviderEnvironment) throws {
        self.env = environment
        let dir = environment.stateDirectory
        filesDirectory = (dir as NSString).appendingPathComponent("files")
        sessionsDirectory = (dir as NSString).appendingPathComponent("sessions")
        tmpDirectory = (dir as NSString).appendingPathComponent("tmp")
        for sub in [filesDirectory, sessionsDirectory, tmpDirectory] {
            try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
        }
        let now = environment.clock().timeIntervalSince1970
        store = try BoxShareFilePersisted(path: (dir as NSString).appendingPathComponent("state.json")) {
            var state = BoxState()
            state.items["0"] = BoxItem(id: "0", isFolder: true, name: "All Files", parentId: nil, sequenceId: 0, etag: 0,
                                       createdAt: now, modifiedAt: now, contentCreatedAt: now, contentModifiedAt: now,
                                       size: 0, sha1: nil, versionId: nil, sharedLink: nil)
            state.refreshTokens[Self.initialRefreshToken] = now + Self.refreshLifetime
            return state
        }
    }

    public func addRoutes(to router: Router<SandboxRequestContext>) {
        router.post("box/api/oauth2/token") { request, _ in try await self.token(request) }
        router.get("box/api/oauth2/authorize") { request, _ in self.authorizePage(request) }
        router.get("box/api/2.0/users/me") { request, _ in self.authed(request) { self.me($0) } }
        router.get("box/api/2.0/folders/:id") { request, context in
            let id = try context.parameters.require("id")
            return self.authed(request) { _ in self.getFolder(id, request) }
        }
        router.get("box/api/2.0/folders/:id/items") { request, context in
            let id = try context.parameters.require("id")
            return self.authed(request) { _ in self.listItems(id, request) }
        }
        router.post("box/api/2.0/folders") { request, _ in
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.createFolder(request)
        }
        router.get("box/api/2.0/files/:id") { request, context in
            let id = try context.parameters.require("id")
            return self.authed(request) { _ in self.getFile(id, request) }
        }
        router.put("box/api/2.0/files/:id") { request, context in
            let id = try context.parameters.require("id")
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.updateFile(id, request)
        }
        router.delete("box/api/2.0/files/:id") { request, context in
            let id = try context.parameters.require("id")
            return try self.authedThrowing(request) { _ in try self.deleteFile(id) }
        }
        router.get("box/api/2.0/files/:id/content") { request, context in
            let id = try context.parameters.require("id")
            return self.authed(request) { _ in self.contentRedirect(id, request) }
        }
        router.get("box/dl/:token") { _, context in self.download(try context.parameters.require("token")) }
        router.on("box/api/2.0/files/content", method: .options) { request, _ in
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.preflight(request)
        }
        addUploadRoutes(to: router)
    }

    // MARK: Auth

    /// The access token of the request when it is known, unexpired and of the current generation.
    func validToken(_ request: Request) -> BoxAccessToken? {
        guard let bearer = BoxShareFileSupport.bearer(request) else { return nil }
        let now = env.clock().timeIntervalSince1970
        let generation = env.control.tokenGeneration
        return store.read { state in
            guard let t = state.accessTokens[bearer], t.expiresAt > now, t.generation >= generation else { return nil }
            return t
        }
    }

    func unauthorized() -> Response {
        Response(status: .unauthorized, headers: [
            .wwwAuthenticate: #"Bearer realm="Service", error="invalid_token", error_description="The access token provided is invalid.""#,
            .contentLength: "0",
        ])
    }

    func authed(_ request: Request, _ body: (BoxAccessToken) -> Response) -> Response {
        guard let token = validToken(request) else { return unauthorized() }
        return body(token)
    }

    func authedThrowing(_ request: Request, _ body: (BoxAccessToken) throws -> Response) throws -> Response {
        guard let token = validToken(request) else { return unauthorized() }
        return try body(token)
    }

    /// A Box API error body.
    func error(_ status: HTTPResponse.Status, _ code: String, _ message: String, context: JSONValue? = nil,
               headers: HTTPFields = [:]) -> Response {
        var m: [(String, JSONValue)] = [("type", .string("error")), ("status", .int(Int64(status.code))), ("code", .string(code))]
        if let context { m.append(("context_info", context)) }
        m += [("help_url", .string(BoxJSON.helpURL)), ("message", .string(message)),
              ("request_id", .string(BoxShareFileSupport.hex(env.random, bytes: 8)))]
        return .json(.object(m), status: status, headers: headers)
    }

    func notFound() -> Response { error(.notFound, "not_found", "Not Found") }

    func oauthError(_ code: String, _ description: String, status: HTTPResponse.Status = .badRequest) -> Response {
        .json(.object([("error", .string(code)), ("error_description", .string(description))]), status: status)
    }

    func token(_ request: Request) async throws -> Response {
        guard let body = try await BoxShareFileSupport.collect(request) else {
            return oauthError("invalid_request", "Request body too large")
        }
        guard let form = SandboxForm.fields(String(decoding: body, as: UTF8.self)) else {
            return oauthError("invalid_request", "The request body is not a valid form")
        }
        let now = env.clock().timeIntervalSince1970
        guard let grant = form["grant_type"], !grant.isEmpty else {
            return oauthError("invalid_request", "The grant type was not specified in the request")
        }
        guard ["client_credentials", "refresh_token", "authorization_code"].contains(grant) else {
            return oauthError("unsupported_grant_type", "Invalid grant_type parameter or parameter missing")
        }
        guard form["client_id"] == Self.clientId, form["client_secret"] == Self.clientSecret else {
            return oauthError("invalid_client", "The client credentials are invalid")
        }
        switch grant {
        case "client_credentials":
            let subject: String
            switch (form["box_subject_type"], form["box_subject_id"]) {
            case ("enterprise"?, "sandbox-enterprise"?): subject = "enterprise"
            case ("user"?, "sandbox-user"?): subject = "user"
            case (nil, _), (_, nil): return oauthError("invalid_request", "Missing box_subject_type or box_subject_id")
            default: return oauthError("invalid_grant", "Grant credentials are invalid")
            }
            let access = try issueAccess(subject: subject, refresh: false, now: now)
            return .json(.object([
                ("access_token", .string(access.0)),
                ("expires_in", .int(Int64(env.tokenLifetime))),
                ("restricted_to", .array([])),
                ("token_type", .string("bearer")),
                ("issued_token_type", .string("urn:ietf:params:oauth:token-type:access_token")),
            ]))
        case "refresh_token":
            guard let presented = form["refresh_token"], !presented.isEmpty else {
                return oauthError("invalid_request", "The refresh token was not specified in the request")
            }
            let result: (String, String)? = try store.update { state in
                guard let expiry = state.refreshTokens[presented], expiry > now else { return nil }
                state.refreshTokens[presented] = nil
                return self.issue(subject: "user", withRefresh: true, now: now, into: &state)
            }
            guard let (access, refresh) = result else { return oauthError("invalid_grant", "Invalid refresh token") }
            return tokenAnswer(access: access, refresh: refresh)
        default:
            guard let code = form["code"], !code.isEmpty else {
                return oauthError("invalid_request", "The authorization code was not specified in the request")
            }
            guard let grant = memory.takeCode(code), grant.expiresAt > now else {
                return oauthError("invalid_grant", "The authorization code has expired")
            }
            if let challenge = grant.challenge {
                guard let verifier = form["code_verifier"], BoxShareFileSupport.pkceS256(verifier) == challenge else {
                    return oauthError("invalid_grant", "The code verifier does not match the code challenge")
                }
            }
            let (access, refresh) = try store.update { state in self.issue(subject: "user", withRefresh: true, now: now, into: &state) }
            return tokenAnswer(access: access, refresh: refresh)
        }
    }

    private func tokenAnswer(access: String, refresh: String) -> Response {
        .json(.object([
            ("access_token", .string(access)),
            ("expires_in", .int(Int64(env.tokenLifetime))),
            ("restricted_to", .array([])),
            ("refresh_token", .string(refresh)),
            ("token_type", .string("bearer")),
        ]))
    }

    private func issueAccess(subject: String, refresh: Bool, now: Double) throws -> (String, String) {
        try store.update { state in self.issue(subject: subject, withRefresh: refresh, now: now, into: &state) }
    }

    /// New access token (and refresh token) in `state`; drops expired tokens on the way.
    private func issue(subject: String, withRefresh: Bool, now: Double, into state: inout BoxState) -> (String, String) {
        state.accessTokens = state.accessTokens.filter { $0.value.expiresAt > now }
        state.refreshTokens = state.refreshTokens.filter { $0.value > now }
        let access = env.random.slug(length: 32)
        state.accessTokens[access] = BoxAccessToken(expiresAt: now + env.tokenLifetime,
                                                    generation: env.control.tokenGeneration, subject: subject)
        var refresh = ""
        if withRefresh {
            refresh = env.random.slug(length: 64)
            state.refreshTokens[refresh] = now + Self.refreshLifetime
        }
        return (access, refresh)
    }

    func authorizePage(_ request: Request) -> Response {
        let q = request.uri.queryParameters
        guard q.get("response_type") == "code" else {
            return .bytes(Array("<html><body><p>Invalid response_type</p></body></html>".utf8),
                          contentType: "text/html; charset=utf-8", status: .badRequest)
        }
        guard q.get("client_id") == Self.clientId else {
            return .bytes(Array("<html><body><p>Invalid client_id</p></body></html>".utf8),
                          contentType: "text/html; charset=utf-8", status: .badRequest)
        }
        let challenge = q.get("code_challenge")
        if challenge != nil, let method = q.get("code_challenge_method"), method != "S256" {
            return .bytes(Array("<html><body><p>Unsupported code_challenge_method</p></body></html>".utf8),
                          contentType: "text/html; charset=utf-8", status: .badRequest)
        }
        let code = env.random.slug(length: 32)
        memory.addCode(code, challenge: challenge, expiresAt: env.clock().timeIntervalSince1970 + Self.codeLifetime)
        var redirect: String?
        if let uri = q.get("redirect_uri") {
            redirect = uri + (uri.contains("?") ? "&" : "?") + "code=\(code)"
            if let state = q.get("state") { redirect! += "&state=" + (state.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? state) }
        }
        return BoxShareFileSupport.authorizePage(provider: "Box", code: code, redirect: redirect)
    }

    // MARK: Users, folders, files

    func me(_ token: BoxAccessToken) -> Response {
        var m: [(String, JSONValue)]
        guard case .object(let base) = BoxJSON.user(token.subject) else { return notFound() }
        m = base
        let used = store.read { state in state.items.values.reduce(Int64(0)) { $0 + ($1.isFolder ? 0 : $1.size) } }
        m += [
            ("created_at", BoxJSON.date(1_700_000_000)), ("modified_at", BoxJSON.date(1_700_000_000)),
            ("language", .string("en")), ("timezone", .string("America/Los_Angeles")),
            ("space_amount", .int(10_737_418_240)), ("space_used", .int(used)), ("max_upload_size", .int(262_144_000)),
            ("status", .string("active")), ("job_title", .string("")), ("phone", .string("")), ("address", .string("")),
            ("avatar_url", .string("https://app.box.com/api/avatar/large/\(token.subject == "enterprise" ? "20000002" : "20000001")")),
        ]
        return .json(.object(m))
    }

    func getFolder(_ id: String, _ request: Request) -> Response {
        let q = request.uri.queryParameters
        let fields = BoxJSON.parseFields(q.get("fields"))
        return store.read { state in
            guard let folder = state.items[id], folder.isFolder else { return notFound() }
            let children = BoxJSON.children(of: id, in: state)
            let collection: JSONValue = .object([
                ("total_count", .int(Int64(children.count))),
                ("entries", .array(children.prefix(Self.defaultLimit).map { BoxJSON.mini($0) })),
                ("offset", .int(0)), ("limit", .int(Int64(Self.defaultLimit))),
                ("order", .array([.object([("by", .string("type")), ("direction", .string("ASC"))]),
                                  .object([("by", .string("name")), ("direction", .string("ASC"))])])),
            ])
            return .json(BoxJSON.select(BoxJSON.full(folder, in: state, collection: collection), fields: fields))
        }
    }

    func listItems(_ id: String, _ request: Request) -> Response {
        let q = request.uri.queryParameters
        let fields = BoxJSON.parseFields(q.get("fields"))
        var limit = Self.defaultLimit
        if let text = q.get("limit") {
            guard let n = Int(text), n >= 0 else { return error(.badRequest, "bad_request", "Invalid value '\(text)' for query parameter 'limit'.") }
            limit = min(n, Self.maxLimit)
        }
        var offset = 0
        if let text = q.get("offset") {
            guard let n = Int(text), n >= 0 else { return error(.badRequest, "bad_request", "Invalid value '\(text)' for query parameter 'offset'.") }
            offset = n
        }
        // Marker paging (`usemarker=true`, then `marker=`): no totals, `next_marker` null on the last page.
        let markers = q.get("usemarker")?.lowercased() == "true"
        if let marker = q.get("marker"), markers {
            guard let n = Self.markerOffset(marker) else {
                return error(.badRequest, "bad_request", "Invalid value '\(marker)' for query parameter 'marker'.")
            }
            offset = n
        }
        return store.read { state in
            guard let folder = state.items[id], folder.isFolder else { return notFound() }
            let children = BoxJSON.children(of: id, in: state)
            let page = children.dropFirst(offset).prefix(limit)
            if markers {
                let end = offset + page.count
                return .json(.object([
                    ("entries", .array(page.map { BoxJSON.entry($0, in: state, fields: fields) })),
                    ("limit", .int(Int64(limit))),
                    ("next_marker", end < children.count ? .string(Self.marker(end)) : .null),
                    ("order", .array([.object([("by", .string("type")), ("direction", .string("ASC"))]),
                                      .object([("by", .string("name")), ("direction", .string("ASC"))])])),
                ]))
            }
            return .json(.object([
                ("total_count", .int(Int64(children.count))),
                ("entries", .array(page.map { BoxJSON.entry($0, in: state, fields: fields) })),
                ("offset", .int(Int64(offset))),
                ("limit", .int(Int64(limit))),
                ("order", .array([.object([("by", .string("type")), ("direction", .string("ASC"))]),
                                  .object([("by", .string("name")), ("direction", .string("ASC"))])])),
            ]))
        }
    }

    /// An opaque page marker for the entry at `offset` (Box's look alike: base64 text).
    static func marker(_ offset: Int) -> String {
        Data("box-marker:\(offset)".utf8).base64EncodedString()
    }

    static func markerOffset(_ marker: String) -> Int? {
        guard let data = Data(base64Encoded: marker), let text = String(data: data, encoding: .utf8),
              text.hasPrefix("box-marker:"), let n = Int(text.dropFirst("box-marker:".count)), n >= 0 else { return nil }
        return n
    }

    func createFolder(_ request: Request) async throws -> Response {
        guard let data = try await BoxShareFileSupport.collect(request), let body = try? JSONValue.parse(data),
              case .object = body else {
            return error(.badRequest, "bad_request", "Invalid JSON body")
        }
        guard let name = body["name"]?.stringValue else {
            return error(.badRequest, "bad_request", "'name' is required", context: .object([("errors", .array([
                .object([("reason", .string("missing_parameter")), ("name", .string("name")),
                         ("message", .string("'name' is required"))])]))]))
        }
        guard let parentId = body["parent"]?["id"]?.stringValue else {
            return error(.badRequest, "bad_request", "'parent' is required", context: .object([("errors", .array([
                .object([("reason", .string("missing_parameter")), ("name", .string("parent")),
                         ("message", .string("'parent' is required"))])]))]))
        }
        if let problem = BoxJSON.nameProblem(name) { return error(.badRequest, problem.code, problem.message) }
        let now = env.clock().timeIntervalSince1970
        enum Outcome { case missing, conflict(JSONValue), created(JSONValue) }
        let outcome: Outcome = try store.update { state in
            guard let parent = state.items[parentId], parent.isFolder else { return .missing }
            if let other = BoxJSON.sibling(named: name, in: parentId, state: state) {
                return .conflict(BoxJSON.mini(other))
            }
            let id = self.newId(in: state)
            let folder = BoxItem(id: id, isFolder: true, name: name, parentId: parentId, sequenceId: 0, etag: 0,
                                 createdAt: now, modifiedAt: now, contentCreatedAt: now, contentModifiedAt: now,
                                 size: 0, sha1: nil, versionId: nil, sharedLink: nil)
            state.items[id] = folder
            let collection: JSONValue = .object([
                ("total_count", .int(0)), ("entries", .array([])), ("offset", .int(0)), ("limit", .int(100)),
                ("order", .array([.object([("by", .string("type")), ("direction", .string("ASC"))]),
                                  .object([("by", .string("name")), ("direction", .string("ASC"))])])),
            ])
            return .created(.object(BoxJSON.full(folder, in: state, collection: collection)))
        }
        switch outcome {
        case .missing: return notFound()
        case .conflict(let mini):
            return error(.conflict, "item_name_in_use", "Item with the same name already exists",
                         context: .object([("conflicts", .array([mini]))]))
        case .created(let json): return .json(json, status: .created)
        }
    }

    /// A fresh numeric id (Box ids are decimal strings, 12 digits for new items).
    func newId(in state: BoxState) -> String {
        while true {
            let id = String(100_000_000_000 + env.random.next() % 900_000_000_000)
            if state.items[id] == nil { return id }
        }
    }

    func getFile(_ id: String, _ request: Request) -> Response {
        let fields = BoxJSON.parseFields(request.uri.queryParameters.get("fields"))
        return store.read { state in
            guard let file = state.items[id], !file.isFolder else { return notFound() }
            return .json(BoxJSON.select(BoxJSON.full(file, in: state), fields: fields))
        }
    }

    func deleteFile(_ id: String) throws -> Response {
        let removed: Bool = try store.update { state in
            guard let file = state.items[id], !file.isFolder else { return false }
            state.items[id] = nil
            return true
        }
        guard removed else { return notFound() }
        try? FileManager.default.removeItem(atPath: blobPath(id))
        return Response(status: .noContent)
    }

    func blobPath(_ id: String) -> String { (filesDirectory as NSString).appendingPathComponent(id) }

    func updateFile(_ id: String, _ request: Request) async throws -> Response {
        let fields = BoxJSON.parseFields(request.uri.queryParameters.get("fields"))
        guard let data = try await BoxShareFileSupport.collect(request) else {
            return error(.badRequest, "bad_request", "Request body too large")
        }
        let body: JSONValue
        if data.isEmpty { body = .object([]) } else {
            guard let parsed = try? JSONValue.parse(data), case .object = parsed else {
                return error(.badRequest, "bad_request", "Invalid JSON body")
            }
            body = parsed
        }
        var linkChange: BoxSharedLink?? = .none  // nil: untouched; .some(nil): remove
        if let link = body["shared_link"] {
            switch link {
            case .null: linkChange = .some(nil)
            case .object:
                let access: String
                switch link["access"] {
                case nil, .null?: access = "open"
                case .string(let s)?: access = s
                default: return error(.badRequest, "bad_request", "Invalid value for 'shared_link.access'.")
                }
                guard ["open", "company", "collaborators"].contains(access) else {
                    return error(.badRequest, "bad_request", "Invalid value '\(access)' for 'shared_link.access'.")
                }
                if access == "company" {
                    return error(.badRequest, "bad_request",
                                 "Shared link access 'company' not allowed: this account is a personal account without a company.")
                }
                if let unshared = link["unshared_at"], unshared != .null {
                    return error(.forbidden, "access_denied_insufficient_permissions",
                                 "Setting an expiration date on a shared link (unshared_at) requires a paid account.")
                }
                var password: String?
                if case .string(let p)? = link["password"] { password = p }
                if password != nil, env.control.isArmed(.freePlan) {
                    return error(.forbidden, "access_denied_insufficient_permissions",
                                 "Password-protected shared links require a paid account.")
                }
                var canDownload = true
                if case .bool(let b)? = link["permissions"]?["can_download"] { canDownload = b }
                linkChange = .some(BoxSharedLink(token: "", access: access, password: password, canDownload: canDownload))
            default:
                return error(.badRequest, "bad_request", "Invalid value for 'shared_link'.")
            }
        }
        let token = env.random.slug(length: 32)
        let now = env.clock().timeIntervalSince1970
        let json: JSONValue? = try store.update { state in
            guard var file = state.items[id], !file.isFolder else { return nil }
            switch linkChange {
            case .none: break
            case .some(.none): file.sharedLink = nil
            case .some(.some(var link)):
                link.token = file.sharedLink?.token ?? token
                if link.password == nil, file.sharedLink != nil, body["shared_link"]?["password"] == nil {
                    link.password = file.sharedLink?.password
                }
                file.sharedLink = link
            }
            file.modifiedAt = now
            file.etag += 1
            file.sequenceId += 1
            state.items[id] = file
            return BoxJSON.select(BoxJSON.full(file, in: state), fields: fields)
        }
        guard let json else { return notFound() }
        return .json(json)
    }

    func contentRedirect(_ id: String, _ request: Request) -> Response {
        guard store.read({ state in state.items[id].map { !$0.isFolder } ?? false }) else { return notFound() }
        if env.control.take(.boxDownloadNotReady) {
            return Response(status: .accepted, headers: [.retryAfter: "1", .contentLength: "0"])
        }
        let token = env.random.slug(length: 40)
        memory.addDownload(token, fileId: id, expiresAt: env.clock().timeIntervalSince1970 + Self.downloadLifetime)
        return Response(status: .found, headers: [.location: PublicHosts.url(request, sandboxPath: "/box/dl/" + token),
                                                  .contentLength: "0"])
    }

    func download(_ token: String) -> Response {
        guard let grant = memory.download(token), grant.expiresAt > env.clock().timeIntervalSince1970,
              let file = store.read({ $0.items[grant.fileId] }) else {
            return .bytes(Array("Not Found".utf8), contentType: "text/plain", status: .notFound)
        }
        return BoxShareFileSupport.fileResponse(path: blobPath(file.id), size: file.size, filename: file.name)
    }
}

/// What the Box emulation keeps only in memory: authorization codes (30 s) and download
/// links (15 min) — both short-lived, as on the real service.
final class BoxMemory: @unchecked Sendable {
    struct Code { var challenge: String?; var expiresAt: Double }
    struct Download { var fileId: String; var expiresAt: Double }
    private let lock = NSLock()
    private var codes: [String: Code] = [:]
    private var downloads: [String: Download] = [:]
    /// Sessions whose first commit has been answered 202 (also persisted in the session).

    func addCode(_ code: String, challenge: String?, expiresAt: Double) {
        lock.lock(); codes[code] = Code(challenge: challenge, expiresAt: expiresAt); lock.unlock()
    }

    /// The code's grant, removed: a code works once.
    func takeCode(_ code: String) -> Code? {
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
