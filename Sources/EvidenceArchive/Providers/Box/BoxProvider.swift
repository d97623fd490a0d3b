import EvidenceCore
import EvidenceHTTP
import EvidenceStore
import Foundation

/// Box (API 2.0) with Client Credentials Grant (a daemon's natural fit) or a refresh token
/// (single-use: `OAuthSession` saves each new one before using the access token).
///
/// Box addresses items by id: paths are walked from the root folder `0` through folder
/// listings (names compared without case, as Box does) and the ids cached. Files under 20 MB
/// go as one multipart upload (attributes part first, `Content-MD5` carrying the SHA-1 hex, so
/// Box refuses damaged bytes); larger ones through an upload session: parts of the session's
/// `part_size`, each with `Digest: sha=<base64 SHA-1>`, the acknowledged parts saved after each,
/// and a commit with the whole file's SHA-1 that is repeated while Box answers 202 + `Retry-After`.
public struct BoxProvider: ArchiveProvider {
    public let account: String
    public var hashKind: ProviderHashKind { .sha1 }
    /// An upload onto an existing name is refused (409 `item_name_in_use`, documented).
    public var uploadRefusesExisting: Bool { true }
    let api: String
    let upload: String
    let caller: AuthorizedHTTP
    let resume: ResumeStore
    let folders = FolderResolver()

    public static let defaultAPI = "https://api.box.com/2.0"
    public static let defaultUpload = "https://upload.box.com/api/2.0"
    public static let defaultTokenURL = "https://api.box.com/oauth2/token"
    public static let defaultAuthorizeURL = "https://account.box.com/api/oauth2/authorize"
    /// Box accepts upload sessions only for files of at least 20 MB.
    static let sessionThreshold: Int64 = 20_000_000

    public init(account: String, session: OAuthSession, http: HTTPClient, baseURL: String?, uploadURL: String?, resumeDirectory: String?) {
        self.account = account
        api = DropboxProvider.trim(baseURL ?? Self.defaultAPI)
        upload = DropboxProvider.trim(uploadURL ?? Self.defaultUpload)
        caller = AuthorizedHTTP(account: account, http: http, session: session)
        resume = ResumeStore(directory: resumeDirectory, account: account)
    }

    /// Box refuses `/` and `\`, leading/trailing spaces, `.` and `..`; 255 characters.
    public func sanitize(component: String) -> String {
        var s = RemotePath.sanitize(component, maxBytes: 255)
        while s.first == " " { s.removeFirst() }
        return s.isEmpty ? "_" : s
    }

    func call(_ method: String, _ url: String, json: (any Encodable)? = nil, headers: [(name: String, value: String)] = [],
              doing what: String, retry: RetryMode = .full,
              busy: (@Sendable (HTTPResponse) -> Bool)? = nil) async throws(ArchiveError) -> HTTPResponse {
        let body: HTTPBody = json.map { .data(WireJSON.encode($0)) } ?? .none
        let extra = json == nil ? headers : headers + [("Content-Type", "application/json")]
        return try await caller.call(what, retry: retry, busy: busy) { token in
            HTTPRequest(method: method, url: url, headers: [("Authorization", "Bearer \(token)")] + extra, body: body)
        }
    }

    /// Box's error JSON: `code` and `message`, for the operator.
    func failure(_ r: HTTPResponse, doing what: String) -> ArchiveError {
        if let j = Self.errorAnswer(r), let code = j.code {
            var e = ArchiveError.status(r, account: account, doing: what)
            e.message = "\(account): \(what): Box answered HTTP \(r.status) \(code): \(j.message ?? "")"
            return e
        }
        return ArchiveError.status(r, account: account, doing: what)
    }

    /// A 409 that says "try again later" (`operation_blocked_temporary`,
    /// `name_temporarily_reserved`): waited out (Retry-After) and tried again by the HTTP
    /// client's loop, never read as a name taken.
    static let temporary: @Sendable (HTTPResponse) -> Bool = { r in
        r.status == 409 && (errorAnswer(r)?.code?.isTemporary ?? false)
    }

