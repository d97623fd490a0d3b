import EvidenceCore
import Foundation
import Glibc
import Hummingbird

/// Box's upload API (`upload.box.com/api/2.0` ↔ `{S}/box/upload/api/2.0`): the direct
/// multipart upload and chunked upload sessions. See `BoxEmulator` for the quirks.
extension BoxEmulator {
    func addUploadRoutes(to router: Router<SandboxRequestContext>) {
        let base = "box/upload/api/2.0/files"
        router.post("\(base)/content") { request, _ in
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.directUpload(request)
        }
        // A new version of an existing file (rclone's box backend overwrites this way).
        router.post("\(base)/:id/content") { request, context in
            let id = try context.parameters.require("id")
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.directUpload(request, version: id)
        }
        router.post("\(base)/:id/upload_sessions") { request, context in
            let id = try context.parameters.require("id")
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.createSession(request, version: id)
        }
        router.post("\(base)/upload_sessions") { request, _ in
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.createSession(request)
        }
        router.put("\(base)/upload_sessions/:id") { request, context in
            let id = try context.parameters.require("id")
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.uploadPart(id, request)
        }
        router.get("\(base)/upload_sessions/:id") { request, context in
            let id = try context.parameters.require("id")
            return self.authed(request) { _ in self.sessionStatus(id, request) }
        }
        router.delete("\(base)/upload_sessions/:id") { request, context in
            let id = try context.parameters.require("id")
            return try self.authedThrowing(request) { _ in try self.abortSession(id) }
        }
        router.get("\(base)/upload_sessions/:id/parts") { request, context in
            let id = try context.parameters.require("id")
            return self.authed(request) { _ in self.listParts(id, request) }
        }
        router.post("\(base)/upload_sessions/:id/commit") { request, context in
            let id = try context.parameters.require("id")
            guard self.validToken(request) != nil else { await BoxShareFileSupport.drain(request); return self.unauthorized() }
            return try await self.commit(id, request)
        }
    }

    func tmpPath() -> String {
        (tmpDirectory as NSString).appendingPathComponent(BoxShareFileSupport.hex(env.random, bytes: 12))
    }

