import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import Hummingbird

/// Dropbox API v2 as the sandbox serves it, under `/dropbox/`, with the real service's
/// wire shapes and quirks. Real `https://api.dropboxapi.com/2/X` is `{S}/dropbox/api/2/X`,
/// real `https://content.dropboxapi.com/2/X` is `{S}/dropbox/content/2/X`.
///
/// Fixed sandbox credentials: app key `sandbox-dropbox-key`, app secret
/// `sandbox-dropbox-secret`, long-lived refresh token `sandbox-dropbox-refresh` (reusable, as
/// Dropbox refresh tokens are). The account is a Basic (free) personal account, no team.
///
/// Endpoints:
/// - `POST /dropbox/api/oauth2/token`: form `grant_type=refresh_token&refresh_token=…` or
///   `grant_type=authorization_code&code=…&code_verifier=…`; client credentials as form fields
///   `client_id`/`client_secret` or HTTP Basic. 400 `{"error":"invalid_grant"|"invalid_client"|
///   "unsupported_grant_type"|"invalid_request","error_description":…}`.
/// - `GET /dropbox/oauth2/authorize?client_id&response_type=code&code_challenge&code_challenge_method=S256
///   &token_access_type=offline[&redirect_uri&state]`: auto-approves; without `redirect_uri` an
///   HTML page with `<code id="auth-code">CODE</code>` (the paste-back flow), else a 302 to it.
///   Codes are single-use and live 10 minutes.
/// - RPC (`Authorization: Bearer`, `Content-Type: application/json`) under `/dropbox/api/2/`:
///   `users/get_current_account`, `files/get_metadata`, `files/create_folder_v2`,
///   `files/delete_v2`, `sharing/create_shared_link_with_settings`, `sharing/list_shared_links`,
///   `files/list_folder` and `/continue` (`DropboxEmulator+Listing.swift`),
///   `files/upload_session/finish_batch_v2` (`DropboxEmulator+Batch.swift`).
/// - Content (`Dropbox-API-Arg` header, `application/octet-stream` body) under `/dropbox/content/2/`:
///   `files/upload`, `files/upload_session/start`, `files/upload_session/append_v2`,
///   `files/upload_session/finish`, `files/download` (bytes + `Dropbox-API-Result`).
///
/// Quirks emulated:
/// - Access tokens (`sl.…`) live `tokenLifetime` seconds; expired or issued before
///   `/_sandbox/expire-tokens` → 401 `expired_access_token`, unknown → 401 `invalid_access_token`;
///   a missing or non-Bearer `Authorization` → 400 plain text.
/// - Wrong `Content-Type` → 400 plain text `Bad HTTP "Content-Type" header`; malformed
///   arguments → 400 plain text `Error in call to API function "files/…": …` (v2 routes named `…:2`).
/// - `Dropbox-API-Arg` must be ASCII (`\uXXXX` escapes); a raw non-ASCII byte → 400
///   `could not decode input as JSON`. `Dropbox-API-Result` is written the same way.
/// - Route errors are 409 `{"error_summary":"a/b/..","error":{…}}` nested exactly like the
///   real unions (`path/not_found`, `path/conflict/folder`, `path_lookup/not_found`,
///   `lookup_failed/incorrect_offset`, `settings_error/not_authorized`, …).
/// - Paths are case-insensitive (`path_lower`); a new item keeps the display casing of its
///   existing parents; uploads and `create_folder_v2` create missing parents; a file in the
///   way of a parent → `path/conflict/file`; `desktop.ini`, `thumbs.db`, `.ds_store`,
///   `.dropbox` … → `path/disallowed_name`; empty, `.` or `..` components → `path/malformed_path`.
/// - `WriteMode` `add`/`overwrite`/`update`, `autorename` ("name (1).ext"), and the documented
///   `strict_conflict` rule: without it, writing content identical to the existing file is
///   no conflict and stores nothing (the existing metadata is returned, no new rev).
/// - `files/upload` conflicts carry `upload_session_id` (a closed session holding the bytes,
///   finishable to another path). Bodies over 150 MiB → 409 `payload_too_large`.
/// - `content_hash` (4 MiB-block SHA-256) on every file; a client-sent `content_hash` is the
///   hash of the bytes of THAT call (upload, start, append_v2, finish), else 409
///   `content_hash_mismatch` and nothing is kept.
/// - Upload sessions: pieces of a sequential session (the default) may have any length; a
///   `session_type: concurrent` one starts open and empty (data → 409
///   `concurrent_session_data_not_allowed`, `close=true` → `concurrent_session_close_not_allowed`),
///   and every appended piece but the one sent with `close=true` must be a
///   multiple of 4 MiB, else 409 `concurrent_session_invalid_data_size`; wrong offset → 409 `incorrect_offset` with
///   `correct_offset` (finish: nested under `lookup_failed`); closed → `closed`; unknown or
///   older than 7 days → `not_found`. Sessions survive a restart. A finish that conflicts
///   keeps the session so it can be finished elsewhere.
/// - Two overlapping write operations (upload, finish, create_folder, delete) → the second
///   gets 429 `too_many_write_operations` with `Retry-After: 1`. With the quirk
///   `dropbox-409-too-many-writes` armed, a write answers the other form Dropbox uses, a 409
///   route error (`path/too_many_write_operations/..`; `too_many_write_operations/..` for delete).
/// - Every upload call (upload, start, append_v2, finish) carries at most 150 MiB; more → 409
///   `payload_too_large` (`UploadSessionAppendError.payload_too_large`), nothing kept.
/// - Shared links: Basic plan, so `expires`, passwords, `team_only`/team audience and
///   disabling downloads → 409 `settings_error/not_authorized`; one link per item, a second
///   create → 409 `shared_link_already_exists/metadata` with the link.
/// - `/_sandbox/corrupt-next-upload?provider=dropbox`: the next stored body has one byte
///   flipped after it arrived and before its hash is computed (for a session: in the finish
///   body, or anywhere in the assembled file when that body is empty).
public final class DropboxEmulator: Sendable {
    public static let appKey = "sandbox-dropbox-key"
    public static let appSecret = "sandbox-dropbox-secret"
    public static let refreshToken = "sandbox-dropbox-refresh"
    /// 40 characters, as Dropbox's are (the schema's `AccountId` allows no more).
    static let accountID = "dbid:AACsandboxXq3mVd7yFqUe0tZL5R-r9pQWm"
    static let uid = "3235641"
    static let maxBody: Int64 = 150 * 1024 * 1024
    static let codeLifetime: TimeInterval = 600
    static let scope = "account_info.read files.content.read files.content.write files.metadata.read files.metadata.write sharing.read sharing.write"