    /// The transient error for a temporary 409 that outlasted the HTTP client's retries: the
    /// job comes back later; nothing is stored under another name, no session is dropped.
    func temporarilyBlocked(_ r: HTTPResponse, doing what: String) -> ArchiveError {
        ArchiveError(.transient, "\(account): \(what): Box answered HTTP 409 \(Self.errorAnswer(r)?.code.map { "\($0)" } ?? ""): "
                     + "temporarily blocked; will try again", retryAfter: r.header("retry-after").flatMap { RetryAfter.seconds($0) })
    }

    /// Box's error body of a failed answer, if it is one.
    static func errorAnswer(_ r: HTTPResponse) -> BoxAPI.ErrorAnswer? {
        r.isSuccess ? nil : r.decoded(BoxAPI.ErrorAnswer.self)
    }

    typealias Entry = BoxAPI.Item

    /// The entry called `name` in folder `id` (all pages), or nil.
    func find(_ name: String, in folder: String) async throws(ArchiveError) -> Entry? {
        var offset = 0
        let limit = 1000
        while true {
            let url = "\(api)/folders/\(folder)/items?fields=type,id,name,size,sha1&limit=\(limit)&offset=\(offset)"
            let r = try await call("GET", url, doing: "listing folder \(folder)")
            guard r.isSuccess, let j = r.decoded(BoxAPI.Page<BoxAPI.Item>.self) else { throw failure(r, doing: "listing folder \(folder)") }
            let entries = j.entries.elements
            if let hit = entries.first(where: { $0.name.lowercased() == name.lowercased() }) { return hit }
            offset += entries.count
            let total = Int(j.total_count?.value ?? 0)
            if entries.isEmpty || offset >= total { return nil }
        }
    }

    /// What holds `name` in folder `folder`, by Box's upload preflight (`OPTIONS /files/content`):
    /// one request however full the folder, where `find` lists a page per 1,000 entries (a year
    /// of one rule's files in one folder made every upload slower than the last).
    /// 200: the name is free. 409 `item_name_in_use`: the holder's mini object, which lacks the
    /// size, so a file is completed by `GET /files/{id}`. Any other answer (a bad name, a Box
    /// that refuses the preflight, a file removed meanwhile): the listing decides.
    func holder(of name: String, in folder: String) async throws(ArchiveError) -> Entry? {
        let what = "checking \(name) in folder \(folder)"
        let r = try await call("OPTIONS", "\(api)/files/content", json: BoxAPI.NameInFolder(name: name, parent: .init(id: folder)), doing: what)
        if r.isSuccess { return nil }
        guard r.status == 409, let mini = Self.errorAnswer(r)?.conflict else { return try await find(name, in: folder) }
        guard mini.type == .file else { return mini }
        let f = try await call("GET", "\(api)/files/\(mini.id)?fields=type,id,name,size,sha1", doing: what)
        if f.status == 404 { return try await find(name, in: folder) }
        guard f.isSuccess, let e = f.decoded(BoxAPI.Item.self) else { throw failure(f, doing: what) }
        return e
    }

    /// The id of folder `path`, walking from the root `0`; nil when some part is missing.
    func folderID(_ path: String, create: Bool) async throws(ArchiveError) -> String? {
        try await folders.folderID(path, create: create, in: self)
    }

    func split(_ path: String) -> (parent: String, name: String) {
        let parent = RemotePath.parent(path)
        return (parent, String(path.dropFirst(parent.isEmpty ? 0 : parent.count + 1)))
    }

    func fileEntry(_ path: String) async throws(ArchiveError) -> Entry? {
        let (parent, name) = split(path)
        guard let folder = try await folderID(parent, create: false) else { return nil }
        guard let e = try await holder(of: name, in: folder) else { return nil }
        if e.type != .file { throw ArchiveError(.conflict, "\(account): \(path) is a \(e.type), not a file") }
        return e
    }

    // MARK: ArchiveProvider

