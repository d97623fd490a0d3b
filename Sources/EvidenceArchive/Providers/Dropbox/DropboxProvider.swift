import EvidenceCore
import EvidenceHTTP
import EvidenceStore
import Foundation

/// Dropbox (API v2) with an app key/secret and a refresh token (short-lived access tokens).
///
/// RPC calls go to `base_url` (`https://api.dropboxapi.com`), file bodies to `upload_url`
/// (`https://content.dropboxapi.com`) with their arguments in the `Dropbox-API-Arg` header
/// (non-ASCII escaped as `\uXXXX`). Files up to `chunkSize` go in one `files/upload`; larger
/// ones through an upload session whose id and acknowledged offset are saved after every
/// append, so a restarted process resumes (and `incorrect_offset` tells it where). Every
/// write sends our `content_hash`, so Dropbox itself refuses bytes damaged on the way; `stat`
/// reports `content_hash` for the caller's verification. Writes are serialized per account
/// (Dropbox answers concurrent writes to one namespace with `too_many_write_operations`, as a
/// 429 or inside a 409 route error such as `path/too_many_write_operations/..`: either way
/// nothing was written, and the shared retry loop asks again). A request carries at most
/// 150 MiB (Dropbox's limit for every upload call), so chunks are capped at 148 MiB.
public struct DropboxProvider: ArchiveProvider {
    public let account: String
    public var hashKind: ProviderHashKind { .dropbox }
    /// An upload onto an existing name is refused (mode "add" with autorename false: a `path/conflict` error, documented).
    public var uploadRefusesExisting: Bool { true }
    let api: String
    let content: String
    let caller: AuthorizedHTTP
    let resume: ResumeStore
    /// Bytes per append: a multiple of 4 MiB (Dropbox's rule for session appends).
    let chunkSize: Int64
    let writes = AsyncMutex()

    public static let defaultAPI = "https://api.dropboxapi.com"
    public static let defaultContent = "https://content.dropboxapi.com"
    public static let defaultTokenURL = "https://api.dropboxapi.com/oauth2/token"
    public static let defaultAuthorizeURL = "https://www.dropbox.com/oauth2/authorize"
    /// `files/upload` takes at most 150 MB; above that only sessions work.
    static let singleUploadLimit: Int64 = 150 << 20
    /// The largest body of one upload call (150 MiB), and the largest 4 MiB multiple under it.
    static let requestLimit: Int64 = 150 << 20
    static let maxChunk: Int64 = requestLimit / (4 << 20) * (4 << 20)

    public init(account: String, session: OAuthSession, http: HTTPClient, baseURL: String?, uploadURL: String?,
                resumeDirectory: String?, chunkSize: Int64 = 32 << 20) {
        self.account = account
        api = Self.trim(baseURL ?? Self.defaultAPI)
        content = Self.trim(uploadURL ?? Self.defaultContent)
        caller = AuthorizedHTTP(account: account, http: http, session: session)
        resume = ResumeStore(directory: resumeDirectory, account: account)
        let block: Int64 = 4 << 20
        self.chunkSize = min(Self.maxChunk, max(block, chunkSize / block * block))
    }

    static func trim(_ s: String) -> String { s.hasSuffix("/") ? String(s.dropLast()) : s }

    /// Dropbox refuses `/ \ < > : " | ? *` and names ending in a dot or space; 255 characters.
    public func sanitize(component: String) -> String {
        RemotePath.sanitize(component, forbidden: ["<", ">", ":", "\"", "|", "?", "*"], maxBytes: 255)
    }

    static func dropboxPath(_ path: String) -> String { path.isEmpty ? "" : "/" + path }

    // MARK: Calls

    func rpc(_ endpoint: String, _ args: some Encodable, doing what: String, retry: RetryMode = .full) async throws(ArchiveError) -> HTTPResponse {
        let body = WireJSON.encode(args)
        return try await caller.call(what, retry: retry, busy: Self.busy) { token in
            HTTPRequest(method: "POST", url: "\(api)/2/\(endpoint)",
                        headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: .data(body))
        }
    }

