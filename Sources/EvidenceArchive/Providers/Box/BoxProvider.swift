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
    let api: String
    let upload: String
    let caller: AuthorizedHTTP
    let resume: ResumeStore
    let folders = FolderIDs(root: "0")

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

    func call(_ method: String, _ url: String, json: Any? = nil, headers: [(name: String, value: String)] = [],
              doing what: String, retry: RetryMode = .full,
              busy: (@Sendable (HTTPResponse) -> Bool)? = nil) async throws(ArchiveError) -> HTTPResponse {
        let body: HTTPBody = json.map { .data(JSON.data($0)) } ?? .none
        let extra = json == nil ? headers : headers + [("Content-Type", "application/json")]
        return try await caller.call(what, retry: retry, busy: busy) { token in
            HTTPRequest(method: method, url: url, headers: [("Authorization", "Bearer \(token)")] + extra, body: body)
        }
    }

    /// Box's error JSON: `code` and `message`, for the operator.
    func failure(_ r: HTTPResponse, doing what: String) -> ArchiveError {
        if let j = r.json, let code = j["code"] as? String {
            var e = ArchiveError.status(r, account: account, doing: what)
            e.message = "\(account): \(what): Box answered HTTP \(r.status) \(code): \(j["message"] as? String ?? "")"
            return e
        }
        return ArchiveError.status(r, account: account, doing: what)
    }

    package struct Entry { var type: String; var id: String; var name: String; var size: Int64?; var sha1: String? }

    package static func entry(_ j: [String: Any]) -> Entry? {
        guard let type = j["type"] as? String, let id = j["id"] as? String ?? (j["id"] as? NSNumber)?.stringValue,
              let name = j["name"] as? String else { return nil }
        return Entry(type: type, id: id, name: name, size: JSON.int64(j["size"]), sha1: (j["sha1"] as? String)?.lowercased())
    }

    /// The entry called `name` in folder `id` (all pages), or nil.
    func find(_ name: String, in folder: String) async throws(ArchiveError) -> Entry? {
        var offset = 0
        let limit = 1000
        while true {
            let url = "\(api)/folders/\(folder)/items?fields=type,id,name,size,sha1&limit=\(limit)&offset=\(offset)"
            let r = try await call("GET", url, doing: "listing folder \(folder)")
            guard r.isSuccess, let j = r.json else { throw failure(r, doing: "listing folder \(folder)") }
            let entries = (j["entries"] as? [[String: Any]] ?? []).compactMap(Self.entry)
            if let hit = entries.first(where: { $0.name.lowercased() == name.lowercased() }) { return hit }
            offset += entries.count
            let total = Int(JSON.int64(j["total_count"]) ?? 0)
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
        let r = try await call("OPTIONS", "\(api)/files/content", json: ["name": name, "parent": ["id": folder]], doing: what)
        if r.isSuccess { return nil }
        guard r.status == 409, let info = r.json?["context_info"] as? [String: Any],
              let mini = ((info["conflicts"] as? [String: Any]) ?? (info["conflicts"] as? [[String: Any]])?.first).flatMap(Self.entry)
        else { return try await find(name, in: folder) }
        guard mini.type == "file" else { return mini }
        let f = try await call("GET", "\(api)/files/\(mini.id)?fields=type,id,name,size,sha1", doing: what)
        if f.status == 404 { return try await find(name, in: folder) }
        guard f.isSuccess, let e = f.json.flatMap(Self.entry) else { throw failure(f, doing: what) }
        return e
    }

    /// The id of folder `path`, walking from the root; nil when some part is missing.
    func folderID(_ path: String, create: Bool) async throws(ArchiveError) -> String? {
        if let id = await folders.get(path) { return id }
        var current = ""
        var id = "0"
        for part in path.split(separator: "/").map(String.init) {
            current += (current.isEmpty ? "" : "/") + part
            if let known = await folders.get(current) { id = known; continue }
            if let e = try await find(part, in: id) {
                guard e.type == "folder" else { throw ArchiveError(.conflict, "\(account): \(current) is a file, not a folder") }
                id = e.id
            } else if create {
                let r = try await call("POST", "\(api)/folders", json: ["name": part, "parent": ["id": id]], doing: "creating folder \(current)")
                if r.isSuccess, let e = r.json.flatMap(Self.entry) {
                    id = e.id
                } else if r.status == 409, let info = r.json?["context_info"] as? [String: Any],
                          let conflicts = info["conflicts"] as? [[String: Any]], let e = conflicts.first.flatMap(Self.entry) {
                    id = e.id   // created meanwhile (by us on a retry, or someone else): use it
                } else {
                    throw failure(r, doing: "creating folder \(current)")
                }
            } else {
                return nil
            }
            await folders.set(current, id)
        }
        return id
    }

    func split(_ path: String) -> (parent: String, name: String) {
        let parent = RemotePath.parent(path)
        return (parent, String(path.dropFirst(parent.isEmpty ? 0 : parent.count + 1)))
    }

    func fileEntry(_ path: String) async throws(ArchiveError) -> Entry? {
        let (parent, name) = split(path)
        guard let folder = try await folderID(parent, create: false) else { return nil }
        guard let e = try await holder(of: name, in: folder) else { return nil }
        if e.type != "file" { throw ArchiveError(.conflict, "\(account): \(path) is a \(e.type), not a file") }
        return e
    }

    // MARK: ArchiveProvider

    public func whoami() async throws(ArchiveError) -> String {
        let r = try await call("GET", "\(api)/users/me", doing: "reading the user")
        guard r.isSuccess, let j = r.json else { throw failure(r, doing: "reading the user") }
        return "Box user \(j["login"] as? String ?? j["id"] as? String ?? "?")\((j["name"] as? String).map { " (\($0))" } ?? "")"
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
        var attributes: [String: Any] = ["name": name, "parent": ["id": folder]]
        if let m = fileMTime(local) { attributes["content_modified_at"] = DropboxProvider.iso(Date(timeIntervalSince1970: Double(m))) }
        let head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"attributes\"\r\n\r\n"
            + String(decoding: JSON.data(attributes), as: UTF8.self)
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
        let r = try await caller.call(what, retry: .throttleOnly, progress: progress) { token in
            HTTPRequest(method: "POST", url: "\(upload)/files/content",
                        headers: [("Authorization", "Bearer \(token)"), ("Content-MD5", sha1),
                                  ("Content-Type", "multipart/form-data; boundary=\(boundary)")],
                        body: .file(path: temp, offset: 0, length: nil))
        }
        return try committed(r, path: path, doing: what)
    }

    /// The file an upload or commit created, or why there is none.
    func committed(_ r: HTTPResponse, path: String, doing what: String) throws(ArchiveError) -> RemoteFile {
        if r.isSuccess, let entries = r.json?["entries"] as? [[String: Any]], let e = entries.first.flatMap(Self.entry) {
            return RemoteFile(path: path, size: e.size ?? -1, hash: e.sha1, id: e.id)
        }
        let code = r.json?["code"] as? String ?? ""
        if code.contains("digest") || code == "sha1_mismatch" {
            throw ArchiveError(.transient, "\(account): \(what): Box's SHA-1 of what arrived differs from ours (\(code): corrupted in transit); will upload again")
        }
        if r.status == 409 { throw ArchiveError(.conflict, "\(account): \(path) already exists (Box \(code))") }
        throw failure(r, doing: what)
    }

    struct Part: Codable { var part_id: String; var offset: Int64; var size: Int64; var sha1: String }
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
                                   json: ["folder_id": folder, "file_size": size, "file_name": name], doing: what, retry: .throttleOnly)
            if r.status == 409 { throw ArchiveError(.conflict, "\(account): \(path) already exists") }
            guard r.isSuccess, let j = r.json, let id = j["id"] as? String, let partSize = JSON.int64(j["part_size"]), partSize > 0 else {
                throw failure(r, doing: what)
            }
            state = SessionState(id: id, partSize: partSize, parts: [])
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
                                           + "\(r.json?["code"] as? String ?? "")) but does not list it; will look again")
                    }
                    offset += length
                    continue
                }
                guard r.isSuccess, let p = r.json?["part"] as? [String: Any], let id = p["part_id"] as? String else {
                    if (r.json?["code"] as? String ?? "").contains("digest") {
                        throw ArchiveError(.transient, "\(account): \(what): Box's SHA-1 of the part differs from ours (corrupted in transit); will send it again")
                    }
                    throw failure(r, doing: what)
                }
                s.parts.append(Part(part_id: id, offset: at, size: JSON.int64(p["size"]) ?? length, sha1: p["sha1"] as? String ?? Hex.encode(digest)))
                try resume.save(s, key: key)
            }
            offset += length
        }
        progress?(size)
        // Commit; 202 means "still processing parts, ask again after Retry-After".
        let whole = Data(Hex.decode(sha1) ?? []).base64EncodedString()
        let parts = s.parts.sorted { $0.offset < $1.offset }.map { ["part_id": $0.part_id, "offset": $0.offset, "size": $0.size, "sha1": $0.sha1] as [String: Any] }
        let what = "committing the upload of \(path)"
        // 202: parts still processing; 400 `parts_mismatch` right after the last part: Box has
        // not counted it yet. Both mean "wait (Retry-After), then commit again": the HTTP
        // client's one retry loop does that; past its attempts the job queue comes back later
        // and, the session being saved, commits again.
        let stillProcessing: @Sendable (HTTPResponse) -> Bool = { r in
            r.status == 202 || (r.status == 400 && (r.json?["code"] as? String) == "parts_mismatch")
        }
        let r = try await call("POST", "\(upload)/files/upload_sessions/\(s.id)/commit", json: ["parts": parts],
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
            guard r.isSuccess, let j = r.json, let entries = j["entries"] as? [[String: Any]] else { throw failure(r, doing: what) }
            parts += entries.compactMap { e in
                guard let pid = e["part_id"] as? String, let off = JSON.int64(e["offset"]), let sz = JSON.int64(e["size"]) else { return nil }
                return Part(part_id: pid, offset: off, size: sz, sha1: e["sha1"] as? String ?? "")
            }
            offset += entries.count
            let total = JSON.int64(j["total_count"]).map(Int.init)
            if entries.isEmpty || total.map({ offset >= $0 }) ?? true { break }
        }
        // One entry per offset (a page boundary moving under us could repeat one).
        var seen: Set<Int64> = []
        return parts.filter { seen.insert($0.offset).inserted }
    }

    public func download(_ path: String, to local: String) async throws(ArchiveError) {
        guard let e = try await fileEntry(path) else { throw ArchiveError(.notFound, "\(account): \(path) is not there") }
        let r = try await call("GET", "\(api)/files/\(e.id)/content", doing: "reading back \(path)")
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
        if current.isSuccess, let link = (current.json?["shared_link"] as? [String: Any]).flatMap(Self.link),
           Self.atLeastAsStrict(link, as: request) {
            return link
        }
        var settings: [String: Any] = ["access": request.access.rawValue]
        if let p = request.password { settings["password"] = p }
        if let x = request.expires { settings["unshared_at"] = DropboxProvider.iso(x) }
        var r = try await call("PUT", "\(api)/files/\(e.id)?fields=shared_link", json: ["shared_link": settings], doing: what)
        var fallback: String?
        if (r.status == 400 || r.status == 403) && !(settings.count == 1 && request.access == .collaborators) {
            let said = "\(r.json?["code"] as? String ?? "HTTP \(r.status)"): \(r.json?["message"] as? String ?? "")"
            fallback = "asked \(DropboxProvider.describe(request)); Box refused (\(said)); made a link for collaborators only "
                + "(people invited to the file)"
            r = try await call("PUT", "\(api)/files/\(e.id)?fields=shared_link", json: ["shared_link": ["access": "collaborators"]], doing: what)
        }
        if r.status == 400 || r.status == 403 {
            var refused = failure(r, doing: what)
            refused.kind = .permanent
            refused.message += " (asked \(DropboxProvider.describe(request)); no link was made rather than a more open one)"
            throw refused
        }
        guard r.isSuccess, let j = r.json, var link = (j["shared_link"] as? [String: Any]).flatMap(Self.link) else { throw failure(r, doing: what) }
        link.fallback = fallback
        return link
    }

    /// Box's access levels from most to least open: open < company < collaborators.
    static func atLeastAsStrict(_ link: ShareLink, as request: ShareRequest) -> Bool {
        let rank = ["open": 0, "company": 1, "collaborators": 2]
        let have = rank[link.audience ?? "open"] ?? 0
        if have == 2 { return true }
        guard have >= rank[request.access.rawValue] ?? 0 else { return false }
        if request.password != nil && !link.passwordProtected { return false }
        if let wanted = request.expires, link.expires.map({ $0 > wanted }) ?? true { return false }
        return true
    }

    package static func link(_ j: [String: Any]) -> ShareLink? {
        guard let url = j["url"] as? String else { return nil }
        return ShareLink(url: url, expires: (j["unshared_at"] as? String).flatMap(parseISO),
                         passwordProtected: j["is_password_enabled"] as? Bool ?? false,
                         audience: j["effective_access"] as? String ?? j["access"] as? String)
    }

    public func delete(_ path: String) async throws(ArchiveError) {
        guard let e = try await fileEntry(path) else { return }
        let r = try await call("DELETE", "\(api)/files/\(e.id)", doing: "deleting \(path)")
        guard r.isSuccess || r.status == 404 else { throw failure(r, doing: "deleting \(path)") }
    }
}