    let env: ProviderEnvironment
    let store: DropboxStore
    let writes = DropboxWriteGate()

    public init(environment: ProviderEnvironment) throws {
        self.env = environment
        self.store = try DropboxStore(directory: environment.stateDirectory, random: environment.random)
    }

    typealias Handler = @Sendable (Request, SandboxRequestContext) async throws -> Response

    public func addRoutes(to router: Router<SandboxRequestContext>) {
        router.post("dropbox/api/oauth2/token") { request, context in try await self.token(request, context: context) }
        router.get("dropbox/oauth2/authorize") { request, _ in try await self.authorize(request) }

        rpc(router, "users/get_current_account", emptyBodyAllowed: true) { _ in self.currentAccount() }
        rpc(router, "files/get_metadata") { arg in try await self.getMetadata(arg) }
        rpc(router, "files/create_folder_v2", write: true) { arg in try await self.createFolder(arg) }
        rpc(router, "files/delete_v2", write: true) { arg in try await self.delete(arg) }
        rpc(router, "sharing/create_shared_link_with_settings") { arg in try await self.createSharedLink(arg) }
        rpc(router, "sharing/list_shared_links") { arg in try await self.listSharedLinks(arg) }
        rpc(router, "files/list_folder") { arg in try await self.listFolder(arg) }
        rpc(router, "files/list_folder/continue") { arg in try await self.listFolderContinue(arg) }
        rpc(router, "files/upload_session/finish_batch_v2", write: true) { arg in try await self.finishBatch(arg) }

        content(router, "files/upload") { arg, request in try await self.upload(arg, request) }
        content(router, "files/upload_session/start") { arg, request in try await self.sessionStart(arg, request) }
        content(router, "files/upload_session/append_v2") { arg, request in try await self.sessionAppend(arg, request) }
        content(router, "files/upload_session/finish") { arg, request in try await self.sessionFinish(arg, request) }
        content(router, "files/download", download: true) { arg, _ in try await self.download(arg) }
    }

    // MARK: Plumbing

    /// nil when the bearer token is good, else the answer Dropbox gives.
    private func checkAuth(_ request: Request, route: String) async -> Response? {
        guard let header = request.headers[.authorization] else {
            return DropboxWire.badRequest(route, "Must provide HTTP header \"Authorization\" or URL parameter \"authorization\".")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            return DropboxWire.badRequest(route, "Invalid authorization value in HTTP header \"Authorization\": \"\(header)\".  Expecting \"Bearer <oauth2-access-token>\".")
        }
        switch await store.checkAccessToken(String(parts[1]), now: env.clock(), generation: env.control.tokenGeneration) {
        case .valid: return nil
        case .expired: return DropboxWire.unauthorized("expired_access_token")
        case .invalid: return DropboxWire.unauthorized("invalid_access_token")
        }
    }

    /// An RPC endpoint: bearer auth, JSON body, optional write-gate.
    private func rpc(_ router: Router<SandboxRequestContext>, _ path: String, write: Bool = false, emptyBodyAllowed: Bool = false,
                     _ handler: @escaping @Sendable (JSONValue) async throws -> Response) {
        router.post(RouterPath("dropbox/api/2/" + path)) { request, context -> Response in
            var sent: String?
            let answer = try await self.rpcAnswer(request, context, path, write: write, emptyBodyAllowed: emptyBodyAllowed, sent: &sent, handler)
            return try await self.env.control.dropboxExchanges.record(route: path, arg: sent, answer, download: false)
        }
    }

    /// The answer to one RPC call; `sent` is set to the body as it came, once read.
    private func rpcAnswer(_ request: Request, _ context: SandboxRequestContext, _ path: String, write: Bool, emptyBodyAllowed: Bool,
                           sent: inout String?, _ handler: @Sendable (JSONValue) async throws -> Response) async throws -> Response {
        let route = DropboxWire.routeName(path)
        if let denied = await self.checkAuth(request, route: route) { return denied }
        var request = request
        let buffer = try await request.collectBody(upTo: SandboxRequestContext.maxJSONBody)
        let bytes = Data(buffer.readableBytesView)
        sent = String(decoding: bytes, as: UTF8.self)
        let media = request.headers[.contentType] ?? ""
        let mediaOK = request.mediaType == "application/json"
            || media.lowercased().replacingOccurrences(of: " ", with: "") == "text/plain;charset=dropbox-cors-hack"
        let arg: JSONValue
        if bytes.isEmpty && emptyBodyAllowed && (media.isEmpty || mediaOK) {
            arg = .null
        } else {
            guard mediaOK else {
                return DropboxWire.badRequest(route, "Bad HTTP \"Content-Type\" header: \"\(media)\".  Expecting one of \"application/json\", \"application/json; charset=utf-8\", \"text/plain; charset=dropbox-cors-hack\".")
            }
            guard let parsed = try? JSONValue.parse(bytes) else {
                return DropboxWire.badRequest(route, "request body: could not decode input as JSON")
            }
            arg = parsed
        }
        if emptyBodyAllowed {
            guard arg == .null else { return DropboxWire.badRequest(route, "request body: expected null, got value") }
        } else if case .object = arg {} else {
            return DropboxWire.badRequest(route, "request body: expected object, got \(Self.jsonKind(arg))")
        }
        if write {
            if self.env.control.take(.dropboxWriteContention) { return DropboxWire.writeContention(path) }
            guard self.writes.tryEnter() else { return DropboxWire.tooManyWrites() }
            defer { self.writes.leave() }
            return try await self.guarded(route, context) { try await handler(arg) }
        }
        return try await self.guarded(route, context) { try await handler(arg) }
    }

    /// A content-host endpoint: bearer auth, arguments in `Dropbox-API-Arg` (or `?arg=`).
    private func content(_ router: Router<SandboxRequestContext>, _ path: String, download: Bool = false,
                         _ handler: @escaping @Sendable (JSONValue, Request) async throws -> Response) {
        router.post(RouterPath("dropbox/content/2/" + path)) { request, context -> Response in
            let sent = request.headers[.dropboxAPIArg] ?? request.uri.queryParameters.get("arg")
            let answer = try await self.contentAnswer(request, context, path, download: download, handler)
            return try await self.env.control.dropboxExchanges.record(route: path, arg: sent, answer, download: download)
        }
    }