    func contentCall(_ endpoint: String, _ args: some Encodable, body: HTTPBody, doing what: String, retry: RetryMode,
                     downloadTo: String? = nil, progress: (@Sendable (Int64) -> Void)? = nil) async throws(ArchiveError) -> HTTPResponse {
        let arg = WireJSON.asciiHeader(args)
        return try await caller.call(what, retry: retry, progress: progress, busy: Self.busy) { token in
            HTTPRequest(method: "POST", url: "\(content)/2/\(endpoint)",
                        headers: [("Authorization", "Bearer \(token)"), ("Dropbox-API-Arg", arg),
                                  ("Content-Type", "application/octet-stream")],
                        body: body, downloadTo: downloadTo)
        }
    }

    /// The route error of an answer (HTTP 409: `error_summary` and the `error` union), if it is one.
    static func routeError(_ r: HTTPResponse) -> DropboxAPI.RouteError? {
        r.isSuccess ? nil : r.decoded(DropboxAPI.RouteError.self)
    }

    /// `error_summary` of a route error as its tags ("path/not_found/.." is path, not_found); empty when none.
    static func summary(_ r: HTTPResponse) -> DropboxAPI.ErrorSummary { routeError(r)?.summary ?? DropboxAPI.ErrorSummary("") }

    /// Dropbox's "nothing was done, ask again" outside a 429: `too_many_write_operations` (or
    /// `too_many_requests`) anywhere in a 409's summary (`path/too_many_write_operations/..`).
    @Sendable static func busy(_ r: HTTPResponse) -> Bool {
        r.status == 409 && summary(r).isBusy
    }

    func failure(_ r: HTTPResponse, doing what: String) -> ArchiveError {
        let s = Self.summary(r)
        if Self.busy(r) {
            return ArchiveError(.transient, "\(account): \(what): Dropbox answered \(s.text) (too many writes at once); will try again")
        }
        if r.status == 409 && !s.isEmpty {
            let kind: ArchiveError.Kind = s.contains(.notFound) ? .notFound : s.contains(.conflict) ? .conflict
                : s.starts(with: .contentHashMismatch) ? .transient : .permanent
            return ArchiveError(kind, "\(account): \(what): Dropbox answered \(s.text)")
        }
        return ArchiveError.status(r, account: account, doing: what)
    }

    func serialized<T>(_ body: () async throws(ArchiveError) -> T) async throws(ArchiveError) -> T {
        await writes.lock()
        do {
            let value = try await body()
            await writes.unlock()
            return value
        } catch {
            await writes.unlock()
            throw error
        }
    }

    // MARK: ArchiveProvider

    public func whoami() async throws(ArchiveError) -> String {
        let r = try await rpc("users/get_current_account", JSONTree.null, doing: "reading the account")
        guard r.isSuccess, let j = r.decoded(DropboxAPI.Account.self) else { throw failure(r, doing: "reading the account") }
        let name = j.name?.display_name ?? ""
        return "Dropbox account \(j.email ?? j.account_id ?? "?")\(name.isEmpty ? "" : " (\(name))")"
    }

    public func makeFolders(_ path: String) async throws(ArchiveError) {
        guard !path.isEmpty else { return }
        let what = "creating folder \(path)"
        let r = try await serialized { () async throws(ArchiveError) -> HTTPResponse in
            try await rpc("files/create_folder_v2", DropboxAPI.CreateFolderArg(path: Self.dropboxPath(path)), doing: what)
        }
        if r.isSuccess || Self.summary(r).starts(with: .path, .conflict, .folder) { return }
        throw failure(r, doing: what)
    }

    public func stat(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        let r = try await rpc("files/get_metadata", DropboxAPI.PathArg(path: Self.dropboxPath(path)), doing: "stat \(path)")
        if r.status == 409 && Self.summary(r).starts(with: .path, .notFound) { return nil }
        guard r.isSuccess, let j = r.decoded(DropboxAPI.Metadata.self) else { throw failure(r, doing: "stat \(path)") }
        if j.kind != .file { throw ArchiveError(.conflict, "\(account): \(path) is a folder, not a file") }
        return RemoteFile(path: path, size: j.size?.value ?? -1, hash: j.content_hash?.lowercased(), id: j.id)
    }

