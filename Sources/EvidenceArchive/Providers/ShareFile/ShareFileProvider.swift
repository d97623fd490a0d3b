import EvidenceCore
import EvidenceHTTP
import EvidenceStore
import Foundation

/// ShareFile (API v3) with the password grant or a refresh token.
///
/// The API host is the token answer's `https://{subdomain}.{apicp}/sf/v3` (`sf-api.com`,
/// `sf-api.eu`, …) unless `base_url` says otherwise. Our root is the user's home folder
/// (`GET Items`); everything below is resolved relative to it (`Items(parent)/ByPath?path=/name`)
/// and created with `Items(parent)/Folder`; ids are cached. Uploads ask `Items(folder)/Upload2`
/// (`UploadRequestParams`: `FileSize`, not a length field the service ignores) for an upload
/// specification: files up to `chunkSize` go as one raw `Standard` POST to its `ChunkUri`
/// (`&fmt=json`); larger ones `Threaded`, one chunk at a time with its MD5, then the `FinishUri`
/// with the whole file's MD5 and `respformat=json`, as the ShareFile SDK sends it. The
/// specification and the acknowledged offset are saved after every chunk so a restart resumes
/// on the same upload. The upload server reports failures as HTTP 200 with `"error": true` or a
/// body `ERROR:…`: every answer's body is checked. `stat` reports ShareFile's MD5 (`Hash`).
public struct ShareFileProvider: ArchiveProvider {
    public let account: String
    public var hashKind: ProviderHashKind { .md5 }
    /// `base_url` when configured; else built from the token answer.
    let configuredAPI: String?
    /// The configured subdomain, for a token answer without `subdomain`/`apicp`.
    let subdomain: String?
    /// `root_folder_id`: the folder our paths start from, for accounts without a home folder
    /// ("My Files & Folders": client users, who see only folders shared with them); nil = home.
    let configuredRoot: String?
    let caller: AuthorizedHTTP
    let resume: ResumeStore
    let chunkSize: Int64
    let folders = FolderResolver()
    /// Share expiry ShareFile reads as "never" (without one, a share expires after 30 days).
    static let neverExpires = "9999-12-31T23:59:59Z"

    public static func defaultAPI(subdomain: String) -> String { "https://\(subdomain).sf-api.com/sf/v3" }
    public static func defaultTokenURL(subdomain: String) -> String { "https://\(subdomain).sharefile.com/oauth/token" }

    /// ShareFile's application control planes (ShareFile-NET's `applicationControlPlane`): the
    /// only domains a token answer may move refresh requests to.
    static let controlPlanes: Set<String> = ["sharefile.com", "sharefile.eu", "securevdr.com"]

    /// The token endpoint a token answer names: `https://{subdomain}.{appcp}/oauth/token`
    /// (`acme.sharefile.eu` for a tenant in the EU), as the ShareFile SDK refreshes; nil unless
    /// `appcp` is one of ShareFile's control planes and `subdomain` one DNS label with a letter.
    /// Only refresh requests go there (`OAuthSession`): a password is sent to the configured
    /// endpoint alone.
    @Sendable public static func tokenURL(fromAnswer extra: [String: String]) -> String? {
        guard let sub = extra["subdomain"], let cp = extra["appcp"]?.lowercased(), isHostLabel(sub), sub.contains(where: \.isLetter),
              controlPlanes.contains(cp) else { return nil }
        return "https://\(sub.lowercased()).\(cp)/oauth/token"
    }

    public init(account: String, session: OAuthSession, http: HTTPClient, baseURL: String?, subdomain: String? = nil,
                rootFolderID: String? = nil, resumeDirectory: String?, chunkSize: Int64 = 32 << 20) {
        self.account = account
        configuredAPI = baseURL.map(DropboxProvider.trim)
        self.subdomain = subdomain
        configuredRoot = rootFolderID
        caller = AuthorizedHTTP(account: account, http: http, session: session)
        resume = ResumeStore(directory: resumeDirectory, account: account)
        self.chunkSize = max(1 << 20, chunkSize)
    }

    /// ShareFile refuses `\ / : * ? " < > |`, and names ending in a dot or space; 255 characters.
    public func sanitize(component: String) -> String {
        RemotePath.sanitize(component, forbidden: [":", "*", "?", "\"", "<", ">", "|"], maxBytes: 255)
    }