    /// The answer to one content-host call.
    private func contentAnswer(_ request: Request, _ context: SandboxRequestContext, _ path: String, download: Bool,
                               _ handler: @Sendable (JSONValue, Request) async throws -> Response) async throws -> Response {
        let route = DropboxWire.routeName(path)
        if let denied = await self.checkAuth(request, route: route) { return denied }
        let media = (request.headers[.contentType] ?? "").lowercased().replacingOccurrences(of: " ", with: "")
        let corsHack = media == "text/plain;charset=dropbox-cors-hack"
        if download {
            guard media.isEmpty || corsHack || media.hasPrefix("text/plain") || media == "application/octet-stream" else {
                return DropboxWire.badRequest(route, "Bad HTTP \"Content-Type\" header: \"\(request.headers[.contentType] ?? "")\".  Expecting one of \"text/plain\", \"text/plain; charset=dropbox-cors-hack\".")
            }
        } else {
            guard request.mediaType == "application/octet-stream" || corsHack else {
                return DropboxWire.badRequest(route, "Bad HTTP \"Content-Type\" header: \"\(request.headers[.contentType] ?? "")\".  Expecting one of \"application/octet-stream\", \"text/plain; charset=dropbox-cors-hack\".")
            }
        }
        let raw: String
        let source: String
        if let header = request.headers[.dropboxAPIArg] {
            raw = header
            source = "HTTP header \"Dropbox-API-Arg\""
        } else if let q = request.uri.queryParameters.get("arg") {
            raw = q
            source = "URL parameter \"arg\""
        } else {
            return DropboxWire.badRequest(route, "Must provide HTTP header \"Dropbox-API-Arg\" or URL parameter \"arg\".")
        }
        // The header must be ASCII: non-ASCII characters travel as JSON \uXXXX escapes.
        guard !raw.unicodeScalars.contains(where: { $0.value >= 0x7F }),
              let arg = try? JSONValue.parse(Data(raw.utf8)) else {
            return DropboxWire.badRequest(route, "\(source): could not decode input as JSON")
        }
        guard case .object = arg else {
            return DropboxWire.badRequest(route, "\(source): expected object, got \(Self.jsonKind(arg))")
        }
        return try await self.guarded(route, context) { try await handler(arg, request) }
    }

    /// Runs a handler, turning argument errors into Dropbox's 400 text.
    private func guarded(_ route: String, _ context: SandboxRequestContext, _ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let e as ArgError {
            return DropboxWire.badRequest(route, e.message)
        }
    }

    struct ArgError: Error { var message: String }

    static func jsonKind(_ v: JSONValue) -> String {
        switch v {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "list"
        case .object: return "object"
        }
    }

    func string(_ arg: JSONValue, _ key: String, required: Bool = true, prefix: String = "request body") throws -> String? {
        guard let v = arg[key], v != .null else {
            if required { throw ArgError(message: "\(prefix): missing required field '\(key)'") }
            return nil
        }
        guard case .string(let s) = v else { throw ArgError(message: "\(prefix): \(key): expected string, got \(Self.jsonKind(v))") }
        return s
    }

    func bool(_ arg: JSONValue, _ key: String, prefix: String = "request body") throws -> Bool {
        guard let v = arg[key], v != .null else { return false }
        guard case .bool(let b) = v else { throw ArgError(message: "\(prefix): \(key): expected boolean, got \(Self.jsonKind(v))") }
        return b
    }

    func int(_ arg: JSONValue, _ key: String, prefix: String) throws -> Int64 {
        guard let v = arg[key], v != .null else { throw ArgError(message: "\(prefix): missing required field '\(key)'") }
        guard case .int(let i) = v, i >= 0 else { throw ArgError(message: "\(prefix): \(key): expected integer, got \(Self.jsonKind(v))") }
        return i
    }

    /// A union member given as `"tag"` or `{".tag":"tag", …}`.
    private func unionTag(_ v: JSONValue?) -> (String, JSONValue)? {
        switch v {
        case .string(let s)?: return (s, .object([(".tag", .string(s))]))
        case .object(let m)?: if let t = m.first(where: { $0.0 == ".tag" })?.1.stringValue { return (t, v!) }
        default: break
        }
        return nil
    }

    func pathArg(_ arg: JSONValue, key: String = "path", prefix: String = "request body") throws -> DropboxWire.PathArg {
        let s = try string(arg, key, prefix: prefix)!
        guard let p = DropboxWire.parsePath(s) else {
            throw ArgError(message: "\(prefix): \(key): '\(s)' did not match pattern '\(DropboxWire.pathPattern)'")
        }
        return p
    }

    /// The entry a lookup path names (nil when missing).
    func lookup(_ p: DropboxWire.PathArg) async -> DropboxEntry? {
        switch p {
        case .id(let id): return await store.entry(id: id)
        case .path(let parts): return await store.entry(lower: ("/" + parts.joined(separator: "/")).lowercased())
        case .root, .malformed: return nil
        }
    }

    /// Path components for a write target (`id:` resolves to the existing item's path).
    func writeTarget(_ p: DropboxWire.PathArg) async -> [String]? {
        switch p {
        case .path(let parts): return parts
        case .id(let id):
            guard let e = await store.entry(id: id) else { return nil }
            return e.pathDisplay.split(separator: "/").map(String.init)
        case .root, .malformed: return nil
        }
    }

    func metadata(_ e: DropboxEntry, tagged: Bool) -> JSONValue {
        var m: [(String, JSONValue)] = tagged ? [(".tag", .string(e.folder ? "folder" : "file"))] : []
        m += [("name", .string(e.name)), ("path_lower", .string(e.pathLower)), ("path_display", .string(e.pathDisplay)),
              ("id", .string(e.id))]
        if !e.folder {
            m += [("client_modified", .string(DropboxWire.timestamp(e.clientModified))),
                  ("server_modified", .string(DropboxWire.timestamp(e.serverModified))),
                  ("rev", .string(e.rev)), ("size", .int(e.size)), ("is_downloadable", .bool(true)),
                  ("content_hash", .string(e.contentHash))]
        }
        return .object(m)
    }

    // MARK: OAuth

