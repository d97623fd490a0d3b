import EvidenceCore
import EvidenceHTTP
import Foundation
import EvidenceStore
import Glibc

/// ownCloud (and any WebDAV server) with an app password: WebDAV for files, OCS for links.
///
/// Files live below `{url}/remote.php/dav/files/{user}/`, or `base_url` when set (a plain WebDAV
/// server, a private deployment). Uploads send `OC-Checksum: SHA1:<hex>` so ownCloud checks the
/// bytes itself, and nothing is replaced: a PUT carries `If-None-Match: *` (judged against its
/// own URL, the destination), a chunk assembly `Overwrite: F` (a `MOVE` is judged against its
/// source, so `If-None-Match: *` there would always fail). `stat` reports the SHA-1 from
/// `oc:checksums` only where status.php says ownCloud, which computes it from the bytes;
/// Nextcloud echoes the checksum the client sent, so there (and on any other server) uploads
/// are verified by reading them back, unless the account says (`etag = "sha1"`) that the server's
/// ETag is the SHA-1 of the bytes it stored, as `rclone serve webdav --etag-hash SHA1` makes it:
/// then the PUT's own answer proves the copy, and a stat proves one already there.
public struct OwnCloudProvider: ArchiveProvider {
    public let account: String
    public var hashKind: ProviderHashKind { .sha1 }
    let davRoot: String
    let serverURL: String
    let authorization: String
    let http: HTTPClient
    /// `{url}/remote.php/dav/uploads/{user}/` for chunked uploads; nil on a plain WebDAV server.
    let uploadsRoot: String?
    let chunkSize: Int64
    /// The first wait after a chunk assembly answered 423 Locked (doubled each time, as rclone does).
    let lockedPause: Double
    /// `etag = "sha1"`: the server (not ownCloud, not Nextcloud) computes its ETags as the SHA-1
    /// of the stored bytes. Trusted because the configuration says so, never because a tag looks like one.
    let etagIsSHA1: Bool
    /// Shared by every copy of this provider (the workers): the server's product, the folders made.
    let server = OwnCloudServerState()

    public init(account: String, url: String, user: String, password: String, baseURL: String?, http: HTTPClient,
                chunkSize: Int64 = 32 << 20, lockedPause: Double = 5, etagIsSHA1: Bool = false) {
        self.account = account
        self.etagIsSHA1 = etagIsSHA1
        self.chunkSize = max(1 << 20, chunkSize)
        self.lockedPause = max(0.01, lockedPause)
        let server = url.hasSuffix("/") ? String(url.dropLast()) : url
        serverURL = server
        let root = baseURL ?? "\(server)/remote.php/dav/files/\(Self.encode(user))/"
        davRoot = root.hasSuffix("/") ? root : root + "/"
        uploadsRoot = baseURL == nil ? "\(server)/remote.php/dav/uploads/\(Self.encode(user))/" : nil
        authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        self.http = http
    }

    /// A PUT carries `If-None-Match: *` (refused with 412 by ownCloud and Nextcloud), and on a
    /// server of unknown make `upload` looks at the path itself first.
    public var uploadRefusesExisting: Bool { true }
    public var digestDeclaredByConfig: Bool { etagIsSHA1 }

    /// ownCloud checks `OC-Checksum`; a plain WebDAV server (`base_url`) ignores it.
    public var checksHashOnUpload: Bool { uploadsRoot != nil }

    /// Only ownCloud computes the SHA-1 it reports (status.php says which server this is), and a
    /// server whose ETags the account declares SHA-1s; when that cannot be asked now, true: the
    /// caller then asks `stat`, which is never wrong.
    public func statReportsHash() async -> Bool {
        guard let product = try? await product() else { return true }
        return product.computesChecksums || etagIsSHA1
    }