    public func upload(local: String, size: Int64, hash: String, to path: String,
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let commit = DropboxAPI.CommitInfo(path: Self.dropboxPath(path))
        if size <= min(chunkSize, Self.singleUploadLimit) {
            let args = DropboxAPI.UploadArg(commit: commit, content_hash: hash)
            let r = try await serialized { () async throws(ArchiveError) -> HTTPResponse in
                try await contentCall("files/upload", args, body: .file(path: local, offset: 0, length: size),
                                      doing: "uploading \(path)", retry: .throttleOnly, progress: progress)
            }
            return try stored(r, path: path)
        }
        return try await sessionUpload(local: local, size: size, hash: hash, to: path, commit: commit, progress: progress)
    }

    struct SessionState: Codable { var sessionID: String; var offset: Int64 }

    /// `content_hash` of the bytes one session call carries: Dropbox checks each call's own.
    func pieceHash(_ local: String, _ offset: Int64, _ length: Int64) throws(ArchiveError) -> String {
        do { return try FileHasher.dropboxContentHash(path: local, offset: offset, length: length) } catch {
            throw ArchiveError(.local, "\(account): reading \(local): \(error)")
        }
    }

    func sessionUpload(local: String, size: Int64, hash: String, to path: String, commit: DropboxAPI.CommitInfo,
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let key = resume.key(path: path, hash: hash, size: size)
        var state = resume.load(SessionState.self, key: key)
        if state == nil {
            let first = min(chunkSize, size)
            let r = try await contentCall("files/upload_session/start", DropboxAPI.SessionStartArg(content_hash: try pieceHash(local, 0, first)),
                                          body: .file(path: local, offset: 0, length: first),
                                          doing: "starting an upload session for \(path)", retry: .full,
                                          progress: progress)
            guard r.isSuccess, let sid = r.decoded(DropboxAPI.SessionStart.self)?.session_id else { throw failure(r, doing: "starting an upload session for \(path)") }
            state = SessionState(sessionID: sid, offset: first)
            try resume.save(state!, key: key)
        }
        guard var s = state else { throw ArchiveError(.local, "\(account): lost upload state") }
        // Append whole chunks while more than one chunk is left; the rest goes with finish.
        while size - s.offset > chunkSize {
            let at = s.offset
            progress?(at)
            let r = try await contentCall("files/upload_session/append_v2",
                                          DropboxAPI.AppendArg(cursor: DropboxAPI.Cursor(session_id: s.sessionID, offset: at),
                                                               content_hash: try pieceHash(local, at, chunkSize)),
                                          body: .file(path: local, offset: at, length: chunkSize),
                                          doing: "appending to \(path) at \(at)", retry: .full,
                                          progress: shifted(progress, by: at))
            let routeError = r.status == 409 ? Self.routeError(r) : nil
            if case .incorrectOffset(let correct) = routeError?.error {
                s.offset = correct      // Dropbox has more (or less) than we thought: go on from there
            } else if routeError?.summary.starts(with: .notFound) == true {
                resume.remove(key: key)  // session expired (7 days): start over next attempt
                throw ArchiveError(.transient, "\(account): the upload session for \(path) expired; starting again")
            } else if r.isSuccess {
                s.offset = at + chunkSize
            } else {
                throw failure(r, doing: "appending to \(path)")
            }
            try resume.save(s, key: key)
        }
        let at = s.offset
        // Dropbox checks the last piece by its own hash; the whole file is verified by the
        // caller against the stored file's content_hash.
        let args = DropboxAPI.FinishArg(cursor: DropboxAPI.Cursor(session_id: s.sessionID, offset: at), commit: commit,
                                        content_hash: try pieceHash(local, at, size - at))
        let r = try await serialized { () async throws(ArchiveError) -> HTTPResponse in
            try await contentCall("files/upload_session/finish", args, body: .file(path: local, offset: at, length: size - at),
                                  doing: "finishing the upload of \(path)", retry: .throttleOnly,
                                  progress: shifted(progress, by: at))
        }
        if r.status == 409, case .lookupFailed(.incorrectOffset(let correct)) = Self.routeError(r)?.error {
            s.offset = correct
            try resume.save(s, key: key)
            throw ArchiveError(.transient, "\(account): finishing \(path): Dropbox holds \(correct) bytes, not \(at); resuming there")
        }
        let summary = Self.summary(r)
        if r.isSuccess || summary.contains(.conflict) || summary.contains(.notFound) { resume.remove(key: key) }
        return try stored(r, path: path)
    }