    /// The API root: `base_url`, else `https://{subdomain}.{apicp}/sf/v3` from the token answer
    /// (a tenant in the EU is on `sf-api.eu`), else the configured subdomain on `sf-api.com`.
    package func apiBase() async throws(ArchiveError) -> String {
        if let configuredAPI { return configuredAPI }
        _ = try await caller.session.accessToken()
        let extra = try await caller.session.current()?.extra ?? [:]
        if let sub = extra["subdomain"], let cp = extra["apicp"], Self.isHostLabel(sub), Self.isHostName(cp) {
            return "https://\(sub).\(cp)/sf/v3"
        }
        if let subdomain { return Self.defaultAPI(subdomain: subdomain) }
        throw ArchiveError(.permanent, "\(account): the token answer names no subdomain/apicp and no base_url is configured")
    }

    static func isHostLabel(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 63 && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }

    static func isHostName(_ s: String) -> Bool {
        !s.isEmpty && s.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { isHostLabel(String($0)) }
    }

    func call(_ method: String, _ url: String, json: (any Encodable)? = nil, doing what: String, retry: RetryMode = .full) async throws(ArchiveError) -> HTTPResponse {
        let body: HTTPBody = json.map { .data(WireJSON.encode($0)) } ?? .none
        return try await caller.call(what, retry: retry) { token in
            var headers: [(name: String, value: String)] = [("Authorization", "Bearer \(token)"), ("Accept", "application/json")]
            if json != nil { headers.append(("Content-Type", "application/json")) }
            return HTTPRequest(method: method, url: url, headers: headers, body: body)
        }
    }

    /// ShareFile's OData error `{"code","message":{"value"}}` for the operator.
    func failure(_ r: HTTPResponse, doing what: String) -> ArchiveError {
        var e = ArchiveError.status(r, account: account, doing: what)
        if !r.isSuccess, let j = r.decoded(ShareFileAPI.ErrorAnswer.self), let code = j.code {
            e.message = "\(account): \(what): ShareFile answered HTTP \(r.status) \(code): \(j.message ?? "")"
        }
        return e
    }

    static func query(_ s: String) -> String { FormEncoding.component(s) }

    typealias Item = ShareFileAPI.Item

    /// The home folder (`GET Items`): our root.
    func home(_ api: String) async throws(ArchiveError) -> String {
        if let root = configuredRoot {
            let what = "reading root_folder_id \(root)"
            let r = try await call("GET", "\(api)/Items(\(root))", doing: what)
            if r.status == 404 { throw ArchiveError(.notFound, "\(account): root_folder_id \(root) is not a folder this account can see") }
            guard r.isSuccess, let item = r.decoded(Item.self) else { throw failure(r, doing: what) }
            guard item.isFolder else { throw ArchiveError(.permanent, "\(account): root_folder_id \(root) is a file, not a folder") }
            return item.id
        }
        let r = try await call("GET", "\(api)/Items", doing: "reading the home folder")
        if r.status == 404 {
            throw ArchiveError(.notFound, "\(account): this ShareFile user has no home folder (\"My Files & Folders\": a client user?); "
                               + "set root_folder_id in [archives.\(account)] to the id of a folder shared with it")
        }
        guard r.isSuccess, let home = r.decoded(Item.self) else { throw failure(r, doing: "reading the home folder") }
        return home.id
    }

    /// `path` (relative, `a/b`) below folder `parent`, or nil when it is not there.
    func child(_ path: String, of parent: String, _ api: String) async throws(ArchiveError) -> Item? {
        let what = "looking up \(path)"
        let r = try await call("GET", "\(api)/Items(\(parent))/ByPath?path=\(Self.query("/" + path))", doing: what)
        if r.status == 404 { return nil }
        guard r.isSuccess, let item = r.decoded(Item.self) else { throw failure(r, doing: what) }
        return item
    }

    /// The item at `path` below the home folder, or nil.
    func byPath(_ path: String) async throws(ArchiveError) -> Item? {
        let api = try await apiBase()
        guard let home = try await folders.folderID("", create: false, in: self) else { return nil }
        return try await child(path, of: home, api)
    }

    /// The id of folder `path` below the home folder; nil when some part is missing.
    func folderID(_ path: String, create: Bool) async throws(ArchiveError) -> String? {
        try await folders.folderID(path, create: create, in: self)
    }

    // MARK: ArchiveProvider

    public func whoami() async throws(ArchiveError) -> String {
        let api = try await apiBase()
        let id = try await rootFolderID()
        return configuredRoot == nil ? "ShareFile home folder at \(Redact.url(api))" : "ShareFile folder \(id) at \(Redact.url(api))"
    }

