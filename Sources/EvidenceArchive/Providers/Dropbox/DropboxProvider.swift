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

    func rpc(_ endpoint: String, _ args: Any, doing what: String, retry: RetryMode = .full) async throws(ArchiveError) -> HTTPResponse {
        let body = JSON.data(args)
        return try await caller.call(what, retry: retry, busy: Self.busy) { token in
            HTTPRequest(method: "POST", url: "\(api)/2/\(endpoint)",
                        headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: .data(body))
        }
    }

    func contentCall(_ endpoint: String, _ args: Any, body: HTTPBody, doing what: String, retry: RetryMode,
                     downloadTo: String? = nil, progress: (@Sendable (Int64) -> Void)? = nil) async throws(ArchiveError) -> HTTPResponse {
        let arg = JSON.asciiHeader(args)
        return try await caller.call(what, retry: retry, progress: progress, busy: Self.busy) { token in
            HTTPRequest(method: "POST", url: "\(content)/2/\(endpoint)",
                        headers: [("Authorization", "Bearer \(token)"), ("Dropbox-API-Arg", arg),
                                  ("Content-Type", "application/octet-stream")],
                        body: body, downloadTo: downloadTo)
        }
    }

    /// `error_summary` of a 409 route error ("path/not_found/..", "incorrect_offset/.."), or "".
    static func summary(_ r: HTTPResponse) -> String { r.json?["error_summary"] as? String ?? "" }

    /// Dropbox's "nothing was done, ask again" outside a 429: `too_many_write_operations` (or
    /// `too_many_requests`) anywhere in a 409's summary (`path/too_many_write_operations/..`).
    @Sendable static func busy(_ r: HTTPResponse) -> Bool {
        guard r.status == 409 else { return false }
        let parts = summary(r).split(separator: "/")
        return parts.contains("too_many_write_operations") || parts.contains("too_many_requests")
    }

    func failure(_ r: HTTPResponse, doing what: String) -> ArchiveError {
        let s = Self.summary(r)
        if Self.busy(r) {
            return ArchiveError(.transient, "\(account): \(what): Dropbox answered \(s) (too many writes at once); will try again")
        }
        if r.status == 409 && !s.isEmpty {
            let kind: ArchiveError.Kind = s.contains("not_found") ? .notFound : s.contains("conflict") ? .conflict
                : s.hasPrefix("content_hash_mismatch") ? .transient : .permanent
            return ArchiveError(kind, "\(account): \(what): Dropbox answered \(s)")
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
        let r = try await rpc("users/get_current_account", NSNull(), doing: "reading the account")
        guard r.isSuccess, let j = r.json else { throw failure(r, doing: "reading the account") }
        let name = (j["name"] as? [String: Any])?["display_name"] as? String ?? ""
        return "Dropbox account \(j["email"] as? String ?? j["account_id"] as? String ?? "?")\(name.isEmpty ? "" : " (\(name))")"
    }

    public func makeFolders(_ path: String) async throws(ArchiveError) {
        guard !path.isEmpty else { return }
        let what = "creating folder \(path)"
        let r = try await serialized { () async throws(ArchiveError) -> HTTPResponse in
            try await rpc("files/create_folder_v2", ["path": Self.dropboxPath(path), "autorename": false], doing: what)
        }
        if r.isSuccess || Self.summary(r).hasPrefix("path/conflict/folder") { return }
        throw failure(r, doing: what)
    }

    public func stat(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        let r = try await rpc("files/get_metadata", ["path": Self.dropboxPath(path)], doing: "stat \(path)")
        if r.status == 409 && Self.summary(r).hasPrefix("path/not_found") { return nil }
        guard r.isSuccess, let j = r.json else { throw failure(r, doing: "stat \(path)") }
        if (j[".tag"] as? String) != "file" { throw ArchiveError(.conflict, "\(account): \(path) is a folder, not a file") }
        return RemoteFile(path: path, size: JSON.int64(j["size"]) ?? -1, hash: (j["content_hash"] as? String)?.lowercased(),
                          id: j["id"] as? String)
    }

    public func upload(local: String, size: Int64, hash: String, to path: String,
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let commit: [String: Any] = ["path": Self.dropboxPath(path), "mode": "add", "autorename": false, "mute": true, "strict_conflict": true]
        if size <= min(chunkSize, Self.singleUploadLimit) {
            var args = commit
            args["content_hash"] = hash
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

    func sessionUpload(local: String, size: Int64, hash: String, to path: String, commit: [String: Any],
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let key = resume.key(path: path, hash: hash, size: size)
        var state = resume.load(SessionState.self, key: key)
        if state == nil {
            let first = min(chunkSize, size)
            let r = try await contentCall("files/upload_session/start", ["close": false, "content_hash": try pieceHash(local, 0, first)],
                                          body: .file(path: local, offset: 0, length: first),
                                          doing: "starting an upload session for \(path)", retry: .full,
                                          progress: progress)
            guard r.isSuccess, let sid = r.json?["session_id"] as? String else { throw failure(r, doing: "starting an upload session for \(path)") }
            state = SessionState(sessionID: sid, offset: first)
            try resume.save(state!, key: key)
        }
        guard var s = state else { throw ArchiveError(.local, "\(account): lost upload state") }
        // Append whole chunks while more than one chunk is left; the rest goes with finish.
        while size - s.offset > chunkSize {
            let at = s.offset
            progress?(at)
            let r = try await contentCall("files/upload_session/append_v2",
                                          ["cursor": ["session_id": s.sessionID, "offset": at], "close": false,
                                           "content_hash": try pieceHash(local, at, chunkSize)],
                                          body: .file(path: local, offset: at, length: chunkSize),
                                          doing: "appending to \(path) at \(at)", retry: .full,
                                          progress: shifted(progress, by: at))
            if r.status == 409, let err = r.json?["error"] as? [String: Any], (err[".tag"] as? String) == "incorrect_offset",
               let correct = JSON.int64(err["correct_offset"]) {
                s.offset = correct      // Dropbox has more (or less) than we thought: go on from there
            } else if r.status == 409 && Self.summary(r).hasPrefix("not_found") {
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
        let args: [String: Any] = ["cursor": ["session_id": s.sessionID, "offset": at], "commit": commit,
                                   "content_hash": try pieceHash(local, at, size - at)]
        let r = try await serialized { () async throws(ArchiveError) -> HTTPResponse in
            try await contentCall("files/upload_session/finish", args, body: .file(path: local, offset: at, length: size - at),
                                  doing: "finishing the upload of \(path)", retry: .throttleOnly,
                                  progress: shifted(progress, by: at))
        }
        if r.status == 409, let err = r.json?["error"] as? [String: Any], (err[".tag"] as? String) == "lookup_failed",
           let lookup = err["lookup_failed"] as? [String: Any], (lookup[".tag"] as? String) == "incorrect_offset",
           let correct = JSON.int64(lookup["correct_offset"]) {
            s.offset = correct
            try resume.save(s, key: key)
            throw ArchiveError(.transient, "\(account): finishing \(path): Dropbox holds \(correct) bytes, not \(at); resuming there")
        }
        let summary = Self.summary(r)
        if r.isSuccess || summary.contains("conflict") || summary.contains("not_found") { resume.remove(key: key) }
        return try stored(r, path: path)
    }

    /// The metadata of a stored file, or why it was not stored.
    func stored(_ r: HTTPResponse, path: String) throws(ArchiveError) -> RemoteFile {
        if r.isSuccess, let j = r.json {
            return RemoteFile(path: path, size: JSON.int64(j["size"]) ?? -1, hash: (j["content_hash"] as? String)?.lowercased(),
                              id: j["id"] as? String)
        }
        let s = Self.summary(r)
        if s.contains("content_hash_mismatch") {
            throw ArchiveError(.transient, "\(account): uploading \(path): Dropbox's content_hash of what arrived differs from ours (corrupted in transit); will upload again")
        }
        throw failure(r, doing: "uploading \(path)")
    }

    public func download(_ path: String, to local: String) async throws(ArchiveError) {
        let r = try await contentCall("files/download", ["path": Self.dropboxPath(path)], body: .none,
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
        var settings: [String: Any] = [:]
        switch request.access {
        case .open: settings["requested_visibility"] = request.password == nil ? "public" : "password"
        case .company: settings["requested_visibility"] = "team_only"
        case .collaborators: settings["audience"] = "no_one"
        }
        if let p = request.password { settings["link_password"] = p; settings["requested_visibility"] = "password" }
        if let e = request.expires { settings["expires"] = Self.iso(e) }
        var r = try await rpc("sharing/create_shared_link_with_settings", ["path": Self.dropboxPath(path), "settings": settings], doing: what)
        var fallback: String?
        let strictest: [String: Any] = ["audience": "no_one"]
        if r.status == 409 && Self.summary(r).hasPrefix("settings_error") && !(settings.count == 1 && settings["audience"] as? String == "no_one") {
            let reason = Self.summary(r).split(separator: "/").prefix(2).joined(separator: "/")
            fallback = "asked \(Self.describe(request)); Dropbox refused (\(reason): needs a paid plan or a team); "
                + "made a link for no one but those who already have access (audience no_one)"
            r = try await rpc("sharing/create_shared_link_with_settings", ["path": Self.dropboxPath(path), "settings": strictest], doing: what)
        }
        if r.status == 409 && Self.summary(r).hasPrefix("settings_error") {
            throw ArchiveError(.permanent, "\(account): \(what): Dropbox refused the link settings asked (\(Self.describe(request))) "
                               + "and a members-only link (\(Self.summary(r))); no link was made rather than a more open one")
        }
        if r.status == 409 && Self.summary(r).hasPrefix("shared_link_already_exists") {
            if let err = r.json?["error"] as? [String: Any], let inner = err["shared_link_already_exists"] as? [String: Any],
               let meta = inner["metadata"] as? [String: Any], let link = Self.link(meta) {
                return try reusable(link, request, path: path)
            }
            if let existing = try await listedLinks(path).first { return try reusable(existing, request, path: path) }
        }
        guard r.isSuccess, let j = r.json, var link = Self.link(j) else { throw failure(r, doing: what) }
        link.fallback = fallback
        return link
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
        let r = try await rpc("sharing/list_shared_links", ["path": Self.dropboxPath(path), "direct_only": true], doing: "listing links of \(path)")
        guard r.isSuccess else {
            if r.status == 409 { return [] }
            throw failure(r, doing: "listing links of \(path)")
        }
        let links = (r.json?["links"] as? [[String: Any]] ?? []).compactMap(Self.link)
        // The strictest first: it is the one to reuse if any is.
        return links.sorted { a, b in (a.audience == "no_one" ? 0 : 1) < (b.audience == "no_one" ? 0 : 1) }
    }

    package static func link(_ j: [String: Any]) -> ShareLink? {
        guard let url = j["url"] as? String else { return nil }
        let permissions = j["link_permissions"] as? [String: Any]
        let visibility = (permissions?["resolved_visibility"] as? [String: Any])?[".tag"] as? String
        let audience = (permissions?["effective_audience"] as? [String: Any])?[".tag"] as? String
        return ShareLink(url: url, expires: (j["expires"] as? String).flatMap(parseISO),
                         passwordProtected: visibility == "password" || visibility == "team_and_password"
                            || (permissions?["require_password"] as? Bool) == true,
                         audience: audience == "public" || audience == nil ? visibility ?? audience : audience)
    }

    public func delete(_ path: String) async throws(ArchiveError) {
        let r = try await serialized { () async throws(ArchiveError) -> HTTPResponse in
            try await rpc("files/delete_v2", ["path": Self.dropboxPath(path)], doing: "deleting \(path)")
        }
        if r.isSuccess || Self.summary(r).contains("not_found") { return }
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