    /// The metadata of a stored file, or why it was not stored.
    func stored(_ r: HTTPResponse, path: String) throws(ArchiveError) -> RemoteFile {
        if r.isSuccess, let j = r.decoded(DropboxAPI.Metadata.self) {
            return RemoteFile(path: path, size: j.size?.value ?? -1, hash: j.content_hash?.lowercased(), id: j.id)
        }
        let s = Self.summary(r)
        if s.contains(.contentHashMismatch) {
            throw ArchiveError(.transient, "\(account): uploading \(path): Dropbox's content_hash of what arrived differs from ours (corrupted in transit); will upload again")
        }
        throw failure(r, doing: "uploading \(path)")
    }

    public func download(_ path: String, to local: String) async throws(ArchiveError) {
        let r = try await contentCall("files/download", DropboxAPI.PathArg(path: Self.dropboxPath(path)), body: .none,
                                      doing: "reading back \(path)", retry: .full, downloadTo: local)
        guard r.isSuccess else { throw failure(r, doing: "reading back \(path)") }
    }

    /// A link is never made more open than `request` asks. Dropbox's plans refuse settings
    /// (password, expiry, team-only: `settings_error/not_authorized` on a Basic account); then
    /// the link is made for no one but those who already have access (`audience: no_one`),
    /// which is stricter than anything asked, and `fallback` records what was asked and made;
    /// if even that is refused the share fails with Dropbox's reason. An existing link is reused
    /// only when it is at least as strict as asked; a more open one is left alone and the share
    /// fails, saying so (changing or revoking a link someone made is not ours to do).
    public func share(_ path: String, _ request: ShareRequest) async throws(ArchiveError) -> ShareLink {
        let what = "sharing \(path)"
        if let existing = try await listedLinks(path).first {
            return try reusable(existing, request, path: path)
        }
        let settings = Self.settings(for: request)
        let remote = Self.dropboxPath(path)
        var r = try await rpc("sharing/create_shared_link_with_settings", DropboxAPI.CreateLinkArg(path: remote, settings: settings), doing: what)
        var fallback: String?
        if r.status == 409 && Self.summary(r).starts(with: .settingsError) && settings != .membersOnly {
            fallback = "asked \(Self.describe(request)); Dropbox refused (\(Self.summary(r).reason): needs a paid plan or a team); "
                + "made a link for no one but those who already have access (audience no_one)"
            r = try await rpc("sharing/create_shared_link_with_settings", DropboxAPI.CreateLinkArg(path: remote, settings: .membersOnly), doing: what)
        }
        if r.status == 409 && Self.summary(r).starts(with: .settingsError) {
            throw ArchiveError(.permanent, "\(account): \(what): Dropbox refused the link settings asked (\(Self.describe(request))) "
                               + "and a members-only link (\(Self.summary(r).text)); no link was made rather than a more open one")
        }
        if r.status == 409 && Self.summary(r).starts(with: .sharedLinkAlreadyExists) {
            if case .sharedLinkAlreadyExists(let meta?) = Self.routeError(r)?.error, let link = Self.link(meta) {
                return try reusable(link, request, path: path)
            }
            if let existing = try await listedLinks(path).first { return try reusable(existing, request, path: path) }
        }
        guard r.isSuccess, let j = r.decoded(DropboxAPI.SharedLink.self), var link = Self.link(j) else { throw failure(r, doing: what) }
        link.fallback = fallback
        return link
    }