    /// ShareFile's item ids: letters, digits and `-` (`fo…` folders, `fi…` files), 1–64 long.
    public static func isItemID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 64 && s.unicodeScalars.allSatisfy { ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || $0 == "-" }
    }

    public func makeFolders(_ path: String) async throws(ArchiveError) {
        _ = try await folderID(path, create: true)
    }

    public func stat(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        guard let item = try await byPath(path) else { return nil }
        if item.isFolder { throw ArchiveError(.conflict, "\(account): \(path) is a folder, not a file") }
        return RemoteFile(path: path, size: item.size ?? -1, hash: item.md5, id: item.id)
    }

    struct Spec: Codable { var chunkURI: String; var finishURI: String; var offset: Int64; var index: Int }

    public func upload(local: String, size: Int64, hash: String, to path: String,
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let parent = RemotePath.parent(path)
        let name = String(path.dropFirst(parent.isEmpty ? 0 : parent.count + 1))
        guard let folder = try await folderID(parent, create: false) else {
            throw ArchiveError(.notFound, "\(account): folder \(parent) does not exist")
        }
        let threaded = size > chunkSize
        let key = resume.key(path: path, hash: hash, size: size)
        var spec = threaded ? resume.load(Spec.self, key: key) : nil
        if spec == nil {
            let what = "asking to upload \(path)"
            let api = try await apiBase()
            let r = try await call("POST", "\(api)/Items(\(folder))/Upload2",
                                   json: ShareFileAPI.UploadRequest(Method: threaded ? .threaded : .standard, FileName: name, FileSize: size),
                                   // Asking twice only makes a second specification (an unused one expires).
                                   doing: what, retry: .full)
            if r.status == 409 { throw ArchiveError(.conflict, "\(account): \(path) already exists") }
            guard r.isSuccess, let j = r.decoded(ShareFileAPI.UploadSpec.self) else { throw failure(r, doing: what) }
            spec = Spec(chunkURI: j.ChunkUri, finishURI: j.FinishUri, offset: 0, index: 0)
            if threaded { try resume.save(spec!, key: key) }
        }
        guard var s = spec else { throw ArchiveError(.local, "\(account): lost upload state") }
        let http = caller.http
        if !threaded {
            // The upload URI is the capability: no Authorization header goes to it.
            let r = try await AuthorizedHTTP.send(HTTPRequest(method: "POST", url: s.chunkURI + "&fmt=json",
                                                              headers: [("Content-Type", "application/octet-stream")],
                                                              body: .file(path: local, offset: 0, length: size)),
                                                  http: http, account: account, doing: "uploading \(path)", retry: .throttleOnly,
                                                  progress: progress)
            return try finished(r, path: path, size: size)
        }
        while s.offset < size {
            let at = s.offset
            let length = min(chunkSize, size - at)
            progress?(at)
            let md5: String
            do { md5 = Hex.encode(try FileHasher.digest(path: local, algorithm: .md5, offset: at, length: length)) } catch {
                throw ArchiveError(.local, "\(account): reading \(local): \(error)")
            }
            let what = "uploading chunk \(s.index) of \(path)"
            let r = try await AuthorizedHTTP.send(HTTPRequest(method: "POST", url: s.chunkURI + "&index=\(s.index)&byteOffset=\(at)&hash=\(md5)&fmt=json",
                                                              headers: [("Content-Type", "application/octet-stream")],
                                                              body: .file(path: local, offset: at, length: length)),
                                                  http: http, account: account, doing: what, retry: .full,
                                                  progress: shifted(progress, by: at))
            if r.status == 404 || r.status == 410 {
                resume.remove(key: key)
                throw ArchiveError(.transient, "\(account): the upload of \(path) expired on ShareFile's side; starting again")
            }
            guard r.isSuccess else { throw failure(r, doing: what) }
            if let said = Self.errorText(r) {
                throw ArchiveError(.transient, "\(account): \(what): ShareFile answered HTTP 200 with \(said); will send it again")
            }
            if let j = r.decoded(ShareFileAPI.UploadAnswer.self), j.error == true {
                // A chunk that arrived but whose acknowledgement we never saved (killed in
                // between): ShareFile names the offset it expects; go on from there.
                if let expected = j.expectedOffset, expected % chunkSize == 0, expected <= size, expected != at {
                    s.offset = expected
                    s.index = Int(expected / chunkSize)
                    try resume.save(s, key: key)
                    continue
                }
                if Self.uploadIDExpired(j) {
                    // Asking again with the same id would get the same answer for ever: the
                    // next attempt asks for a new upload and sends the file from its start.
                    resume.remove(key: key)
                    throw ArchiveError(.transient, "\(account): \(what): ShareFile no longer knows the upload (error \(j.errorCode?.value ?? "?"): "
                                       + "\(j.errorMessage ?? "")); starting it again")
                }
                throw ArchiveError(.transient, "\(account): \(what): ShareFile answered error \(j.errorCode?.value ?? "?"): \(j.errorMessage ?? "")")
            }
            s.offset = at + length
            s.index += 1
            try resume.save(s, key: key)
        }
        // As the ShareFile SDK finishes a threaded upload: GET, `respformat=json`, the file's MD5.
        let r = try await AuthorizedHTTP.send(HTTPRequest(method: "GET", url: s.finishURI + "&respformat=json&filehash=\(hash)",
                                                          headers: [("Accept", "application/json")]),
                                              http: http, account: account, doing: "finishing \(path)", retry: .throttleOnly)
        resume.remove(key: key)
        return try finished(r, path: path, size: size)
    }

    /// An answer saying the upload id is unknown: ShareFile's code 605 ("Unrecognized Upload
    /// ID", once an upload has expired), or 404/410 given as the code of a 200.
    static func uploadIDExpired(_ j: ShareFileAPI.UploadAnswer) -> Bool {
        if let code = j.errorCode?.value, ["605", "404", "410"].contains(code) { return true }
        return (j.errorMessage ?? "").lowercased().contains("unrecognized upload id")
    }

    /// The upload server's failure in a 200: a body `ERROR:…` (the SDK's documented form), as
    /// text for the message; nil for any other body.
    static func errorText(_ r: HTTPResponse) -> String? {
        let text = r.excerpt.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.uppercased().hasPrefix("ERROR:") else { return nil }
        return "\"" + String(text.prefix(200)).map { $0.isASCII && $0.asciiValue! < 0x20 ? " " : $0 }.map(String.init).joined() + "\""
    }

    /// The `{"error":false,"value":[…]}` of a finished upload; `"error":true` (in a 200) is a failure.
    func finished(_ r: HTTPResponse, path: String, size: Int64) throws(ArchiveError) -> RemoteFile {
        guard r.isSuccess else { throw failure(r, doing: "uploading \(path)") }
        if let said = Self.errorText(r) {
            throw ArchiveError(.transient, "\(account): uploading \(path): ShareFile answered HTTP 200 with \(said); will try again")
        }
        guard let j = r.decoded(ShareFileAPI.UploadAnswer.self) else {
            throw ArchiveError(.transient, "\(account): uploading \(path): ShareFile's answer is not JSON; will check and retry")
        }
        if j.error == true {
            let message = j.errorMessage ?? ""
            let corrupted = message.lowercased().contains("hash") || message.lowercased().contains("md5")
            throw ArchiveError(.transient, "\(account): uploading \(path): ShareFile answered HTTP 200 with error \(j.errorCode?.value ?? "?"): \(message)"
                               + (corrupted ? " (corrupted in transit; will upload again)" : ""))
        }
        let v = j.value?.elements.first
        // No size in the answer is no size (-1), not ours: the caller's check must not pass by default.
        return RemoteFile(path: path, size: v?.size?.value ?? -1, hash: ShareFileAPI.md5(v?.md5), id: v?.id)
    }

    public func download(_ path: String, to local: String) async throws(ArchiveError) {
        guard let item = try await byPath(path) else { throw ArchiveError(.notFound, "\(account): \(path) is not there") }
        let api = try await apiBase()
        let r = try await call("GET", "\(api)/Items(\(item.id))/Download", doing: "reading back \(path)")
        try await followDownload(r, http: caller.http, account: account, path: path, to: local)
    }

    public func share(_ path: String, _ request: ShareRequest) async throws(ArchiveError) -> ShareLink {
        guard let item = try await byPath(path) else { throw ArchiveError(.notFound, "\(account): \(path) is not there to share") }
        let api = try await apiBase()
        let what = "sharing \(path)"
        // No password on Send links: a password asked for means "sign in".
        let requireLogin = request.access != .open || request.password != nil
        // Reuse a live Send share of this item that is at least as strict as asked. ShareFile has
        // no lookup of shares by item (the SDK's SharesEntity and ItemsEntity offer none, and no
        // $filter on Items): the list is read, but without the expired shares, which the server
        // leaves out when asked (`includeExpired=false`, the SDK's `Shares.Get(includeExpired)`).
        var next: String? = "\(api)/Shares?includeExpired=false&$expand=Items"
        var pages = 0
        while let url = next, pages < 50 {
            pages += 1
            let list = try await call("GET", url, doing: what)
            guard list.isSuccess, let j = list.decoded(ShareFileAPI.Feed<ShareFileAPI.Share>.self) else { break }
            for s in j.value.elements where s.ShareType == .send {
                let items = s.Items?.elements ?? []
                guard items.contains(where: { $0.Id == item.id }), let uri = s.Uri else { continue }
                let expires = s.ExpirationDate.flatMap(Self.parseDate)
                if let expires, expires <= Date() { continue }                         // expired: dead link
                if requireLogin && s.RequireLogin != true { continue }                 // more open than asked
                if let wanted = request.expires, expires.map({ $0 > wanted }) ?? true { continue }  // lives longer than asked
                return ShareLink(url: uri, expires: expires.flatMap { $0 < Self.never ? $0 : nil }, passwordProtected: false,
                                 fallback: Self.notes(request), audience: s.RequireLogin == true ? "RequireLogin" : "anyone")
            }
            next = j.nextLink.flatMap { Self.sameOrigin($0, as: api) }
        }
        let body = ShareFileAPI.ShareCreate(Title: String(path.split(separator: "/").last ?? ""), Items: [.init(Id: item.id)],
                                            RequireLogin: requireLogin,
                                            // Without one, ShareFile expires a share after 30 days.
                                            ExpirationDate: request.expires.map(DropboxProvider.iso) ?? Self.neverExpires)
        let r = try await call("POST", "\(api)/Shares?notify=false", json: body, doing: what, retry: .throttleOnly)
        guard r.isSuccess, let j = r.decoded(ShareFileAPI.Share.self), let uri = j.Uri else { throw failure(r, doing: what) }
        let expires = j.ExpirationDate.flatMap(Self.parseDate) ?? request.expires
        return ShareLink(url: uri, expires: expires.flatMap { $0 < Self.never ? $0 : nil }, passwordProtected: false,
                         fallback: Self.notes(request), audience: requireLogin ? "RequireLogin" : "anyone")
    }

    /// What became of settings a Send link cannot carry as asked (always stricter, never more open).
    static func notes(_ request: ShareRequest) -> String? {
        var notes: [String] = []
        if request.password != nil { notes.append("ShareFile Send links take no password; RequireLogin was set instead") }
        if request.access == .collaborators { notes.append("access \"collaborators\" became RequireLogin (recipients must sign in)") }
        return notes.isEmpty ? nil : notes.joined(separator: "; ")
    }

    /// Dates from year 9000 on are ShareFile's "never".
    static let never = Date(timeIntervalSince1970: 221_845_392_000)

    /// ShareFile's dates: ISO 8601 with up to seven fractional digits.
    static func parseDate(_ s: String) -> Date? {
        if let d = parseISO(s) { return d }
        // Trim the fraction to milliseconds, which Foundation reads.
        guard let dot = s.firstIndex(of: "."), let zone = s[dot...].firstIndex(where: { $0 == "Z" || $0 == "+" || $0 == "-" }) else { return nil }
        let fraction = s[s.index(after: dot)..<zone].prefix(3)
        return parseISO(String(s[..<dot]) + "." + fraction + String(s[zone...]))
    }

    /// `link` when it points at `api`'s origin (a next page must not take our token elsewhere).
    static func sameOrigin(_ link: String, as api: String) -> String? {
        guard let l = URL(string: link), let a = URL(string: api), l.scheme == a.scheme, l.host == a.host, l.port == a.port else { return nil }
        return link
    }

    public func delete(_ path: String) async throws(ArchiveError) {
        guard let item = try await byPath(path) else { return }
        let api = try await apiBase()
        let r = try await call("DELETE", "\(api)/Items(\(item.id))", doing: "deleting \(path)")
        guard r.isSuccess || r.status == 404 else { throw failure(r, doing: "deleting \(path)") }
    }
}

extension ShareFileProvider: FolderTree {
    /// The home folder (`GET Items`).
    func rootFolderID() async throws(ArchiveError) -> String { try await home(try await apiBase()) }

    func folderChild(named name: String, in parent: String) async throws(ArchiveError) -> FolderChild? {
        try await child(name, of: parent, try await apiBase()).map { FolderChild(id: $0.id, isFolder: $0.isFolder) }
    }

    /// `POST Items(parent)/Folder?overwrite=false`; a 409 names no holder, so the resolver looks again.
    func createFolder(named name: String, in parent: String) async throws(ArchiveError) -> FolderCreation {
        let api = try await apiBase()
        let what = "creating folder \(name) in folder \(parent)"
        let r = try await call("POST", "\(api)/Items(\(parent))/Folder?overwrite=false", json: ShareFileAPI.FolderCreate(Name: name), doing: what)
        if r.isSuccess, let made = r.decoded(Item.self) { return .created(id: made.id) }
        if r.status == 409 { return .exists(id: nil) }
        throw failure(r, doing: what)
    }
}