    private func oauthError(_ error: String, _ description: String, status: HTTPResponse.Status = .badRequest) -> Response {
        .json(.object([("error", .string(error)), ("error_description", .string(description))]), status: status)
    }

    func token(_ request: Request, context: SandboxRequestContext) async throws -> Response {
        var request = request
        let buffer = try await request.collectBody(upTo: 64 * 1024)
        guard var fields = SandboxForm.fields(String(decoding: buffer.readableBytesView, as: UTF8.self)),
              let query = SandboxForm.fields(request.uri.query ?? "") else {
            return oauthError("invalid_request", "request body or query is not a valid form")
        }
        for (k, v) in query where fields[k] == nil { fields[k] = v }
        var clientID = fields["client_id"]
        var clientSecret = fields["client_secret"]
        if let auth = request.headers[.authorization], auth.lowercased().hasPrefix("basic ") {
            guard let data = Data(base64Encoded: String(auth.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
                  let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":") else {
                return oauthError("invalid_client", "Invalid client_id or client_secret", status: .unauthorized)
            }
            clientID = String(text[..<colon])
            clientSecret = String(text[text.index(after: colon)...])
        }
        guard let grant = fields["grant_type"], !grant.isEmpty else {
            return oauthError("unsupported_grant_type", "grant_type must be one of authorization_code, refresh_token")
        }
        guard grant == "refresh_token" || grant == "authorization_code" else {
            return oauthError("unsupported_grant_type", "grant_type \"\(grant)\" is not supported")
        }
        guard let id = clientID, !id.isEmpty else {
            return oauthError("invalid_request", "No client_id provided")
        }
        guard id == Self.appKey else { return oauthError("invalid_client", "Invalid client_id or client_secret") }
        if let secret = clientSecret, !secret.isEmpty, secret != Self.appSecret {
            return oauthError("invalid_client", "Invalid client_id or client_secret")
        }
        let secretGiven = clientSecret == Self.appSecret
        let now = env.clock()

        if grant == "refresh_token" {
            guard let refresh = fields["refresh_token"], !refresh.isEmpty else {
                return oauthError("invalid_request", "No refresh_token provided")
            }
            guard let record = await store.refreshToken(refresh) else {
                return oauthError("invalid_grant", "refresh token is invalid or revoked")
            }
            guard record.pkce || secretGiven else { return oauthError("invalid_client", "Invalid client_id or client_secret") }
            let access = try await store.issueAccessToken(now: now, lifetime: env.tokenLifetime, generation: env.control.tokenGeneration)
            return .json(.object([("access_token", .string(access)), ("token_type", .string("bearer")),
                                  ("expires_in", .int(Int64(env.tokenLifetime)))]))
        }

        guard let codeValue = fields["code"], !codeValue.isEmpty else {
            return oauthError("invalid_request", "No auth code provided")
        }
        guard let code = try await store.takeCode(codeValue) else {
            return oauthError("invalid_grant", "code doesn't exist or has expired")
        }
        guard code.expires > now else { return oauthError("invalid_grant", "code has expired") }
        if !code.challenge.isEmpty {
            guard let verifier = fields["code_verifier"], !verifier.isEmpty else {
                return oauthError("invalid_request", "No code_verifier provided")
            }
            let computed = code.method == "plain" ? verifier : Self.s256(verifier)
            guard computed == code.challenge else { return oauthError("invalid_grant", "invalid code verifier") }
        } else if !secretGiven {
            return oauthError("invalid_client", "Invalid client_id or client_secret")
        }
        if let redirect = code.redirectURI, fields["redirect_uri"] != redirect {
            return oauthError("invalid_grant", "redirect_uri mismatch")
        }
        let access = try await store.issueAccessToken(now: now, lifetime: env.tokenLifetime, generation: env.control.tokenGeneration)
        var body: [(String, JSONValue)] = [("access_token", .string(access)), ("token_type", .string("bearer")),
                                           ("expires_in", .int(Int64(env.tokenLifetime)))]
        if code.offline {
            body.append(("refresh_token", .string(try await store.issueRefreshToken(pkce: !code.challenge.isEmpty))))
        }
        body += [("scope", .string(Self.scope)), ("uid", .string(Self.uid)), ("account_id", .string(Self.accountID))]
        return .json(.object(body))
    }

    /// BASE64URL(SHA-256(verifier)) without padding (RFC 7636).
    static func s256(_ verifier: String) -> String {
        let digest = Hex.decode(SHA256Hasher.hash(Data(verifier.utf8)).hex) ?? []
        return Data(digest).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private func htmlPage(_ title: String, _ body: String, status: HTTPResponse.Status = .ok) -> Response {
        let html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>\(title)</title></head><body>\(body)</body></html>\n"
        return .bytes(Array(html.utf8), contentType: "text/html; charset=utf-8", status: status)
    }

    func authorize(_ request: Request) async throws -> Response {
        let q = request.uri.queryParameters
        func get(_ k: String) -> String? { q.get(k).map { $0.replacingOccurrences(of: "+", with: " ") } }
        guard get("client_id") == Self.appKey else {
            return htmlPage("Dropbox - Error", "<h1>Error (400)</h1><p>Invalid client_id: \"\(Self.escape(get("client_id") ?? ""))\".</p>", status: .badRequest)
        }
        guard get("response_type") == "code" else {
            return htmlPage("Dropbox - Error", "<h1>Error (400)</h1><p>Invalid response_type: only \"code\" is supported.</p>", status: .badRequest)
        }
        let challenge = get("code_challenge") ?? ""
        var method = get("code_challenge_method") ?? (challenge.isEmpty ? "" : "plain")
        if !challenge.isEmpty {
            guard (43...128).contains(challenge.count) else {
                return htmlPage("Dropbox - Error", "<h1>Error (400)</h1><p>Invalid code_challenge: must be 43 to 128 characters.</p>", status: .badRequest)
            }
            guard method == "S256" || method == "plain" else {
                return htmlPage("Dropbox - Error", "<h1>Error (400)</h1><p>Invalid code_challenge_method: \"\(Self.escape(method))\".</p>", status: .badRequest)
            }
        } else {
            method = ""
        }
        let accessType = get("token_access_type") ?? "legacy"
        guard ["offline", "online", "legacy"].contains(accessType) else {
            return htmlPage("Dropbox - Error", "<h1>Error (400)</h1><p>Invalid token_access_type.</p>", status: .badRequest)
        }
        let redirect = get("redirect_uri")
        let code = try await store.issueCode(DropboxAuthCode(challenge: challenge, method: method,
                                                             expires: env.clock().addingTimeInterval(Self.codeLifetime),
                                                             redirectURI: redirect, offline: accessType == "offline"))
        if let redirect {
            var location = redirect + (redirect.contains("?") ? "&" : "?") + "code=" + code
            if let state = q.get("state") { location += "&state=" + (state.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") }
            return Response(status: .found, headers: [.location: location])
        }
        return htmlPage("Dropbox - API Request Authorization", """
            <h1>Access granted</h1><p>Enter this code into the app to finish connecting it to Dropbox:</p>\
            <p><code id="auth-code">\(code)</code></p><p>The code can be used once, within 10 minutes.</p>
            """)
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    // MARK: RPC handlers

    func currentAccount() -> Response {
        .json(.object([
            ("account_id", .string(Self.accountID)),
            ("name", .object([("given_name", .string("Sandbox")), ("surname", .string("User")),
                              ("familiar_name", .string("Sandbox")), ("display_name", .string("Sandbox User")),
                              ("abbreviated_name", .string("SU"))])),
            ("email", .string("sandbox@example.org")),
            ("email_verified", .bool(true)),
            ("disabled", .bool(false)),
            ("country", .string("DE")),
            ("locale", .string("en")),
            ("referral_link", .string("https://www.dropbox.com/referrals/AACsandbox?src=app9-0")),
            ("is_paired", .bool(false)),
            ("account_type", DropboxWire.tag("basic")),
            ("root_info", DropboxWire.tag("user", [("root_namespace_id", .string(Self.uid)), ("home_namespace_id", .string(Self.uid))])),
        ]))
    }

    func getMetadata(_ arg: JSONValue) async throws -> Response {
        let p = try pathArg(arg)
        if p == .root { throw ArgError(message: "request body: path: The root folder is unsupported.") }
        if p == .malformed { return DropboxWire.nested("path", "malformed_path") }
        guard let e = await lookup(p) else { return DropboxWire.nested("path", "not_found") }
        return .json(metadata(e, tagged: true))
    }

    func createFolder(_ arg: JSONValue) async throws -> Response {
        let p = try pathArg(arg)
        let autorename = try bool(arg, "autorename")
        if p == .root { throw ArgError(message: "request body: path: The root folder is unsupported.") }
        guard case .path(let parts) = p else { return DropboxWire.nested("path", "malformed_path") }
        switch try await store.createFolder(parts, autorename: autorename, now: env.clock()) {
        case .created(let e): return .json(.object([("metadata", metadata(e, tagged: false))]))
        case .conflict(let what):
            return DropboxWire.routeError("path/conflict/\(what)", DropboxWire.tag("path", [("path", DropboxWire.tag("conflict", [("conflict", DropboxWire.tag(what))]))]))
        case .disallowedName: return DropboxWire.nested("path", "disallowed_name")
        }
    }

    func delete(_ arg: JSONValue) async throws -> Response {
        let p = try pathArg(arg)
        if p == .root { throw ArgError(message: "request body: path: The root folder is unsupported.") }
        if p == .malformed { return DropboxWire.nested("path_lookup", "malformed_path") }
        guard let e = await lookup(p), let deleted = try await store.delete(lower: e.pathLower) else {
            return DropboxWire.nested("path_lookup", "not_found")
        }
        return .json(.object([("metadata", metadata(deleted, tagged: true))]))
    }

    private func linkJSON(_ link: DropboxLink, _ e: DropboxEntry) -> JSONValue {
        let kind = e.folder ? "fo" : "fi"
        let url = "https://www.dropbox.com/scl/\(kind)/\(link.linkID)/\(DropboxWire.urlSegment(e.name))?rlkey=\(link.rlkey)&dl=0"
        let visibility = link.audience == "no_one" ? "no_one" : "public"
        var m: [(String, JSONValue)] = [
            (".tag", .string(e.folder ? "folder" : "file")),
            ("url", .string(url)),
            ("id", .string(e.id)),
            ("name", .string(e.name)),
            ("path_lower", .string(e.pathLower)),
            ("link_permissions", .object([
                ("resolved_visibility", DropboxWire.tag(visibility)),
                ("requested_visibility", DropboxWire.tag("public")),
                ("can_revoke", .bool(true)),
                ("visibility_policies", Self.visibilityPolicies),
                ("can_set_expiry", .bool(false)),
                ("can_remove_expiry", .bool(false)),
                ("allow_download", .bool(true)),
                ("can_allow_download", .bool(true)),
                ("can_disallow_download", .bool(false)),
                ("allow_comments", .bool(true)),
                ("team_restricts_comments", .bool(false)),
                ("can_set_password", .bool(false)),
                ("can_remove_password", .bool(false)),
                ("require_password", .bool(false)),
                ("can_use_extended_sharing_controls", .bool(false)),
                ("effective_audience", DropboxWire.tag(link.audience)),
                ("link_access_level", DropboxWire.tag("viewer")),
            ])),
        ]
        if !e.folder {
            m += [("preview_type", .string(Self.previewType(e.name))),
                  ("client_modified", .string(DropboxWire.timestamp(e.clientModified))),
                  ("server_modified", .string(DropboxWire.timestamp(e.serverModified))),
                  ("rev", .string(e.rev)), ("size", .int(e.size))]
        }
        return .object(m)
    }

    /// What a Basic account may ask of a link (`LinkPermissions.visibility_policies`, which the
    /// schema requires): public, but not team-only (no team) nor a password (a paid plan's).
    static let visibilityPolicies: JSONValue = .array([
        .object([("policy", DropboxWire.tag("public")), ("resolved_policy", DropboxWire.tag("public")), ("allowed", .bool(true))]),
        .object([("policy", DropboxWire.tag("team_only")), ("resolved_policy", DropboxWire.tag("team_only")), ("allowed", .bool(false)),
                 ("disallowed_reason", DropboxWire.tag("user_not_on_team"))]),
        .object([("policy", DropboxWire.tag("password")), ("resolved_policy", DropboxWire.tag("password")), ("allowed", .bool(false)),
                 ("disallowed_reason", DropboxWire.tag("user_account_type"))]),
    ])

    static func previewType(_ name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "mp4", "mov", "m4v", "avi", "mkv", "webm": return "video"
        case "jpg", "jpeg", "png", "gif", "heic", "tif", "tiff": return "photo"
        case "mp3", "m4a", "wav", "aac", "flac": return "audio"
        case "pdf": return "pdf"
        default: return "other"
        }
    }

    func createSharedLink(_ arg: JSONValue) async throws -> Response {
        let p = try pathArg(arg)
        let settings = arg["settings"] ?? .null
        var notAuthorized = false
        var audience = "public"
        if settings != .null {
            guard case .object = settings else {
                throw ArgError(message: "request body: settings: expected object, got \(Self.jsonKind(settings))")
            }
            if let v = settings["requested_visibility"], v != .null {
                guard let (t, _) = unionTag(v) else { throw ArgError(message: "request body: settings: requested_visibility: expected union") }
                switch t {
                case "public": break
                case "team_only", "password": notAuthorized = true
                default: throw ArgError(message: "request body: settings: requested_visibility: unknown tag '\(t)'")
                }
            }
            if let v = settings["audience"], v != .null {
                guard let (t, _) = unionTag(v) else { throw ArgError(message: "request body: settings: audience: expected union") }
                switch t {
                case "public": audience = "public"
                case "no_one": audience = "no_one"
                case "team", "password", "members": notAuthorized = true
                default: throw ArgError(message: "request body: settings: audience: unknown tag '\(t)'")
                }
            }
            if let v = settings["access"], v != .null {
                guard let (t, _) = unionTag(v) else { throw ArgError(message: "request body: settings: access: expected union") }
                switch t {
                case "viewer", "default", "max": break
                case "editor": notAuthorized = true
                default: throw ArgError(message: "request body: settings: access: unknown tag '\(t)'")
                }
            }
            if let pw = try string(settings, "link_password", required: false, prefix: "request body: settings"), !pw.isEmpty {
                notAuthorized = true
            }
            if try bool(settings, "require_password", prefix: "request body: settings") { notAuthorized = true }
            if let expires = try string(settings, "expires", required: false, prefix: "request body: settings") {
                guard DropboxWire.parseTimestamp(expires) != nil else {
                    throw ArgError(message: "request body: settings: expires: time data '\(expires)' does not match format '%Y-%m-%dT%H:%M:%SZ'")
                }
                notAuthorized = true
            }
            if let v = settings["allow_download"], v == .bool(false) { notAuthorized = true }
        }
        if p == .root || p == .malformed { return DropboxWire.nested("path", p == .root ? "not_found" : "malformed_path") }
        guard let e = await lookup(p) else { return DropboxWire.nested("path", "not_found") }
        if notAuthorized { return DropboxWire.nested("settings_error", "not_authorized") }
        if let existing = await store.link(entryID: e.id) {
            return DropboxWire.routeError("shared_link_already_exists/metadata", DropboxWire.tag("shared_link_already_exists", [
                ("shared_link_already_exists", DropboxWire.tag("metadata", [("metadata", linkJSON(existing, e))])),
            ]))
        }
        let link = try await store.createLink(entryID: e.id, audience: audience, now: env.clock())
        return .json(linkJSON(link, e))
    }

    func listSharedLinks(_ arg: JSONValue) async throws -> Response {
        var lower: String?
        if arg["path"] != nil && arg["path"] != .null {
            let p = try pathArg(arg)
            if p == .malformed { return DropboxWire.nested("path", "malformed_path") }
            if p != .root {
                guard let e = await lookup(p) else { return DropboxWire.nested("path", "not_found") }
                lower = e.pathLower
            }
        }
        let directOnly = try bool(arg, "direct_only")
        let links = await store.links(under: lower, directOnly: directOnly)
        return .json(.object([("links", .array(links.map { linkJSON($0.0, $0.1) })), ("has_more", .bool(false))]))
    }

    // MARK: Content handlers

    static let headerPrefix = "HTTP header \"Dropbox-API-Arg\""

    private func writeMode(_ arg: JSONValue) throws -> DropboxWriteMode {
        guard let v = arg["mode"], v != .null else { return .add }
        guard let (t, obj) = unionTag(v) else { throw ArgError(message: "\(Self.headerPrefix): mode: expected union") }
        switch t {
        case "add": return .add
        case "overwrite": return .overwrite
        case "update":
            guard let rev = obj["update"]?.stringValue else { throw ArgError(message: "\(Self.headerPrefix): mode: missing required field 'update'") }
            return .update(rev)
        default: throw ArgError(message: "\(Self.headerPrefix): mode: unknown tag '\(t)'")
        }
    }

    /// The commit arguments shared by `files/upload` and the `commit` of a finish.
    struct CommitArgs {
        var target: DropboxWire.PathArg
        var mode: DropboxWriteMode
        var autorename: Bool
        var strictConflict: Bool
        var clientModified: Date?
    }

    func commitArgs(_ arg: JSONValue, prefix: String) throws -> CommitArgs {
        let target = try pathArg(arg, prefix: prefix)
        var clientModified: Date?
        if let s = try string(arg, "client_modified", required: false, prefix: prefix) {
            guard let d = DropboxWire.parseTimestamp(s) else {
                throw ArgError(message: "\(prefix): client_modified: time data '\(s)' does not match format '%Y-%m-%dT%H:%M:%SZ'")
            }
            clientModified = d
        }
        _ = try bool(arg, "mute", prefix: prefix)
        return CommitArgs(target: target, mode: try writeMode(arg), autorename: try bool(arg, "autorename", prefix: prefix),
                          strictConflict: try bool(arg, "strict_conflict", prefix: prefix), clientModified: clientModified)
    }

    func contentHashArg(_ arg: JSONValue) throws -> String? {
        guard let s = try string(arg, "content_hash", required: false, prefix: Self.headerPrefix) else { return nil }
        guard s.utf8.count == 64 else {
            throw ArgError(message: "\(Self.headerPrefix): content_hash: '\(s)' must be 64 characters long")
        }
        return s.lowercased()
    }

    /// A concurrent session's pieces (all but the one with `close=true`) must be multiples of
    /// 4 MiB; a sequential session's may have any length (rclone's default chunk can be 1 MiB).
    private static func concurrentInvalidDataSize() -> Response {
        DropboxWire.routeError("concurrent_session_invalid_data_size", DropboxWire.tag("concurrent_session_invalid_data_size"))
    }

    /// The file's `content_hash` once its last piece is in `path`: from the blocks hashed as the
    /// pieces came when every earlier piece ended on a 4 MiB boundary, else from the file (a
    /// sequential session's pieces may end anywhere, so their block hashes do not line up).
    func sessionContentHash(_ path: String, earlier: [String], offset: Int64, last: [String]) throws -> String {
        if Int64(earlier.count) * Int64(DropboxContentHasher.blockSize) == offset {
            return DropboxContentHasher.combine(earlier + last)
        }
        return DropboxContentHasher.combine(try DropboxContentHasher.blocks(ofFile: path))
    }

    private func payloadTooLarge() -> Response {
        DropboxWire.routeError("payload_too_large", DropboxWire.tag("payload_too_large"))
    }

    private func contentHashMismatch() -> Response {
        DropboxWire.routeError("content_hash_mismatch", DropboxWire.tag("content_hash_mismatch"))
    }

    func upload(_ arg: JSONValue, _ request: Request) async throws -> Response {
        let commit = try commitArgs(arg, prefix: Self.headerPrefix)
        let expected = try contentHashArg(arg)
        if commit.target == .root {
            throw ArgError(message: "\(Self.headerPrefix): path: The root folder is unsupported.")
        }
        if env.control.take(.dropboxWriteContention) {
            await BoxShareFileSupport.drain(request)
            return DropboxWire.writeContention("files/upload")
        }
        guard writes.tryEnter() else { return DropboxWire.tooManyWrites() }
        defer { writes.leave() }
        let temp = store.tempPath()
        var received: DropboxFiles.Received
        do {
            received = try await DropboxFiles.receive(request, into: temp, at: 0, limit: Self.maxBody)
        } catch {
            unlink(temp)
            throw error
        }
        if received.exceeded { unlink(temp); return payloadTooLarge() }
        if received.size > 0, env.control.takeCorruption(provider: "dropbox") {
            try DropboxFiles.corrupt(temp, from: 0, size: received.size)
            received.blocks = try DropboxContentHasher.blocks(ofFile: temp)
        }
        let hash = DropboxContentHasher.combine(received.blocks)
        if let expected, expected != hash { unlink(temp); return contentHashMismatch() }

        let now = env.clock()
        func failed(_ reason: String, _ inner: JSONValue) async throws -> Response {
            let session = try await store.adoptAsSession(temp: temp, size: received.size, blocks: received.blocks, now: now)
            return DropboxWire.routeError("path/\(reason)", DropboxWire.tag("path", [("reason", inner), ("upload_session_id", .string(session))]))
        }
        guard let parts = await writeTarget(commit.target) else {
            if case .id = commit.target { return try await failed("not_found", DropboxWire.tag("not_found")) }
            return try await failed("malformed_path", DropboxWire.tag("malformed_path"))
        }
        switch try await store.commitFile(parts, mode: commit.mode, autorename: commit.autorename, strictConflict: commit.strictConflict,
                                          clientModified: commit.clientModified, temp: temp, size: received.size,
                                          contentHash: hash, now: now) {
        case .stored(let e):
            env.counters.recordUpload(provider: "dropbox", path: e.pathDisplay)
            return .json(metadata(e, tagged: false))
        case .unchanged(let e):
            unlink(temp)
            return .json(metadata(e, tagged: false))
        case .conflict(let what):
            return try await failed("conflict/\(what)", DropboxWire.tag("conflict", [("conflict", DropboxWire.tag(what))]))
        case .disallowedName:
            return try await failed("disallowed_name", DropboxWire.tag("disallowed_name"))
        }
    }

    func sessionStart(_ arg: JSONValue, _ request: Request) async throws -> Response {
        let close = try bool(arg, "close", prefix: Self.headerPrefix)
        let expected = try contentHashArg(arg)
        var concurrent = false
        if let t = arg["session_type"], t != .null {
            guard let (tag, _) = unionTag(t), tag == "sequential" || tag == "concurrent" else {
                throw ArgError(message: "\(Self.headerPrefix): session_type: unknown tag")
            }
            concurrent = tag == "concurrent"
        }
        // A concurrent session starts open and empty (`UploadSessionStartError`); its pieces come by append_v2.
        if concurrent && close {
            await BoxShareFileSupport.drain(request)
            return DropboxWire.routeError("concurrent_session_close_not_allowed", DropboxWire.tag("concurrent_session_close_not_allowed"))
        }
        let session = try await store.startSession(now: env.clock(), concurrent: concurrent)
        let path = store.sessionPath(session.id)
        let received: DropboxFiles.Received
        do {
            received = try await DropboxFiles.receive(request, into: path, at: 0, limit: Self.maxBody)
        } catch {
            try? await store.removeSession(session.id)
            throw error
        }
        if received.exceeded { try await store.removeSession(session.id); return payloadTooLarge() }
        if concurrent && received.size > 0 {
            try await store.removeSession(session.id)
            return DropboxWire.routeError("concurrent_session_data_not_allowed", DropboxWire.tag("concurrent_session_data_not_allowed"))
        }
        if let expected, expected != DropboxContentHasher.combine(received.blocks) {
            try await store.removeSession(session.id)
            return contentHashMismatch()
        }
        _ = try await store.endAppend(session.id, added: received.size, blocks: received.blocks, close: close)
        return .json(.object([("session_id", .string(session.id))]))
    }

    struct Cursor {
        var sessionID: String
        var offset: Int64
    }

    func cursor(_ arg: JSONValue, prefix outer: String = headerPrefix) throws -> Cursor {
        guard let c = arg["cursor"], c != .null else { throw ArgError(message: "\(outer): missing required field 'cursor'") }
        guard case .object = c else { throw ArgError(message: "\(outer): cursor: expected object, got \(Self.jsonKind(c))") }
        let prefix = "\(outer): cursor"
        return Cursor(sessionID: try string(c, "session_id", prefix: prefix)!, offset: try int(c, "offset", prefix: prefix))
    }

    func sessionAppend(_ arg: JSONValue, _ request: Request) async throws -> Response {
        let cur = try cursor(arg)
        let close = try bool(arg, "close", prefix: Self.headerPrefix)
        let expected = try contentHashArg(arg)
        let session: DropboxSession
        switch await store.beginAppend(cur.sessionID, offset: cur.offset, now: env.clock(), allowClosed: false) {
        case .ready(let s): session = s
        case .notFound: return DropboxWire.routeError("not_found", DropboxWire.tag("not_found"))
        case .closed: return DropboxWire.routeError("closed", DropboxWire.tag("closed"))
        case .incorrectOffset(let n):
            return DropboxWire.routeError("incorrect_offset", DropboxWire.tag("incorrect_offset", [("correct_offset", .int(n))]))
        }
        let path = store.sessionPath(session.id)
        let received: DropboxFiles.Received
        do {
            received = try await DropboxFiles.receive(request, into: path, at: session.offset, limit: Self.maxBody)
        } catch {
            _ = truncate(path, off_t(session.offset))
            await store.abortAppend(session.id)
            throw error
        }
        func discard() async { _ = truncate(path, off_t(session.offset)); await store.abortAppend(session.id) }
        if received.exceeded { await discard(); return payloadTooLarge() }
        if session.concurrent == true && !close && received.size % Int64(DropboxContentHasher.blockSize) != 0 {
            await discard()
            return Self.concurrentInvalidDataSize()
        }
        if let expected, expected != DropboxContentHasher.combine(received.blocks) {
            await discard()
            return contentHashMismatch()
        }
        _ = try await store.endAppend(session.id, added: received.size, blocks: received.blocks, close: close)
        return .json(.null)
    }

    func sessionFinish(_ arg: JSONValue, _ request: Request) async throws -> Response {
        let cur = try cursor(arg)
        guard let commitValue = arg["commit"], case .object = commitValue else {
            throw ArgError(message: "\(Self.headerPrefix): missing required field 'commit'")
        }
        let commit = try commitArgs(commitValue, prefix: "\(Self.headerPrefix): commit")
        let expected = try contentHashArg(arg)
        if commit.target == .root {
            throw ArgError(message: "\(Self.headerPrefix): commit: path: The root folder is unsupported.")
        }
        let now = env.clock()
        let session: DropboxSession
        switch await store.beginAppend(cur.sessionID, offset: cur.offset, now: now, allowClosed: true) {
        case .ready(let s): session = s
        case .notFound: return DropboxWire.nested("lookup_failed", "not_found")
        case .closed: return DropboxWire.nested("lookup_failed", "closed")
        case .incorrectOffset(let n): return DropboxWire.nested("lookup_failed", "incorrect_offset", [("correct_offset", .int(n))])
        }
        if env.control.take(.dropboxWriteContention) {
            await store.abortAppend(session.id)
            await BoxShareFileSupport.drain(request)
            return DropboxWire.writeContention("files/upload_session/finish")
        }
        guard writes.tryEnter() else {
            await store.abortAppend(session.id)
            return DropboxWire.tooManyWrites()
        }
        defer { writes.leave() }
        let path = store.sessionPath(session.id)
        var received: DropboxFiles.Received
        do {
            received = try await DropboxFiles.receive(request, into: path, at: session.offset, limit: Self.maxBody)
        } catch {
            _ = truncate(path, off_t(session.offset))
            await store.abortAppend(session.id)
            throw error
        }
        func discard() async { _ = truncate(path, off_t(session.offset)); await store.abortAppend(session.id) }
        if received.exceeded { await discard(); return payloadTooLarge() }
        if session.closed && received.size > 0 { await discard(); return DropboxWire.nested("lookup_failed", "closed") }
        var blocks = session.blocks
        if env.control.takeCorruption(provider: "dropbox") {
            if received.size > 0 {
                try DropboxFiles.corrupt(path, from: session.offset, size: received.size)
                var h = DropboxContentHasher()
                try DropboxFiles.read(path, from: session.offset) { h.update($0) }
                received.blocks = h.finish()
            } else if session.offset > 0 {
                try DropboxFiles.corrupt(path, from: 0, size: session.offset)
                blocks = try DropboxContentHasher.blocks(ofFile: path)
                try await store.replaceBlocks(session.id, blocks: blocks)
            }
        }
        if let expected, expected != DropboxContentHasher.combine(received.blocks) {
            await discard()
            return contentHashMismatch()
        }
        let total = session.offset + received.size
        let hash = try sessionContentHash(path, earlier: blocks, offset: session.offset, last: received.blocks)
        func keep(_ summary: String, _ inner: JSONValue) async throws -> Response {
            _ = try await store.endAppend(session.id, added: received.size, blocks: received.blocks, close: true)
            return DropboxWire.routeError("path/\(summary)", DropboxWire.tag("path", [("path", inner)]))
        }
        guard let parts = await writeTarget(commit.target) else {
            if case .id = commit.target { return try await keep("not_found", DropboxWire.tag("not_found")) }
            return try await keep("malformed_path", DropboxWire.tag("malformed_path"))
        }
        switch try await store.commitFile(parts, mode: commit.mode, autorename: commit.autorename, strictConflict: commit.strictConflict,
                                          clientModified: commit.clientModified, temp: path, size: total,
                                          contentHash: hash, now: now) {
        case .stored(let e):
            try await store.removeSession(session.id)
            env.counters.recordUpload(provider: "dropbox", path: e.pathDisplay)
            return .json(metadata(e, tagged: false))
        case .unchanged(let e):
            try await store.removeSession(session.id)
            return .json(metadata(e, tagged: false))
        case .conflict(let what):
            return try await keep("conflict/\(what)", DropboxWire.tag("conflict", [("conflict", DropboxWire.tag(what))]))
        case .disallowedName:
            return try await keep("disallowed_name", DropboxWire.tag("disallowed_name"))
        }
    }

    func download(_ arg: JSONValue) async throws -> Response {
        let p = try pathArg(arg, prefix: Self.headerPrefix)
        if p == .root { throw ArgError(message: "\(Self.headerPrefix): path: The root folder is unsupported.") }
        if p == .malformed { return DropboxWire.nested("path", "malformed_path") }
        guard let e = await lookup(p) else { return DropboxWire.nested("path", "not_found") }
        if e.folder { return DropboxWire.nested("path", "not_file") }
        let path = store.blobPath(e.blob)
        let size = DropboxFiles.size(path)
        return Response(status: .ok, headers: [
            .contentType: "application/octet-stream",
            .dropboxAPIResult: DropboxWire.headerSafe(metadata(e, tagged: false)),
            .eTag: "W/\"\(e.rev)\"",
        ], body: DropboxFiles.responseBody(path, size: size))
    }
}