    static func parseDate(_ value: JSONValue?) -> Double? {
        guard let text = value?.stringValue else { return nil }
        let f = ISO8601DateFormatter()
        if let d = f.date(from: text) { return d.timeIntervalSince1970 }
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text)?.timeIntervalSince1970
    }

    func conflictObject(_ item: BoxItem) -> JSONValue {
        .object([("conflicts", BoxJSON.mini(item))])
    }

    func nameInUse(_ item: BoxItem) -> Response {
        error(.conflict, "item_name_in_use", "Item with the same name already exists", context: conflictObject(item))
    }

    /// Stores a received file (already hashed) as a new item in `parentId`: re-checks the parent
    /// and the name under the state lock, moves the blob into place, records the upload.
    func storeNewFile(tmp: String, name: String, parentId: String, size: Int64, sha1: String,
                      contentCreated: Double?, contentModified: Double?) throws -> Response {
        let now = env.clock().timeIntervalSince1970
        enum Outcome { case missing, conflict(BoxItem), stored(BoxItem, JSONValue, String) }
        let outcome: Outcome = try store.update { state in
            guard let parent = state.items[parentId], parent.isFolder else { return .missing }
            if let other = BoxJSON.sibling(named: name, in: parentId, state: state) { return .conflict(other) }
            let id = self.newId(in: state)
            let file = BoxItem(id: id, isFolder: false, name: name, parentId: parentId, sequenceId: 0, etag: 0,
                               createdAt: now, modifiedAt: now,
                               contentCreatedAt: contentCreated ?? contentModified ?? now,
                               contentModifiedAt: contentModified ?? now, size: size, sha1: sha1,
                               versionId: String(100_000_000_000 + self.env.random.next() % 900_000_000_000),
                               sharedLink: nil)
            try BoxShareFileSupport.move(tmp, to: self.blobPath(id))
            state.items[id] = file
            return .stored(file, .object(BoxJSON.full(file, in: state)), BoxJSON.path(of: file, in: state))
        }
        switch outcome {
        case .missing:
            try? FileManager.default.removeItem(atPath: tmp)
            return notFound()
        case .conflict(let other):
            try? FileManager.default.removeItem(atPath: tmp)
            return nameInUse(other)
        case .stored(_, let json, let path):
            env.counters.recordUpload(provider: "box", path: path)
            return .json(.object([("total_count", .int(1)), ("entries", .array([json]))]), status: .created)
        }
    }

    /// Replaces the content of `fileId` (a new version: new `file_version`, `etag` and
    /// `sequence_id` up by one, same id), renaming it when `name` is given. 201 with the file.
    func storeNewVersion(tmp: String, fileId: String, name: String?, size: Int64, sha1: String,
                         contentModified: Double?) throws -> Response {
        let now = env.clock().timeIntervalSince1970
        enum Outcome { case missing, conflict(BoxItem), stored(JSONValue, String) }
        let outcome: Outcome = try store.update { state in
            guard var file = state.items[fileId], !file.isFolder, let parent = file.parentId else { return .missing }
            if let name, let other = BoxJSON.sibling(named: name, in: parent, state: state), other.id != fileId { return .conflict(other) }
            try BoxShareFileSupport.move(tmp, to: self.blobPath(fileId))
            file.name = name ?? file.name
            file.size = size
            file.sha1 = sha1
            file.etag += 1
            file.sequenceId += 1
            file.modifiedAt = now
            file.contentModifiedAt = contentModified ?? now
            file.versionId = String(100_000_000_000 + self.env.random.next() % 900_000_000_000)
            state.items[fileId] = file
            return .stored(.object(BoxJSON.full(file, in: state)), BoxJSON.path(of: file, in: state))
        }
        switch outcome {
        case .missing:
            try? FileManager.default.removeItem(atPath: tmp)
            return notFound()
        case .conflict(let other):
            try? FileManager.default.removeItem(atPath: tmp)
            return nameInUse(other)
        case .stored(let json, let path):
            env.counters.recordUpload(provider: "box", path: path)
            return .json(.object([("total_count", .int(1)), ("entries", .array([json]))]), status: .created)
        }
    }

    // MARK: Preflight

    /// `OPTIONS /2.0/files/content`: would an upload of `name` into `parent.id` be taken? Nothing
    /// is created; only the checks an upload makes before its bytes (auth, body, name, parent,
    /// conflict).
    func preflight(_ request: Request) async throws -> Response {
        guard let data = try await BoxShareFileSupport.collect(request), let body = try? JSONValue.parse(data),
              case .object = body else {
            return error(.badRequest, "bad_request", "Invalid JSON body")
        }
        guard let name = body["name"]?.stringValue, let parentId = body["parent"]?["id"]?.stringValue else {
            return error(.badRequest, "bad_request", "'name' and 'parent' are required")
        }
        if let size = body["size"] {
            guard case .int = size else { return error(.badRequest, "bad_request", "'size' must be an integer") }
        }
        if let problem = BoxJSON.nameProblem(name) { return error(.badRequest, problem.code, problem.message) }
        enum Outcome { case missing, conflict(BoxItem), free }
        let outcome: Outcome = store.read { state in
            guard let parent = state.items[parentId], parent.isFolder else { return .missing }
            if let other = BoxJSON.sibling(named: name, in: parentId, state: state) { return .conflict(other) }
            return .free
        }
        switch outcome {
        case .missing: return notFound()
        case .conflict(let other): return nameInUse(other)
        case .free:
            let url = PublicHosts.url(request, sandboxPath: "/box/upload/api/2.0/files/content")
            return .json(.object([("upload_url", .string(url)), ("upload_token", .null)]))
        }
    }

    // MARK: Direct upload

    /// A new file (`version` nil: `attributes` name it and its `parent`), or a new version of the
    /// file `version` (`attributes` may rename it).
    func directUpload(_ request: Request, version fileId: String? = nil) async throws -> Response {
        let contentType = request.headers[.contentType] ?? ""
        guard request.mediaType == "multipart/form-data", let boundary = Self.boundary(contentType) else {
            await BoxShareFileSupport.drain(request)
            return error(.badRequest, "bad_request", "Upload requests must be multipart/form-data with a boundary")
        }
        let slack: Int64 = 1 << 20
        if let length = request.headers[.contentLength].flatMap({ Int64($0) }), length > Self.maxDirectUpload + slack {
            await BoxShareFileSupport.drain(request)
            return tooLarge()
        }
        let bodyPath = tmpPath()
        defer { try? FileManager.default.removeItem(atPath: bodyPath) }
        let received = try await BoxShareFileSupport.receive(request, to: bodyPath, limit: Self.maxDirectUpload + slack)
        if received.overflow { return tooLarge() }
        if env.control.take(.boxTemporaryConflict) { return temporaryConflict("name_temporarily_reserved") }

        let filePath = tmpPath()
        var keepFile = false
        defer { if !keepFile { try? FileManager.default.removeItem(atPath: filePath) } }
        let parsed: MultipartSplit
        switch try Self.splitMultipart(bodyPath: bodyPath, boundary: boundary, fileOut: filePath) {
        case .failure(let response): return response(self)
        case .success(let split): parsed = split
        }
        guard let attributesData = parsed.attributes, let attributes = try? JSONValue.parse(attributesData),
              case .object = attributes else {
            return error(.badRequest, "bad_request", "Missing or invalid attributes part")
        }
        guard parsed.fileSize != nil else {
            return error(.badRequest, "bad_request", "API upload did not contain a file part")
        }
        let newName = attributes["name"]?.stringValue
        if let newName, let problem = BoxJSON.nameProblem(newName) { return error(.badRequest, problem.code, problem.message) }
        var parentId = ""
        if fileId == nil {
            guard newName != nil else { return error(.badRequest, "bad_request", "'name' is required in attributes") }
            guard let parent = attributes["parent"]?["id"]?.stringValue else {
                return error(.badRequest, "bad_request", "'parent' is required in attributes")
            }
            parentId = parent
        }
        if let size = parsed.fileSize, size >= Self.maxDirectUpload { return tooLarge() }
        let precheck: Response? = store.read { state in
            if let fileId {
                guard let file = state.items[fileId], !file.isFolder, let parent = file.parentId else { return self.notFound() }
                if let newName, let other = BoxJSON.sibling(named: newName, in: parent, state: state), other.id != fileId {
                    return self.nameInUse(other)
                }
                return nil
            }
            guard let parent = state.items[parentId], parent.isFolder else { return self.notFound() }
            if let other = BoxJSON.sibling(named: newName ?? "", in: parentId, state: state) { return self.nameInUse(other) }
            return nil
        }
        if let precheck { return precheck }

        if env.control.takeCorruption(provider: "box") { try BoxShareFileSupport.flipOneByte(path: filePath) }
        let sha1 = try BoxShareFileSupport.digests(path: filePath).sha1
        if let claimed = BoxShareFileSupport.header(request, "Content-MD5") {
            guard claimed.trimmingCharacters(in: .whitespaces).lowercased() == sha1 else {
                return error(.badRequest, "bad_digest", "The specified Content-MD5 did not match what we received")
            }
        }
        let response: Response
        if let fileId {
            response = try storeNewVersion(tmp: filePath, fileId: fileId, name: newName, size: parsed.fileSize ?? 0, sha1: sha1,
                                           contentModified: Self.parseDate(attributes["content_modified_at"]))
        } else {
            response = try storeNewFile(tmp: filePath, name: newName ?? "", parentId: parentId, size: parsed.fileSize ?? 0, sha1: sha1,
                                        contentCreated: Self.parseDate(attributes["content_created_at"]),
                                        contentModified: Self.parseDate(attributes["content_modified_at"]))
        }
        keepFile = response.status == .created
        return response
    }

    /// Box's "try again later" 409 (the `box-409-temporary` quirk).
    func temporaryConflict(_ code: String) -> Response {
        error(.conflict, code, "The operation is blocked temporarily; try again later", headers: [.retryAfter: "1"])
    }

    func tooLarge() -> Response {
        error(.contentTooLarge, "request_entity_too_large",
              "Request Entity Too Large: files of 50 MB or more must be uploaded with an upload session")
    }

    static func boundary(_ contentType: String) -> String? {
        for param in contentType.split(separator: ";").dropFirst() {
            let kv = param.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = kv[1].trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    struct MultipartSplit {
        var attributes: Data?
        var fileSize: Int64?
    }

    enum SplitResult {
        case success(MultipartSplit)
        case failure((BoxEmulator) -> Response)
    }

    /// Walks the multipart body on disk (memory-mapped): the `attributes` part is kept, the
    /// `file` part's bytes are written to `fileOut`. A `file` part before `attributes` is the
    /// mistake Box refuses with `metadata_after_file_contents`.
    static func splitMultipart(bodyPath: String, boundary: String, fileOut: String) throws -> SplitResult {
        let body = try Data(contentsOf: URL(fileURLWithPath: bodyPath), options: .alwaysMapped)
        return try body.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> SplitResult in
            guard let base = raw.baseAddress else {
                return .failure { $0.error(.badRequest, "bad_request", "Empty multipart body") }
            }
            let count = raw.count
            _ = base
            func find(_ needle: [UInt8], from: Int) -> Int? {
                guard from < count else { return nil }
                return BoxShareFileSupport.find(needle, in: raw, from: from)
            }
            let dash = Array("--\(boundary)".utf8)
            let delimiter = Array("\r\n--\(boundary)".utf8)
            guard let first = find(dash, from: 0) else {
                return .failure { $0.error(.badRequest, "bad_request", "Malformed multipart body") }
            }
            var split = MultipartSplit()
            var cursor = first + dash.count
            while true {
                // After a delimiter: "--" closes, "\r\n" opens a part.
                if cursor + 2 <= count, raw[cursor] == UInt8(ascii: "-"), raw[cursor + 1] == UInt8(ascii: "-") { break }
                guard let headerStart = find([13, 10], from: cursor).map({ $0 + 2 }),
                      let headerEnd = find([13, 10, 13, 10], from: headerStart - 2) else {
                    return .failure { $0.error(.badRequest, "bad_request", "Malformed multipart body") }
                }
                let headers = headerStart <= headerEnd
                    ? String(decoding: UnsafeRawBufferPointer(rebasing: raw[headerStart..<headerEnd]), as: UTF8.self) : ""
                let contentStart = headerEnd + 4
                guard let contentEnd = find(delimiter, from: contentStart) else {
                    return .failure { $0.error(.badRequest, "bad_request", "Malformed multipart body") }
                }
                let name = partName(headers)
                if name == "attributes" {
                    split.attributes = Data(UnsafeRawBufferPointer(rebasing: raw[contentStart..<contentEnd]))
                } else if name == "file" || (split.fileSize == nil && Self.partFilename(headers) != nil) {
                    // Box takes the part that carries a file name whatever its field is called
                    // (the docs say `file`; rclone sends `contents`, the Box SDKs `file`).
                    if split.attributes == nil {
                        return .failure {
                            $0.error(.badRequest, "metadata_after_file_contents",
                                     "The attributes part must come before the file part: attributes must be sent before file")
                        }
                    }
                    let fd = open(fileOut, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                    guard fd >= 0 else { throw BoxShareFileIOError("open \(fileOut): errno \(errno)") }
                    defer { close(fd) }
                    try BoxShareFileSupport.writeAll(fd: fd, UnsafeRawBufferPointer(rebasing: raw[contentStart..<contentEnd]), path: fileOut)
                    _ = fsync(fd)
                    split.fileSize = Int64(contentEnd - contentStart)
                }
                cursor = contentEnd + delimiter.count
            }
            return .success(split)
        }
    }

    /// `name` from `Content-Disposition: form-data; name="…"`.
    static func partName(_ headers: String) -> String? {
        dispositionParameter("name", headers)
    }

    /// `filename` from `Content-Disposition: form-data; name="…"; filename="…"`: a file part.
    static func partFilename(_ headers: String) -> String? {
        dispositionParameter("filename", headers)
    }

    static func dispositionParameter(_ key: String, _ headers: String) -> String? {
        for line in headers.split(separator: "\r\n") where line.lowercased().hasPrefix("content-disposition:") {
            for param in line.split(separator: ";").dropFirst() {
                let kv = param.split(separator: "=", maxSplits: 1)
                guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == key else { continue }
                var value = kv[1].trimmingCharacters(in: .whitespaces)
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                return value
            }
        }
        return nil
    }

    // MARK: Upload sessions

    func sessionDirectory(_ id: String) -> String { (sessionsDirectory as NSString).appendingPathComponent(id) }

    func sessionJSON(_ s: BoxUploadSession, _ request: Request) -> JSONValue {
        let url = PublicHosts.url(request, sandboxPath: "/box/upload/api/2.0/files/upload_sessions/\(s.id)")
        let totalParts = (s.fileSize + s.partSize - 1) / s.partSize
        return .object([
            ("id", .string(s.id)),
            ("type", .string("upload_session")),
            ("session_expires_at", BoxJSON.date(s.expiresAt)),
            ("part_size", .int(s.partSize)),
            ("total_parts", .int(totalParts)),
            ("num_parts_processed", .int(Int64(s.parts.count))),
            ("session_endpoints", .object([
                ("upload_part", .string(url)),
                ("commit", .string(url + "/commit")),
                ("abort", .string(url)),
                ("list_parts", .string(url + "/parts")),
                ("status", .string(url)),
                ("log_event", .string(url + "/log")),
            ])),
        ])
    }

    /// The live session, or nil (unknown, aborted, committed, or past its 7 days — expired
    /// sessions are cleaned up here).
    func liveSession(_ id: String) -> BoxUploadSession? {
        let now = env.clock().timeIntervalSince1970
        guard let s = store.read({ $0.sessions[id] }) else { return nil }
        if s.expiresAt <= now {
            _ = try? store.update { $0.sessions[id] = nil }
            try? FileManager.default.removeItem(atPath: sessionDirectory(id))
            return nil
        }
        return s
    }

    /// A session for a new file (`folder_id`, `file_name`, `file_size`), or with `version` for a
    /// new version of that file (`file_size`; `file_name` optional, renames).
    func createSession(_ request: Request, version fileId: String? = nil) async throws -> Response {
        guard let data = try await BoxShareFileSupport.collect(request), let body = try? JSONValue.parse(data),
              case .object = body else {
            return error(.badRequest, "bad_request", "Invalid JSON body")
        }
        if env.control.take(.boxTemporaryConflict) { return temporaryConflict("name_temporarily_reserved") }
        var folderId = ""
        var name = body["file_name"]?.stringValue ?? ""
        if let fileId {
            guard let file = store.read({ $0.items[fileId] }), !file.isFolder, let parent = file.parentId else { return notFound() }
            folderId = parent
            if name.isEmpty { name = file.name }
        } else {
            guard let folder = body["folder_id"]?.stringValue else {
                return error(.badRequest, "bad_request", "'folder_id' is required")
            }
            folderId = folder
            guard !name.isEmpty else { return error(.badRequest, "bad_request", "'file_name' is required") }
        }
        let size: Int64
        switch body["file_size"] {
        case .int(let n)?: size = n
        case .double(let d)? where d == d.rounded(): size = Int64(d)
        default: return error(.badRequest, "bad_request", "'file_size' is required")
        }
        if size < Self.minSessionSize {
            return error(.badRequest, "file_size_too_small",
                         "File size \(size) less than minimum allowed for this API: \(Self.minSessionSize)")
        }
        if let problem = BoxJSON.nameProblem(name) { return error(.badRequest, problem.code, problem.message) }
        let now = env.clock().timeIntervalSince1970
        let id = BoxShareFileSupport.hex(env.random, bytes: 16, uppercase: true)
        enum Outcome { case missing, conflict(BoxItem), created(BoxUploadSession) }
        let outcome: Outcome = try store.update { state in
            guard let folder = state.items[folderId], folder.isFolder else { return .missing }
            if let other = BoxJSON.sibling(named: name, in: folderId, state: state), other.id != fileId { return .conflict(other) }
            let session = BoxUploadSession(id: id, folderId: folderId, fileName: name, fileSize: size, partSize: Self.partSize,
                                           createdAt: now, expiresAt: now + Self.sessionLifetime, parts: [], commitAttempts: 0,
                                           fileId: fileId)
            state.sessions[id] = session
            return .created(session)
        }
        switch outcome {
        case .missing: return notFound()
        case .conflict(let other): return nameInUse(other)
        case .created(let session):
            try FileManager.default.createDirectory(atPath: sessionDirectory(id), withIntermediateDirectories: true)
            return .json(sessionJSON(session, request), status: .created)
        }
    }

    /// `bytes a-b/total` → (a, b, total).
    static func contentRange(_ text: String?) -> (Int64, Int64, Int64)? {
        guard let text, text.lowercased().hasPrefix("bytes ") else { return nil }
        let rest = text.dropFirst(6)
        let slash = rest.split(separator: "/", maxSplits: 1)
        guard slash.count == 2, let total = Int64(slash[1].trimmingCharacters(in: .whitespaces)) else { return nil }
        let dash = slash[0].split(separator: "-", maxSplits: 1)
        guard dash.count == 2, let a = Int64(dash[0].trimmingCharacters(in: .whitespaces)),
              let b = Int64(dash[1].trimmingCharacters(in: .whitespaces)), a <= b else { return nil }
        return (a, b, total)
    }

    /// The base64 SHA-1 of `Digest: sha=<base64>` (also `SHA=`; other algorithms are ignored).
    static func shaDigest(_ request: Request) -> String? {
        guard let value = BoxShareFileSupport.header(request, "Digest") else { return nil }
        for item in value.split(separator: ",") {
            let kv = item.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if kv.count == 2, kv[0].lowercased() == "sha" { return String(kv[1]) }
        }
        return nil
    }

    static func base64(hex: String) -> String {
        Data(Hex.decode(hex) ?? []).base64EncodedString()
    }

    func rangeError(_ message: String) -> Response {
        error(.rangeNotSatisfiable, "requested_range_not_satisfiable", message)
    }

    func uploadPart(_ id: String, _ request: Request) async throws -> Response {
        guard let session = liveSession(id) else { await BoxShareFileSupport.drain(request); return notFound() }
        guard let digest = Self.shaDigest(request) else {
            await BoxShareFileSupport.drain(request)
            return error(.badRequest, "bad_request", "Missing Digest header: Digest: sha=<base64 SHA-1 of the part> is required")
        }
        guard let (start, end, total) = Self.contentRange(request.headers[.contentRange]) else {
            await BoxShareFileSupport.drain(request)
            return rangeError("Missing or invalid Content-Range header")
        }
        let expected = min(session.partSize, session.fileSize - start)
        guard total == session.fileSize, start % session.partSize == 0, start < session.fileSize,
              end - start + 1 == expected else {
            await BoxShareFileSupport.drain(request)
            return rangeError("The Content-Range \(start)-\(end)/\(total) does not match a part of this session (part_size \(session.partSize), file_size \(session.fileSize))")
        }
        let tmp = tmpPath()
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        let received = try await BoxShareFileSupport.receive(request, to: tmp, limit: expected)
        guard !received.overflow, received.size == expected else {
            return rangeError("The body length does not match the Content-Range \(start)-\(end)/\(total)")
        }
        var sha1 = received.sha1
        if env.control.takeCorruption(provider: "box") {
            try BoxShareFileSupport.flipOneByte(path: tmp)
            sha1 = try BoxShareFileSupport.digests(path: tmp).sha1
        }
        guard Self.base64(hex: sha1) == digest else {
            return error(.badRequest, "bad_digest", "The specified Digest did not match what we received")
        }
        let part = BoxPart(partId: String(sha1.prefix(8)).uppercased(), offset: start, size: received.size, sha1: sha1)
        if let existing = session.parts.first(where: { $0.offset == start }) {
            return existing.sha1 == sha1
                ? rangeError("The part at bytes \(start)-\(end) was already uploaded; parts cannot be uploaded again")
                : error(.conflict, "conflict", "The part at bytes \(start)-\(end) conflicts with a part already uploaded")
        }
        let stored: Bool = try store.update { state in
            guard var s = state.sessions[id] else { return false }
            try BoxShareFileSupport.move(tmp, to: (self.sessionDirectory(id) as NSString).appendingPathComponent(String(start)))
            s.parts.removeAll { $0.offset == start }
            s.parts.append(part)
            s.parts.sort { $0.offset < $1.offset }
            state.sessions[id] = s
            return true
        }
        guard stored else { return notFound() }
        if env.control.take(.boxPartAnswerLost) {
            return .bytes(Array("<html><body><h1>502 Bad Gateway</h1></body></html>".utf8),
                          contentType: "text/html", status: .badGateway)
        }
        return .json(.object([("part", part.json)]))
    }

    func sessionStatus(_ id: String, _ request: Request) -> Response {
        guard let session = liveSession(id) else { return notFound() }
        return .json(sessionJSON(session, request))
    }

    func listParts(_ id: String, _ request: Request) -> Response {
        guard let session = liveSession(id) else { return notFound() }
        let q = request.uri.queryParameters
        var limit = min(q.get("limit").flatMap { Int($0) }.map { max(0, $0) } ?? Self.maxLimit, Self.maxLimit)
        if env.control.isArmed(.boxSmallPartPages) { limit = min(limit, 2) }
        let offset = q.get("offset").flatMap { Int($0) }.map { max(0, $0) } ?? 0
        if offset > 10_000 {
            return error(.badRequest, "bad_request", "Queries with offset parameter value exceeding 10000 are not supported")
        }
        return .json(.object([
            ("entries", .array(session.parts.dropFirst(offset).prefix(limit).map(\.json))),
            ("total_count", .int(Int64(session.parts.count))),
            ("limit", .int(Int64(limit))),
            ("offset", .int(Int64(offset))),
        ]))
    }

    func abortSession(_ id: String) throws -> Response {
        guard liveSession(id) != nil else { return notFound() }
        try store.update { $0.sessions[id] = nil }
        try? FileManager.default.removeItem(atPath: sessionDirectory(id))
        return Response(status: .noContent)
    }

    func commit(_ id: String, _ request: Request) async throws -> Response {
        guard let data = try await BoxShareFileSupport.collect(request) else {
            return error(.badRequest, "bad_request", "Request body too large")
        }
        guard let session = liveSession(id) else { return notFound() }
        guard let digest = Self.shaDigest(request) else {
            return error(.badRequest, "bad_request", "Missing Digest header: Digest: sha=<base64 SHA-1 of the file> is required")
        }
        guard let body = try? JSONValue.parse(data), case .array(let listed)? = body["parts"] else {
            return error(.badRequest, "bad_request", "'parts' is required")
        }
        var parts: [BoxPart] = []
        for entry in listed {
            guard let partId = entry["part_id"]?.stringValue, case .int(let offset)? = entry["offset"],
                  case .int(let size)? = entry["size"] else {
                return error(.badRequest, "bad_request", "Each part needs part_id, offset and size")
            }
            parts.append(BoxPart(partId: partId, offset: offset, size: size, sha1: entry["sha1"]?.stringValue ?? ""))
        }
        parts.sort { $0.offset < $1.offset }
        if env.control.take(.boxTemporaryConflict) { return temporaryConflict("operation_blocked_temporary") }
        if session.commitAttempts == 0, env.control.take(.boxPartsMismatch) {
            try store.update { state in state.sessions[id]?.commitAttempts += 1 }
            return error(.badRequest, "parts_mismatch", "The parts listed do not match the parts uploaded yet; wait and commit again")
        }
        let uploaded = session.parts
        let matches = parts.count == uploaded.count && zip(parts, uploaded).allSatisfy {
            $0.partId == $1.partId && $0.offset == $1.offset && $0.size == $1.size && ($0.sha1.isEmpty || $0.sha1 == $1.sha1)
        }
        let covered = uploaded.reduce(Int64(0)) { $0 + $1.size } == session.fileSize
        guard matches, covered else {
            return error(.badRequest, "bad_request",
                         "The list of parts does not match the parts uploaded to this session (\(uploaded.count) uploaded, \(parts.count) listed, file complete: \(covered))")
        }
        if session.commitAttempts == 0 {
            try store.update { state in state.sessions[id]?.commitAttempts += 1 }
            return Response(status: .accepted, headers: [.retryAfter: "1", .contentLength: "0"])
        }
        let tmp = tmpPath()
        var keep = false
        defer { if !keep { try? FileManager.default.removeItem(atPath: tmp) } }
        let dir = sessionDirectory(id)
        let assembled = try BoxShareFileSupport.concatenate(uploaded.map { (dir as NSString).appendingPathComponent(String($0.offset)) }, into: tmp)
        let actual = Self.base64(hex: assembled.sha1)
        guard actual == digest else {
            return error(.badRequest, "digest_mismatch", "File digest was incorrect. Actual: \(actual) Expected: \(digest)")
        }
        let attributes = body["attributes"]
        let response: Response
        if let fileId = session.fileId {
            response = try storeNewVersion(tmp: tmp, fileId: fileId, name: attributes?["name"]?.stringValue ?? session.fileName,
                                           size: assembled.size, sha1: assembled.sha1,
                                           contentModified: Self.parseDate(attributes?["content_modified_at"]))
        } else {
            response = try storeNewFile(tmp: tmp, name: attributes?["name"]?.stringValue ?? session.fileName,
                                        parentId: session.folderId, size: assembled.size, sha1: assembled.sha1,
                                        contentCreated: Self.parseDate(attributes?["content_created_at"]),
                                        contentModified: Self.parseDate(attributes?["content_modified_at"]))
        }
        if response.status == .created {
            keep = true
            try store.update { $0.sessions[id] = nil }
            try? FileManager.default.removeItem(atPath: dir)
        }
        return response
    }
}