    /// The link settings that say what `request` asks, in Dropbox's terms.
    static func settings(for request: ShareRequest) -> DropboxAPI.LinkSettings {
        var settings = DropboxAPI.LinkSettings()
        switch request.access {
        case .open: settings.requested_visibility = request.password == nil ? .public : .password
        case .company: settings.requested_visibility = .teamOnly
        case .collaborators: settings.audience = .noOne
        }
        if let p = request.password { settings.link_password = p; settings.requested_visibility = .password }
        if let e = request.expires { settings.expires = iso(e) }
        return settings
    }

    /// "open with a password and an expiry", for the record of what was asked.
    static func describe(_ request: ShareRequest) -> String {
        var parts = ["access \(request.access.rawValue)"]
        if request.password != nil { parts.append("a password") }
        if let e = request.expires { parts.append("expiry \(iso(e))") }
        return parts.joined(separator: ", ")
    }

    /// `link` when it is at least as strict as `request` asks, else a permanent error.
    func reusable(_ link: ShareLink, _ request: ShareRequest, path: String) throws(ArchiveError) -> ShareLink {
        if Self.atLeastAsStrict(link, as: request) { return link }
        throw ArchiveError(.permanent, "\(account): sharing \(path): a link exists that is more open than asked "
                           + "(it is \(link.audience ?? "of unknown audience")\(link.passwordProtected ? " with a password" : "")"
                           + "\(link.expires.map { ", expiring \(Self.iso($0))" } ?? ", never expiring"); asked \(Self.describe(request))); "
                           + "remove that link or relax the rule's [share]")
    }

    static func atLeastAsStrict(_ link: ShareLink, as request: ShareRequest) -> Bool {
        let audience = link.audience ?? "public"
        if ["no_one", "shared_folder_only", "members"].contains(audience) { return true }
        switch request.access {
        case .collaborators: return false
        case .company: if !["team_only", "team_and_password", "team"].contains(audience) { return false }
        case .open: break
        }
        if request.password != nil && !link.passwordProtected { return false }
        if let wanted = request.expires, link.expires.map({ $0 > wanted }) ?? true { return false }
        return true
    }

    func listedLinks(_ path: String) async throws(ArchiveError) -> [ShareLink] {
        let r = try await rpc("sharing/list_shared_links", DropboxAPI.ListLinksArg(path: Self.dropboxPath(path)), doing: "listing links of \(path)")
        guard r.isSuccess else {
            if r.status == 409 { return [] }
            throw failure(r, doing: "listing links of \(path)")
        }
        let links = (r.decoded(DropboxAPI.LinkList.self)?.links?.elements ?? []).compactMap(Self.link)
        // The strictest first: it is the one to reuse if any is.
        return links.sorted { a, b in (a.audience == "no_one" ? 0 : 1) < (b.audience == "no_one" ? 0 : 1) }
    }

    /// A shared link's metadata as a `ShareLink`; nil without a URL. The audience is the
    /// effective one, or where that is merely `public`, the resolved visibility (which says more).
    static func link(_ j: DropboxAPI.SharedLink) -> ShareLink? {
        guard let url = j.url else { return nil }
        let permissions = j.link_permissions
        let visibility = permissions?.resolved_visibility
        let audience = permissions?.effective_audience
        return ShareLink(url: url, expires: j.expires.flatMap(parseISO),
                         passwordProtected: visibility == .password || visibility == .teamAndPassword
                            || permissions?.require_password == true,
                         audience: audience == .public || audience == nil ? visibility?.tag ?? audience?.tag : audience?.tag)
    }

    public func delete(_ path: String) async throws(ArchiveError) {
        let r = try await serialized { () async throws(ArchiveError) -> HTTPResponse in
            try await rpc("files/delete_v2", DropboxAPI.PathArg(path: Self.dropboxPath(path)), doing: "deleting \(path)")
        }
        if r.isSuccess || Self.summary(r).contains(.notFound) { return }
        throw failure(r, doing: "deleting \(path)")
    }

    static func iso(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: d)
    }
}

func parseISO(_ s: String) -> Date? {
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime]
    if let d = f.date(from: s) { return d }
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return f.date(from: s)
}