    /// The server's own SHA-1 of a stored file: `oc:checksums` on ownCloud, the ETag where the
    /// account declares it (`etag = "sha1"`); nil where it has none (Nextcloud, a plain server).
    /// A declared ETag that is not a SHA-1, or one declared for ownCloud or Nextcloud (whose ETags
    /// are change markers, not digests), is the configuration's error: permanent, named.
    func serverSHA1(checksums: OwnCloudAPI.Entry?, etag: String?, at path: String) async throws(ArchiveError) -> String? {
        let product = try await product()
        if product.computesChecksums, !etagIsSHA1 { return checksums?.checksum("SHA1") }
        guard etagIsSHA1 else { return nil }
        if let wrong = etagMisdeclared(for: product) { throw wrong }
        guard let sha1 = OwnCloudAPI.sha1(etag: etag) else {
            throw ArchiveError(.permanent, "\(account): \(path): the server's ETag is not a SHA-1 (40 hex digits), though etag = \"sha1\" "
                               + "says it is: start the server with --etag-hash SHA1 (rclone serve webdav), or remove etag from the account")
        }
        return sha1
    }

    /// `etag = "sha1"` on ownCloud or Nextcloud, whose ETags are change markers, not digests:
    /// the configuration's error, permanent and named; nil on any other server or without it.
    func etagMisdeclared(for product: OwnCloudProduct) -> ArchiveError? {
        guard etagIsSHA1, product.honoursPreconditions else { return nil }
        return ArchiveError(.permanent, "\(account): etag = \"sha1\" is for a plain WebDAV server whose ETag is the SHA-1 of the bytes "
                            + "(rclone serve webdav --etag-hash SHA1); this is \(product.description), whose ETags are not digests: remove it")
    }

    /// ownCloud refuses `\ / : ? * " > < |` on Windows-backed storage; keep names portable.
    public func sanitize(component: String) -> String {
        RemotePath.sanitize(component, forbidden: [":", "?", "*", "\"", "<", ">", "|"], maxBytes: 250)
    }

    static func encode(_ component: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#[]@!$&'()*+,=")
        return component.addingPercentEncoding(withAllowedCharacters: allowed) ?? component
    }

    func url(_ path: String, folder: Bool = false) -> String {
        davRoot + path.split(separator: "/").map { Self.encode(String($0)) }.joined(separator: "/") + (folder ? "/" : "")
    }

    func request(_ method: String, _ url: String, headers: [(name: String, value: String)] = [],
                 body: HTTPBody = .none, downloadTo: String? = nil) -> HTTPRequest {
        HTTPRequest(method: method, url: url, headers: [("Authorization", authorization)] + headers, body: body, downloadTo: downloadTo)
    }

    /// Sends with the shared retry loop; any answer comes back for the caller to judge. 423
    /// Locked is temporary (another request holds the path: a concurrent MKCOL, a file being
    /// written), so it is retried with back-off like 429 and 5xx.
    func call(_ r: HTTPRequest, doing what: String, retry: Bool = true) async throws(ArchiveError) -> HTTPResponse {
        do {
            return retry ? try await http.execute(r, classify: { resp in
                (resp.status == 423 || resp.status == 429 || resp.status >= 500) ? .retryable(retryAfter: nil) : .success
            }) : try await http.send(r)
        } catch {
            if case .status = error.kind, let resp = error.response { return resp }
            throw ArchiveError.transport(error, account: account, doing: what)
        }
    }

    /// A `PROPFIND` of `target` alone (Depth 0) for size, type, checksums and file id.
    func propfind(_ target: String) -> HTTPRequest {
        request("PROPFIND", target, headers: [("Depth", "0"), ("Content-Type", "application/xml; charset=utf-8")],
                body: .data(Data(OwnCloudAPI.propfindBody.utf8)))
    }

    /// Deletes a chunked upload's transfer folder (`transfer`, a URL we built) with every chunk in it.
    func discard(_ transfer: String, of path: String) async throws(ArchiveError) {
        let gone = try await call(request("DELETE", transfer), doing: "discarding the chunks of \(path)")
        guard gone.isSuccess || gone.status == 404 else { throw ArchiveError.status(gone, account: account, doing: "discarding the chunks of \(path)") }
    }