    public func whoami() async throws(ArchiveError) -> String {
        let r = try await call("GET", "\(api)/users/me", doing: "reading the user")
        guard r.isSuccess, let j = r.decoded(BoxAPI.User.self) else { throw failure(r, doing: "reading the user") }
        return "Box user \(j.login ?? j.id?.value ?? "?")\(j.name.map { " (\($0))" } ?? "")"
    }

    public func makeFolders(_ path: String) async throws(ArchiveError) {
        _ = try await folderID(path, create: true)
    }

    public func stat(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        guard let e = try await fileEntry(path) else { return nil }
        return RemoteFile(path: path, size: e.size ?? -1, hash: e.sha1, id: e.id)
    }

    public func upload(local: String, size: Int64, hash: String, to path: String,
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let (parent, name) = split(path)
        guard let folder = try await folderID(parent, create: false) else {
            throw ArchiveError(.notFound, "\(account): folder \(parent) does not exist")
        }
        if size < Self.sessionThreshold {
            return try await multipart(local: local, size: size, sha1: hash, name: name, folder: folder, path: path, progress: progress)
        }
        return try await session(local: local, size: size, sha1: hash, name: name, folder: folder, path: path, progress: progress)
    }

    func multipart(local: String, size: Int64, sha1: String, name: String, folder: String, path: String,
                   progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let boundary = "evidence-\(UUID().uuidString)"
        let attributes = BoxAPI.UploadAttributes(name: name, parent: .init(id: folder),
                                                 content_modified_at: fileMTime(local).map { DropboxProvider.iso(Date(timeIntervalSince1970: Double($0))) })
        let head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"attributes\"\r\n\r\n"
            + String(decoding: WireJSON.encode(attributes), as: UTF8.self)
            + "\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"upload\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        let tail = "\r\n--\(boundary)--\r\n"
        // Box wants one multipart body: header part, the file, the closing boundary.
        let temp = NSTemporaryDirectory() + "evidence-box-\(UUID().uuidString)"
        defer { unlink(temp) }
        do {
            _ = FileManager.default.createFile(atPath: temp, contents: Data(head.utf8), attributes: [.posixPermissions: 0o600])
            let out = try FileHandle(forWritingTo: URL(fileURLWithPath: temp))
            defer { try? out.close() }
            try out.seekToEnd()
            let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: local))
            defer { try? input.close() }
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty { try out.write(contentsOf: chunk) }
            try out.write(contentsOf: Data(tail.utf8))
        } catch {
            throw ArchiveError(.local, "\(account): preparing the upload of \(path): \(error.localizedDescription)")
        }
        let what = "uploading \(path)"
        let r = try await caller.call(what, retry: .throttleOnly, progress: progress, busy: Self.temporary) { token in
            HTTPRequest(method: "POST", url: "\(upload)/files/content",
                        headers: [("Authorization", "Bearer \(token)"), ("Content-MD5", sha1),
                                  ("Content-Type", "multipart/form-data; boundary=\(boundary)")],
                        body: .file(path: temp, offset: 0, length: nil))
        }
        return try committed(r, path: path, doing: what)
    }

    /// The file an upload or commit created, or why there is none.
    func committed(_ r: HTTPResponse, path: String, doing what: String) throws(ArchiveError) -> RemoteFile {
        if r.isSuccess, let e = r.decoded(BoxAPI.Files.self)?.entries.elements.first {
            return RemoteFile(path: path, size: e.size ?? -1, hash: e.sha1, id: e.id)
        }
        let code = Self.errorAnswer(r)?.code.map { "\($0)" } ?? ""
        if Self.errorAnswer(r)?.code?.isCorruption == true {
            throw ArchiveError(.transient, "\(account): \(what): Box's SHA-1 of what arrived differs from ours (\(code): corrupted in transit); will upload again")
        }
        if Self.temporary(r) { throw temporarilyBlocked(r, doing: what) }
        if r.status == 409 { throw ArchiveError(.conflict, "\(account): \(path) already exists (Box \(code))") }
        throw failure(r, doing: what)
    }

    typealias Part = BoxAPI.Part
    struct SessionState: Codable { var id: String; var partSize: Int64; var parts: [Part] }

    func session(local: String, size: Int64, sha1: String, name: String, folder: String, path: String,
                 progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let key = resume.key(path: path, hash: sha1, size: size)
        var state = resume.load(SessionState.self, key: key)
        if var s = state {
            // What Box has is the truth: ask it which parts arrived.
            if let listed = try await listParts(s.id, path: path) {
                s.parts = listed
                state = s
            } else {
                state = nil
                resume.remove(key: key)
            }
        }
        if state == nil {
            let what = "starting an upload session for \(path)"
            let r = try await call("POST", "\(upload)/files/upload_sessions",
                                   json: BoxAPI.SessionCreate(folder_id: folder, file_size: size, file_name: name), doing: what, retry: .throttleOnly,
                                   busy: Self.temporary)
            if Self.temporary(r) { throw temporarilyBlocked(r, doing: what) }
            if r.status == 409 { throw ArchiveError(.conflict, "\(account): \(path) already exists") }
            guard r.isSuccess, let j = r.decoded(BoxAPI.Session.self), j.part_size.value > 0 else {
                throw failure(r, doing: what)
            }
            state = SessionState(id: j.id, partSize: j.part_size.value, parts: [])
            try resume.save(state!, key: key)
        }
        guard var s = state else { throw ArchiveError(.local, "\(account): lost upload state") }
        var offset: Int64 = 0
        while offset < size {
            let length = min(s.partSize, size - offset)
            if !s.parts.contains(where: { $0.offset == offset }) {
                let at = offset
                progress?(at)
                let digest: [UInt8]
                do { digest = try FileHasher.digest(path: local, algorithm: .sha1, offset: at, length: length) } catch {
                    throw ArchiveError(.local, "\(account): reading \(local): \(error)")
                }
                let what = "uploading part at \(at) of \(path)"
                let sessionID = s.id
                let r = try await caller.call(what, retry: .full, progress: shifted(progress, by: at)) { token in
                    HTTPRequest(method: "PUT", url: "\(upload)/files/upload_sessions/\(sessionID)",
                                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/octet-stream"),
                                          ("Content-Range", "bytes \(at)-\(at + length - 1)/\(size)"),
                                          ("Digest", "sha=\(Data(digest).base64EncodedString())")],
                                body: .file(path: local, offset: at, length: length))
                }
                if r.status == 404 {
                    resume.remove(key: key)
                    throw ArchiveError(.transient, "\(account): the upload session for \(path) is gone (expired); starting again")
                }
                if r.status == 409 || r.status == 416 {
                    // Box keeps parts immutable: this one (or one overlapping it) is already there,
                    // typically sent before an answer that was lost. Its list says what it holds.
                    guard let listed = try await listParts(s.id, path: path) else {
                        resume.remove(key: key)
                        throw ArchiveError(.transient, "\(account): the upload session for \(path) is gone (expired); starting again")
                    }
                    s.parts = listed
                    try resume.save(s, key: key)
                    guard s.parts.contains(where: { $0.offset == at && $0.size == length }) else {
                        throw ArchiveError(.transient, "\(account): \(what): Box refused the part (HTTP \(r.status) "
                                           + "\(Self.errorAnswer(r)?.code.map { "\($0)" } ?? "")) but does not list it; will look again")
                    }
                    offset += length
                    continue
                }
                guard r.isSuccess, let p = r.decoded(BoxAPI.PartAnswer.self)?.part else {
                    if case .digest = Self.errorAnswer(r)?.code {
                        throw ArchiveError(.transient, "\(account): \(what): Box's SHA-1 of the part differs from ours (corrupted in transit); will send it again")
                    }
                    throw failure(r, doing: what)
                }
                s.parts.append(Part(part_id: p.part_id.value, offset: at, size: p.size?.value ?? length,
                                    sha1: p.sha1.flatMap { $0.isEmpty ? nil : $0 } ?? Hex.encode(digest)))
                try resume.save(s, key: key)
            }
            offset += length
        }
        progress?(size)
        // Commit; 202 means "still processing parts, ask again after Retry-After".
        let whole = Data(Hex.decode(sha1) ?? []).base64EncodedString()
        let parts = s.parts.sorted { $0.offset < $1.offset }
        let what = "committing the upload of \(path)"
        // 202: parts still processing; 400 `parts_mismatch` right after the last part: Box has
        // not counted it yet. Both mean "wait (Retry-After), then commit again": the HTTP
        // client's one retry loop does that; past its attempts the job queue comes back later
        // and, the session being saved, commits again.
        let stillProcessing: @Sendable (HTTPResponse) -> Bool = { r in
            r.status == 202 || (r.status == 400 && r.decoded(BoxAPI.ErrorAnswer.self)?.code == .partsMismatch) || Self.temporary(r)
        }
        let r = try await call("POST", "\(upload)/files/upload_sessions/\(s.id)/commit", json: BoxAPI.Commit(parts: parts),
                               headers: [("Digest", "sha=\(whole)")], doing: what, retry: .throttleOnly, busy: stillProcessing)
        if stillProcessing(r) {
            throw ArchiveError(.transient, "\(account): \(what): Box kept answering that the parts are still processing; will try again",
                               retryAfter: r.header("retry-after").flatMap { RetryAfter.seconds($0) })
        }
        if r.isSuccess || r.status == 409 || r.status == 404 { resume.remove(key: key) }
        return try committed(r, path: path, doing: what)
    }

    /// Every part Box holds for session `id`, all pages (`limit`/`offset`, at most 1,000 a page);
    /// nil when the session is gone (404).
    func listParts(_ id: String, path: String) async throws(ArchiveError) -> [Part]? {
        var parts: [Part] = []
        var offset = 0
        let what = "listing parts of \(path)"
        while true {
            let r = try await call("GET", "\(upload)/files/upload_sessions/\(id)/parts?limit=1000&offset=\(offset)", doing: what)
            if r.status == 404 { return nil }
            guard r.isSuccess, let j = r.decoded(BoxAPI.Page<Part>.self) else { throw failure(r, doing: what) }
            let entries = j.entries.elements
            parts += entries
            offset += entries.count
            let total = j.total_count.map { Int($0.value) }
            if entries.isEmpty || total.map({ offset >= $0 }) ?? true { break }
        }
        // One entry per offset (a page boundary moving under us could repeat one).
        var seen: Set<Int64> = []
        return parts.filter { seen.insert($0.offset).inserted }
    }

    public func download(_ path: String, to local: String) async throws(ArchiveError) {
        guard let e = try await fileEntry(path) else { throw ArchiveError(.notFound, "\(account): \(path) is not there") }
        // 202 Accepted + Retry-After: Box is still preparing the file (just uploaded, or being
        // processed); the HTTP client's retry loop waits it out, as it does a 429.
        let notReady: @Sendable (HTTPResponse) -> Bool = { $0.status == 202 }
        let r = try await call("GET", "\(api)/files/\(e.id)/content", doing: "reading back \(path)", busy: notReady)
        if notReady(r) {
            throw ArchiveError(.transient, "\(account): reading back \(path): Box kept answering that the file is not ready (202); will try again",
                               retryAfter: r.header("retry-after").flatMap { RetryAfter.seconds($0) })
        }
        try await followDownload(r, http: caller.http, account: account, path: path, to: local)
    }

    /// A link is never made more open than `request` asks. The file's one shared link is reused
    /// when it is at least as strict as asked, else set to what is asked. Settings Box refuses
    /// (company access on a personal account, expiry or a password on a free plan) make the link
    /// `collaborators` (only people invited to the file), stricter than anything asked, and
    /// `fallback` records what was asked and made; if even that is refused the share fails with
    /// Box's reason.
    public func share(_ path: String, _ request: ShareRequest) async throws(ArchiveError) -> ShareLink {
        guard let e = try await fileEntry(path) else { throw ArchiveError(.notFound, "\(account): \(path) is not there to share") }
        let what = "sharing \(path)"
        let current = try await call("GET", "\(api)/files/\(e.id)?fields=shared_link", doing: what)
        if current.isSuccess, let link = current.decoded(BoxAPI.FileSharedLink.self)?.shared_link.flatMap(Self.link),
           Self.atLeastAsStrict(link, as: request) {
            return link
        }
        let settings = BoxAPI.SharedLinkSettings(access: BoxAPI.Access(text: request.access.rawValue), password: request.password,
                                                 unshared_at: request.expires.map(DropboxProvider.iso))
        let collaboratorsOnly = BoxAPI.SharedLinkSettings(access: .collaborators)
        var r = try await call("PUT", "\(api)/files/\(e.id)?fields=shared_link", json: BoxAPI.SharedLinkUpdate(shared_link: settings), doing: what)
        var fallback: String?
        if (r.status == 400 || r.status == 403) && settings != collaboratorsOnly {
            let refusal = Self.errorAnswer(r)
            let said = "\(refusal?.code.map { "\($0)" } ?? "HTTP \(r.status)"): \(refusal?.message ?? "")"
            fallback = "asked \(DropboxProvider.describe(request)); Box refused (\(said)); made a link for collaborators only "
                + "(people invited to the file)"
            r = try await call("PUT", "\(api)/files/\(e.id)?fields=shared_link", json: BoxAPI.SharedLinkUpdate(shared_link: collaboratorsOnly),
                               doing: what)
        }
        if r.status == 400 || r.status == 403 {
            var refused = failure(r, doing: what)
            refused.kind = .permanent
            refused.message += " (asked \(DropboxProvider.describe(request)); no link was made rather than a more open one)"
            throw refused
        }
        guard r.isSuccess, var link = r.decoded(BoxAPI.FileSharedLink.self)?.shared_link.flatMap(Self.link) else { throw failure(r, doing: what) }
        link.fallback = fallback
        return link
    }

    /// Box's access levels from most to least open: open < company < collaborators.
    static func atLeastAsStrict(_ link: ShareLink, as request: ShareRequest) -> Bool {
        let have = BoxAPI.Access(text: link.audience ?? "open")
        if have == .collaborators { return true }
        guard have >= BoxAPI.Access(text: request.access.rawValue) else { return false }
        if request.password != nil && !link.passwordProtected { return false }
        if let wanted = request.expires, link.expires.map({ $0 > wanted }) ?? true { return false }
        return true
    }

    static func link(_ j: BoxAPI.SharedLink) -> ShareLink? {
        guard let url = j.url else { return nil }
        return ShareLink(url: url, expires: j.unshared_at.flatMap(parseISO), passwordProtected: j.is_password_enabled ?? false,
                         audience: (j.effective_access ?? j.access)?.text)
    }

    public func delete(_ path: String) async throws(ArchiveError) {
        guard let e = try await fileEntry(path) else { return }
        let r = try await call("DELETE", "\(api)/files/\(e.id)", doing: "deleting \(path)")
        guard r.isSuccess || r.status == 404 else { throw failure(r, doing: "deleting \(path)") }
    }
}

extension BoxProvider: FolderTree {
    func rootFolderID() async throws(ArchiveError) -> String { "0" }

    func folderChild(named name: String, in parent: String) async throws(ArchiveError) -> FolderChild? {
        try await find(name, in: parent).map { FolderChild(id: $0.id, isFolder: $0.type == .folder) }
    }

    /// `POST /folders`; 409 `item_name_in_use` names the holder in `context_info.conflicts`,
    /// which is ours to use only when it is a folder.
    func createFolder(named name: String, in parent: String) async throws(ArchiveError) -> FolderCreation {
        let what = "creating folder \(name) in folder \(parent)"
        let r = try await call("POST", "\(api)/folders", json: BoxAPI.NameInFolder(name: name, parent: .init(id: parent)), doing: what,
                               busy: Self.temporary)
        if r.isSuccess, let made = r.decoded(BoxAPI.Item.self) { return .created(id: made.id) }
        if Self.temporary(r) { throw temporarilyBlocked(r, doing: what) }
        if r.status == 409 {
            let holder = Self.errorAnswer(r)?.conflict
            return .exists(id: holder?.type == .folder ? holder?.id : nil)
        }
        throw failure(r, doing: what)
    }
}