    /// ASCII digits only, at least one: the only names (chunk offsets, share ids) taken from a
    /// server's answer into a URL.
    static func isDigits(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    public func whoami() async throws(ArchiveError) -> String {
        let r = try await call(propfind(davRoot), doing: "reading the root folder")
        guard r.status == 207 else { throw ArchiveError.status(r, account: account, doing: "reading the root folder \(Redact.url(davRoot))") }
        let product = try await product()
        return "WebDAV folder \(Redact.url(davRoot)) (\(product.description))"
    }

    /// The server behind `url`, from `status.php` (asked once; no credentials needed or sent).
    /// An answer that is not status.php (a plain WebDAV server) is remembered as `.other`; a
    /// failure to get any answer is thrown and asked again next time.
    func product() async throws(ArchiveError) -> OwnCloudProduct {
        if let known = await server.knownProduct() { return known }
        let status = serverURL + "/status.php"
        let r: HTTPResponse
        do {
            r = try await http.execute(HTTPRequest(method: "GET", url: status), classify: { resp in
                (resp.status == 429 || resp.status >= 500) ? .retryable(retryAfter: nil) : .success
            })
        } catch {
            if case .status = error.kind, let resp = error.response { r = resp } else {
                throw ArchiveError.transport(error, account: account, doing: "asking \(Redact.url(status)) which server it is")
            }
        }
        if r.status >= 500 || r.status == 429 { throw ArchiveError.status(r, account: account, doing: "asking \(Redact.url(status)) which server it is") }
        let product = r.isSuccess ? OwnCloudProduct.parse(status: r.body) : .other(name: "a WebDAV server without status.php")
        await server.remember(product)
        return product
    }

    /// Each missing folder level is created once per process: concurrent calls for the same
    /// path share one `MKCOL` per level, and a level made before is not asked for again.
    public func makeFolders(_ path: String) async throws(ArchiveError) {
        do throws(ArchiveError) {
            try await makeFoldersOnce(path)
        } catch where error.kind == .conflict {
            // 409: a parent is missing, though we made it (deleted since): forget, start over once.
            await server.forgetFolders()
            try await makeFoldersOnce(path)
        }
    }

    private func makeFoldersOnce(_ path: String) async throws(ArchiveError) {
        var current = ""
        for part in path.split(separator: "/") {
            current += (current.isEmpty ? "" : "/") + part
            let level = current
            let result = await server.ensureFolder(level) { () async -> Result<Void, ArchiveError> in
                do throws(ArchiveError) {
                    let r = try await call(request("MKCOL", url(level, folder: true)), doing: "creating folder \(level)")
                    switch r.status {
                    case 201: return .success(())
                    case 405:
                        // Something exists there (ownCloud, Sabre and Apache say so with 405): a
                        // folder, or a file in the way, under which every PUT would meet 409.
                        let look = try await call(propfind(url(level)), doing: "looking at \(level)")
                        // Apache answers a folder asked without its slash with a redirect to it.
                        if (300..<400).contains(look.status) || look.status == 404 { return .success(()) }
                        guard look.status == 207, let e = OwnCloudAPI.parsePropfind(look.body) else {
                            return .failure(ArchiveError.status(look, account: account, doing: "looking at \(level)"))
                        }
                        if e.isCollection { return .success(()) }
                        return .failure(ArchiveError(.permanent, "\(account): creating folder \(level): a file of that name is in the way; "
                                                     + "move or rename it on the server (nothing was replaced)"))
                    default: return .failure(ArchiveError.status(r, account: account, doing: "creating folder \(level)"))
                    }
                } catch {
                    return .failure(error)
                }
            }
            try result.get()
        }
    }

    public func stat(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        let found = try await look(path)
        if found == nil { await server.noteAbsent(path) }
        return found
    }

    /// `stat` without noting an empty path for `upload` (its own look and the assembly's).
    func look(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        let r = try await call(propfind(url(path)), doing: "stat \(path)")
        if r.status == 404 { return nil }
        guard r.status == 207 else { throw ArchiveError.status(r, account: account, doing: "stat \(path)") }
        guard let e = OwnCloudAPI.parsePropfind(r.body) else {
            throw ArchiveError(.permanent, "\(account): stat \(path): the PROPFIND answer is not a WebDAV multistatus")
        }
        if e.isCollection { throw ArchiveError(.conflict, "\(account): \(path) is a folder, not a file") }
        // A checksum proves the bytes only where the server computed it (ownCloud), not where it
        // echoes what a client sent (Nextcloud): without one the caller reads the file back.
        let hash = try await serverSHA1(checksums: e, etag: e.etag, at: path)
        return RemoteFile(path: path, size: e.size ?? -1, hash: hash, id: e.fileID)
    }

    /// Below this size a PUT to ownCloud or Nextcloud goes without a look first (its
    /// `If-None-Match: *` refuses to replace); from it, a look saves sending a file already there.
    static let lookFirstFrom: Int64 = 1 << 20

    public func upload(local: String, size: Int64, hash: String, to path: String,
                       progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        // Some WebDAV servers (rclone's among them) ignore If-None-Match and would replace
        // the file: look first, so an existing file is a conflict everywhere. On ownCloud and
        // Nextcloud, which refuse a PUT with If-None-Match: * (412) and an assembly with
        // Overwrite: F onto an existing file, the look is skipped when this process found the
        // path empty a moment ago (the caller's own look, as `accounts put` and the archive of a
        // large file do), and for a small file sent in one PUT (the 412 costs less than a look).
        let recentlyEmpty = await server.takeAbsent(path)
        let known = try? await product()
        let honours = known?.honoursPreconditions ?? false
        // etag = "sha1" on ownCloud or Nextcloud is refused before anything is sent.
        if let known, let wrong = etagMisdeclared(for: known) { throw wrong }
        let guarded = honours && (recentlyEmpty || size < Self.lookFirstFrom)
        if !guarded, try await look(path) != nil {
            throw ArchiveError(.conflict, "\(account): \(path) already exists")
        }
        let seconds = fileMTime(local) ?? Int(Date().timeIntervalSince1970)
        if let uploadsRoot, size > chunkSize, await server.hasChunking,
           let done = try await chunked(local: local, size: size, sha1: hash, to: path, mtime: seconds, uploads: uploadsRoot, progress: progress) {
            return done
        }
        var headers: [(name: String, value: String)] = [("Content-Type", "application/octet-stream")]
        if !hash.isEmpty { headers.append(("OC-Checksum", "SHA1:\(hash)")) }
        headers += [("X-OC-Mtime", String(seconds)), ("If-None-Match", "*")]
        let req = request("PUT", url(path), headers: headers, body: .file(path: local, offset: 0, length: size))
        // One attempt: a retried PUT after a lost answer would meet its own first copy; the
        // caller stats and compares content instead.
        let r: HTTPResponse
        var report: (@Sendable (Int64, Int64) -> Void)?
        if let progress { report = { sent, _ in progress(sent) } }
        do throws(HTTPError) {
            r = try await http.send(req, progress: report)
        } catch {
            throw ArchiveError.transport(error, account: account, doing: "uploading \(path)")
        }
        switch r.status {
        case 200, 201, 204:
            // Where the account declares the ETag a SHA-1, the PUT's answer is the server's own
            // digest of what it stored: no stat, no read-back needed. An answer without an ETag
            // (some servers send one only to PROPFIND) leaves it to the caller's stat.
            let etag = etagIsSHA1 ? r.header("etag") : nil
            let sha1 = etag == nil ? nil : try await serverSHA1(checksums: nil, etag: etag, at: path)
            return RemoteFile(path: path, size: size, hash: sha1, id: r.header("oc-fileid"))
        case 412:
            throw ArchiveError(.conflict, "\(account): \(path) already exists")
        case 409:
            throw await folderGone(path)
        case 400 where String(decoding: r.body.prefix(2000), as: UTF8.self).contains("hecksum"):
            throw ArchiveError(.transient, "\(account): uploading \(path): the server's checksum of what arrived differs from ours (corrupted in transit); will upload again")
        default:
            throw ArchiveError.status(r, account: account, doing: "uploading \(path)")
        }
    }

    /// ownCloud's chunked upload: chunks PUT into `uploads/{user}/{transfer}/` (named by their
    /// zero-padded offset), then `MOVE .file` assembles them at the destination, checking
    /// `OC-Total-Length` and `OC-Checksum`. The transfer id is derived from the destination and
    /// the content, and the server's chunk listing says what already arrived: a restarted
    /// upload resumes with no local state at all.
    ///
    /// nil when the server has no chunked-upload endpoint (the caller PUTs the whole file):
    /// ownCloud Infinite Scale answers the upload folder's MKCOL with 404 (it has TUS instead),
    /// a plain WebDAV server under `url` with 409 (no parent folder) or 501. Remembered for
    /// every later upload of the process.
    func chunked(local: String, size: Int64, sha1: String, to path: String, mtime: Int, uploads: String,
                 progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile? {
        let transfer = uploads + "evidence-" + String(SHA256Hasher.hash(Data("\(path)\n\(sha1)\n\(size)".utf8)).hex.prefix(32))
        let made = try await call(request("MKCOL", transfer), doing: "starting the chunked upload of \(path)")
        // Not on ownCloud 10 or Nextcloud, which always have it: there such an answer is a
        // misrouted request (a proxy), an error, not a server without chunking.
        if made.status == 404 || made.status == 409 || made.status == 501, try await !product().hasUploadsEndpoint {
            await server.rememberNoChunking()
            return nil
        }
        guard made.status == 201 || made.status == 405 else { throw ArchiveError.status(made, account: account, doing: "starting the chunked upload of \(path)") }
        var have: [Int64: Int64] = [:]
        if made.status == 405 {
            // Resuming: keep the chunks that are ours as this attempt cuts the file; delete any
            // other (left at another offset when chunk_size changed between attempts, or by an
            // older client), as the desktop clients do, or the assembly would not sum up.
            // Only names of ours (digits: a zero-padded offset) are touched one by one; anything
            // else listed, which a hostile server could name `..%2F..`, is never put in a URL:
            // then the whole transfer folder, whose URL we built, is discarded and made again.
            let listing = try await call(request("PROPFIND", transfer + "/", headers: [("Depth", "1")]), doing: "listing chunks of \(path)")
            let own = (transfer as NSString).lastPathComponent
            var foreign = false
            for entry in (listing.status == 207 ? OwnCloudAPI.parseListing(listing.body) : nil) ?? [] {
                guard !entry.name.isEmpty, entry.name != own, entry.name != ".file" else { continue }
                guard entry.name.count <= 20, Self.isDigits(entry.name), let offset = Int64(entry.name) else {
                    foreign = true
                    continue
                }
                if offset < size, offset % chunkSize == 0, entry.size == min(chunkSize, size - offset) {
                    have[offset] = entry.size
                    continue
                }
                let stale = try await call(request("DELETE", "\(transfer)/\(entry.name)"), doing: "deleting a stale chunk of \(path)")
                guard stale.isSuccess || stale.status == 404 else {
                    throw ArchiveError.status(stale, account: account, doing: "deleting a stale chunk of \(path)")
                }
            }
            if foreign {
                have = [:]
                try await discard(transfer, of: path)
                let again = try await call(request("MKCOL", transfer), doing: "starting the chunked upload of \(path)")
                guard again.status == 201 else { throw ArchiveError.status(again, account: account, doing: "starting the chunked upload of \(path)") }
            }
        }
        var offset: Int64 = 0
        while offset < size {
            let length = min(chunkSize, size - offset)
            if have[offset] != length {
                let at = offset
                progress?(at)
                let name = String(repeating: "0", count: max(0, 20 - String(at).count)) + String(at)
                // A chunk PUT is idempotent (same name, same bytes): the retry loop may resend it.
                let r = try await call(request("PUT", "\(transfer)/\(name)", headers: [("Content-Type", "application/octet-stream")],
                                               body: .file(path: local, offset: at, length: length)), doing: "uploading chunk \(at) of \(path)")
                guard r.isSuccess else { throw ArchiveError.status(r, account: account, doing: "uploading chunk \(at) of \(path)") }
            }
            offset += length
        }
        progress?(size)
        // Overwrite: F, not If-None-Match: *: Sabre judges If-None-Match and If-Match against the
        // request URI, here the upload's `.file`, which always exists (412 every time), and
        // Overwrite against the destination (412 only when a file is already there).
        var move = request("MOVE", transfer + "/.file", headers: [
            ("Destination", url(path)), ("OC-Total-Length", String(size)), ("OC-Checksum", "SHA1:\(sha1)"),
            ("X-OC-Mtime", String(mtime)), ("Overwrite", "F"),
        ])
        // The server answers only once the file is assembled, silent meanwhile: no stall limit,
        // a total of 3 minutes per GB (the desktop clients' rule), at least the configured total
        // and at most 30 minutes.
        // One deadline for the assembly, however many times a lock is waited out.
        let deadline = ContinuousClock.now + .seconds(Self.assemblyTimeout(size: size, total: http.configuration.totalTimeout))
        var r: HTTPResponse
        var locked = false
        var pause = lockedPause
        var waited = 0.0
        while true {
            move.silentFor = max(1, Double((deadline - ContinuousClock.now).components.seconds))
            do throws(HTTPError) { r = try await http.send(move) } catch {
                throw ArchiveError.transport(error, account: account, doing: "assembling \(path)")
            }
            // 423: an earlier assembly of these chunks (a MOVE of ours given up on while the
            // server worked) still holds the lock. Waited out as rclone does: 5 s, doubled.
            guard r.status == 423 else { break }
            locked = true
            guard pause <= lockedPause * 16, ContinuousClock.now + .seconds(pause) < deadline else {
                throw ArchiveError(.transient, "\(account): assembling \(path): still locked (423) after waiting \(Int(waited)) s; will look again")
            }
            do { try await Task.sleep(for: .seconds(pause)) } catch {
                throw ArchiveError(.transient, "\(account): assembling \(path): cancelled while waiting out a lock")
            }
            waited += pause
            pause *= 2
        }
        switch r.status {
        case 200, 201, 204: return RemoteFile(path: path, size: size, hash: nil, id: r.header("oc-fileid"))
        case 404:
            // The upload folder is gone: after a 423, the assembly waited on has finished and
            // removed it (rclone takes this 404 as success); without one, an earlier MOVE of ours
            // whose answer was lost may have. Ours at once only by the server's own SHA-1
            // (ownCloud). Without one (Nextcloud), a transient failure: the next attempt looks
            // first, reads the file back and adopts it when it is ours, or else goes to the
            // alternate name; a file taken as ours here would be deleted by the caller when its
            // read-back differs, and it may be someone else's.
            if let there = try await look(path), there.size == size {
                if let h = there.hash, h == sha1 { return there }
                if there.hash == nil {
                    throw ArchiveError(.transient, "\(account): assembling \(path): the upload folder is gone\(locked ? " after the lock" : "") "
                                       + "and a file of our size is there (our assembly, finished?); it will be read back and compared")
                }
            }
            throw ArchiveError(.transient, "\(account): assembling \(path): the upload folder is gone\(locked ? " after the lock" : "") "
                               + "and \(path) does not hold our file; uploading again")
        case 412:
            // Something is at the destination now (it was not when we looked): ours if the
            // server's own digest says so (an earlier assembly whose answer was lost), else a conflict.
            try? await discard(transfer, of: path)
            if let there = try await look(path), there.size == size {
                if let h = there.hash { if h == sha1 { return there } } else {
                    // A server that computes no digest (Nextcloud, plain WebDAV) cannot say here
                    // whether this is our earlier assembly, finished late: the next attempt reads it
                    // back and adopts it when it is ours (never deleting it when it is not),
                    // instead of storing a second copy now under the alternate name.
                    throw ArchiveError(.transient, "\(account): assembling \(path): a file of our size appeared there meanwhile "
                                       + "(our earlier assembly, finished late?); it will be read back and compared")
                }
            }
            throw ArchiveError(.conflict, "\(account): \(path) already exists")
        case 409: throw await folderGone(path)
        case 400 where String(decoding: r.body.prefix(2000), as: UTF8.self).contains("hecksum"):
            try? await discard(transfer, of: path)
            throw ArchiveError(.transient, "\(account): assembling \(path): the server's checksum of the chunks differs from ours (corrupted in transit); will upload again")
        case 400 where String(decoding: r.body.prefix(2000), as: UTF8.self).contains("do not sum up"):
            // Chunks we did not account for (another client's, or lost track of): start the
            // transfer again from an empty folder rather than fail for good.
            try? await discard(transfer, of: path)
            throw ArchiveError(.transient, "\(account): assembling \(path): the chunks on the server do not sum up to the file; "
                               + "starting the chunked upload again")
        default: throw ArchiveError.status(r, account: account, doing: "assembling \(path)")
        }
    }

    public func download(_ path: String, to local: String) async throws(ArchiveError) {
        let r = try await call(request("GET", url(path), downloadTo: local), doing: "reading back \(path)")
        guard r.isSuccess else { throw ArchiveError.status(r, account: account, doing: "reading back \(path)") }
    }

    /// Hashed as it arrives (`digestBody`): no temporary file per read-back.
    public func readBackDigest(_ path: String) async throws(ArchiveError) -> (sha256: SHA256Digest, size: Int64)? {
        var r = request("GET", url(path))
        r.digestBody = true
        let answer = try await call(r, doing: "reading back \(path)")
        guard answer.isSuccess, let digest = answer.bodyDigest else { throw ArchiveError.status(answer, account: account, doing: "reading back \(path)") }
        return (digest.sha256, digest.length)
    }

    /// A public link (share type 3) with the password and expiry asked. A public link opens for
    /// anyone holding it, so access `company` or `collaborators` cannot be honoured: the share
    /// fails, saying so, rather than make a more open link. An existing public link is reused only
    /// when it is at least as strict as asked (a password if one is asked, an expiry no later).
    public func share(_ path: String, _ request: ShareRequest) async throws(ArchiveError) -> ShareLink {
        guard request.access == .open else {
            throw ArchiveError(.permanent, "\(account): sharing \(path): access \"\(request.access.rawValue)\" asks for a link not "
                               + "everyone can open, and ownCloud public links open for anyone holding them; no link was made "
                               + "rather than a more open one (set the rule's [share] access = \"open\", with a password)")
        }
        let api = "\(serverURL)/ocs/v1.php/apps/files_sharing/api/v1/shares"
        let ocsHeaders: [(name: String, value: String)] = [("OCS-APIRequest", "true"), ("Accept", "application/json")]
        let remote = "/" + path
        // Reuse an existing public link (share type 3) on this path, if it is strict enough.
        let query = "?format=json&path=" + (remote.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? remote)
        let existing = try await call(self.request("GET", api + query, headers: ocsHeaders), doing: "listing shares of \(path)")
        if existing.status == 404 && OwnCloudAPI.parseOCS(existing.body) == nil {
            throw ArchiveError(.unsupported, "\(account): the server has no OCS share API (HTTP 404 at \(Redact.url(api))): links need ownCloud/Nextcloud")
        }
        if let reply = OwnCloudAPI.parseOCS(existing.body), reply.statusCode == 100,
           let list = reply.data(as: LossyList<OwnCloudAPI.Share>.self)?.elements,
           let link = list.first(where: { $0.isPublicLink && $0.satisfies(request) }), let url = link.url {
            return ShareLink(url: url, expires: link.expires, passwordProtected: link.hasPassword)
        }
        var form = ["path=\(Self.form(remote))", "shareType=3", "permissions=1"]
        if let p = request.password { form.append("password=\(Self.form(p))") }
        if let e = request.expires { form.append("expireDate=\(Self.day(e))") }
        let r = try await call(self.request("POST", api + "?format=json", headers: ocsHeaders + [("Content-Type", "application/x-www-form-urlencoded")],
                                            body: .data(Data(form.joined(separator: "&").utf8))), doing: "sharing \(path)")
        guard r.isSuccess else { throw ArchiveError.status(r, account: account, doing: "sharing \(path)") }
        guard let reply = OwnCloudAPI.parseOCS(r.body) else {
            throw ArchiveError(.permanent, "\(account): sharing \(path): the answer is not an OCS reply")
        }
        guard reply.statusCode == 100, let made = reply.data(as: OwnCloudAPI.Share.self), let url = made.url else {
            // v1 says HTTP 200 and puts the failure in ocs.meta.
            throw ArchiveError(reply.statusCode == 996 ? .transient : .permanent,
                               "\(account): sharing \(path): OCS status \(reply.statusCode): \(reply.message)")
        }
        // What the server made, not what was asked: an administrator's enforced default expiry
        // is in the answer's `expiration` (a link asked without one is not "never"). A link
        // the answer shows as more open than asked (no password, no or a later expiry) is
        // deleted and refused, never recorded as the stricter one asked for.
        guard made.satisfies(request) else {
            if let id = made.id?.value, Self.isDigits(id) {
                _ = try? await call(self.request("DELETE", "\(api)/\(id)?format=json", headers: ocsHeaders), doing: "deleting the link of \(path)")
            }
            throw ArchiveError(.permanent, "\(account): sharing \(path): the server made a link more open than asked "
                               + "(\(request.password != nil && !made.hasPassword ? "no password" : "expiry \(made.expiration ?? "none")")); it was deleted")
        }
        return ShareLink(url: url, expires: made.expires, passwordProtected: made.hasPassword, fallback: nil)
    }

    public func delete(_ path: String) async throws(ArchiveError) {
        let r = try await call(request("DELETE", url(path)), doing: "deleting \(path)")
        guard r.isSuccess || r.status == 404 else { throw ArchiveError.status(r, account: account, doing: "deleting \(path)") }
        await server.forget(path)
    }

    /// 409 to a PUT or an assembly: the destination's folder is not there (removed since we
    /// made it). The folders we remember are stale: forget them, so the next attempt's
    /// `makeFolders` creates them again; until then the upload is a temporary failure.
    func folderGone(_ path: String) async -> ArchiveError {
        await server.forgetFolders()
        return ArchiveError(.transient, "\(account): uploading \(path): its folder \(RemotePath.parent(path)) is not there (removed meanwhile?); will create it again")
    }

    /// How long a chunk assembly of `size` bytes may keep the answer: 3 minutes per GB, at
    /// least `total`, at most 30 minutes.
    package static func assemblyTimeout(size: Int64, total: Double) -> Double {
        min(max(total, 180 * Double(size) / 1e9), max(total, 1800))
    }

    static func form(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~/"))) ?? s
    }

    static func day(_ d: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX"); f.timeZone = TimeZone(identifier: "UTC"); f.dateFormat = "yyyy-MM-dd"
        return f.string(from: d)
    }
}
