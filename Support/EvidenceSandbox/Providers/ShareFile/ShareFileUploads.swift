import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import Hummingbird

/// ShareFile uploads: `Items({folder})/Upload2` hands out an UploadSpecification whose
/// `ChunkUri`/`FinishUri` point at the (unauthenticated) upload server. See `ShareFileEmulator`.
extension ShareFileEmulator {
    func upload2(folder: String, _ request: Request, _ api: String) async throws -> Response {
        guard let body = try await jsonBody(request) else { return odataError(.badRequest, "BadRequest", "Invalid JSON body") }
        // Enum values, like member names, in any case (rclone sends `"method": "standard"`).
        let method = (body[anyCase: "Method"]?.stringValue ?? "Standard").capitalized
        guard method == "Standard" || method == "Threaded" else {
            return odataError(.badRequest, "BadRequest", "Unsupported upload method: \(method)")
        }
        guard case .bool(true)? = body[anyCase: "Raw"] else {
            return odataError(.badRequest, "BadRequest", "The sandbox takes raw uploads only: set \"Raw\": true")
        }
        guard let name = body[anyCase: "FileName"]?.stringValue else { return odataError(.badRequest, "BadRequest", "FileName is required") }
        if let problem = ShareFileJSON.nameProblem(name) { return odataError(.badRequest, "BadRequest", problem) }
        // `UploadRequestParams.FileSize`; ShareFile knows no `FileLength` and ignores it.
        var length: Int64 = -1
        switch body[anyCase: "FileSize"] {
        case .int(let n)?: length = n
        case .double(let d)? where d == d.rounded(): length = Int64(d)
        default: break
        }
        let threaded = method == "Threaded"
        if threaded, length < 0 { return odataError(.badRequest, "BadRequest", "FileSize is required for Threaded uploads") }
        if !threaded, length > Self.standardLimit {
            return odataError(.badRequest, "BadRequest", "Standard uploads are limited to 128 MiB; use the Threaded method")
        }
        var overwrite = false
        if case .bool(let b)? = body[anyCase: "Overwrite"] { overwrite = b }
        let clientCreated = ShareFileJSON.parseDate(body[anyCase: "ClientCreatedDate"]?.stringValue)
        let now = env.clock().timeIntervalSince1970
        let newId = "rsu-" + BoxShareFileSupport.hex(env.random, bytes: 16)
        enum Outcome { case missing, notFolder, conflict, spec(ShareFileUpload, resume: Bool) }
        let outcome: Outcome = try store.update { state in
            guard let parent = state.items[folder] else { return .missing }
            guard parent.isFolder else { return .notFolder }
            if threaded, let pending = state.uploads.values.first(where: {
                $0.threaded && $0.parentId == folder && $0.fileName.lowercased() == name.lowercased()
                    && $0.fileLength == length && $0.received > 0
            }) {
                return .spec(pending, resume: true)
            }
            if !overwrite, ShareFileJSON.child(named: name, in: folder, state: state) != nil { return .conflict }
            let upload = ShareFileUpload(id: newId, parentId: folder, fileName: name, fileLength: length, threaded: threaded,
                                         overwrite: overwrite, clientCreatedAt: clientCreated, received: 0, chunks: 0, createdAt: now)
            state.uploads[newId] = upload
            return .spec(upload, resume: false)
        }
        switch outcome {
        case .missing: return notFound()
        case .notFolder: return odataError(.badRequest, "BadRequest", "The target item is not a folder")
        case .conflict: return odataError(.conflict, "Conflict", "A file with the same name already exists")
        case .spec(let upload, let resume):
            let query = "uploadid=\(upload.id)&batchid=\(upload.id)&userid=sandbox&zoneid=sandbox&raw=1"
            var resumeHash = ""
            if resume, upload.received > 0 {
                // The MD5 of the bytes a resume continues after (later chunks may be held too).
                resumeHash = (try? Hex.encode(FileHasher.digest(path: partialPath(upload.id), algorithm: .md5,
                                                                 length: upload.received))) ?? ""
            }
            return .json(.object([
                ("odata.metadata", .string("\(api)/$metadata#ShareFile.Api.Models.UploadSpecification@Element")),
                ("odata.type", .string("ShareFile.Api.Models.UploadSpecification")),
                ("Method", .string(upload.threaded ? "Threaded" : "Standard")),
                ("PrepareUri", .null),
                ("ChunkUri", .string(PublicHosts.url(request, sandboxPath: "/sharefile/upload/\(upload.id)/chunk?\(query)"))),
                ("FinishUri", .string(PublicHosts.url(request, sandboxPath: "/sharefile/upload/\(upload.id)/finish?\(query)"))),
                ("ProgressData", .null),
                ("IsResume", .bool(resume)),
                ("ResumeIndex", .int(Int64(resume ? upload.chunks : 0))),
                ("ResumeOffset", .int(resume ? upload.received : 0)),
                ("ResumeFileHash", .string(resumeHash)),
                ("MaxNumberOfThreads", .int(4)),
            ]))
        }
    }

    /// The upload server's failure answer: HTTP 200 with `error: true` (the real quirk).
    func uploadError(_ message: String, code: Int, extra: [(String, JSONValue)] = []) -> Response {
        .json(.object([("error", .bool(true)), ("errorMessage", .string(message)), ("errorCode", .int(Int64(code)))] + extra))
    }

    func uploadSuccess(_ upload: ShareFileUpload, item: ShareFileItem) -> Response {
        .json(.object([("error", .bool(false)), ("value", .array([.object([
            ("uploadid", .string(upload.id)),
            ("parentid", .string(upload.parentId)),
            ("id", .string(item.id)),
            ("filename", .string(item.name)),
            ("displayname", .string(item.name)),
            ("size", .int(item.size)),
            ("md5", .string(item.md5 ?? "")),
        ])]))]))
    }

    func chunk(_ id: String, _ request: Request) async throws -> Response {
        guard let upload = store.read({ $0.uploads[id] }) else {
            await BoxShareFileSupport.drain(request)
            return expiredUpload()
        }
        if let failed = armedUploadFailure() {
            await BoxShareFileSupport.drain(request)
            return failed
        }
        if upload.threaded, env.control.take(.shareFileUploadExpired) {
            await BoxShareFileSupport.drain(request)
            try store.update { state in state.uploads[id] = nil }
            try? FileManager.default.removeItem(atPath: partialPath(id))
            return expiredUpload()
        }
        let q = request.uri.queryParameters
        let tmp = tmpPath()
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        guard upload.threaded else {
            // Standard: the body is the whole file.
            let received = try await BoxShareFileSupport.receive(request, to: tmp, limit: Self.standardLimit)
            if received.overflow { return uploadError("Standard uploads are limited to 128 MiB", code: 413) }
            var md5 = received.md5
            if env.control.takeCorruption(provider: "sharefile") {
                try BoxShareFileSupport.flipOneByte(path: tmp)
                md5 = try BoxShareFileSupport.digests(path: tmp).md5
            }
            let response = try storeUpload(upload, from: tmp, size: received.size, md5: md5)
            if q.get("fmt")?.lowercased() != "json", case .success = response {
                return .bytes(Array("OK".utf8), contentType: "text/plain; charset=utf-8")
            }
            return response.response(self)
        }
        guard let offsetText = q.get("byteOffset"), let offset = Int64(offsetText) else {
            await BoxShareFileSupport.drain(request)
            return uploadError("byteOffset is required for threaded chunks", code: 400)
        }
        // Threaded: chunks come in parallel, so in any order; each lands at its byteOffset.
        guard offset >= 0, offset <= upload.fileLength else {
            await BoxShareFileSupport.drain(request)
            return uploadError("Invalid byteOffset \(offset): the file has \(upload.fileLength) bytes", code: 400,
                               extra: [("expectedByteOffset", .int(upload.received))])
        }
        let received = try await BoxShareFileSupport.receive(request, to: tmp, limit: upload.fileLength - offset)
        if received.overflow { return uploadError("Chunk goes past FileLength \(upload.fileLength)", code: 400) }
        var md5 = received.md5
        if env.control.takeCorruption(provider: "sharefile") {
            try BoxShareFileSupport.flipOneByte(path: tmp)
            md5 = try BoxShareFileSupport.digests(path: tmp).md5
        }
        if let claimed = q.get("hash"), !claimed.isEmpty, claimed.lowercased() != md5 {
            return uploadError("Chunk hash mismatch: received data has MD5 \(md5), hash parameter is \(claimed)", code: 400)
        }
        let index = q.get("index").flatMap { Int($0) } ?? upload.chunks
        let result: Response? = try store.update { state in
            guard var u = state.uploads[id] else { return self.expiredUpload() }
            try self.write(tmp, to: self.partialPath(id), at: offset)
            if u.pieces == nil, u.received > 0 {
                // Saved before chunks were kept: what it holds is the prefix.
                u.pieces = [ShareFilePiece(index: max(u.chunks - 1, 0), offset: 0, size: u.received)]
            }
            u.add(ShareFilePiece(index: index, offset: offset, size: received.size))
            state.uploads[id] = u
            return nil
        }
        return result ?? .json(.object([("error", .bool(false)), ("value", .null)]))
    }

    /// Writes the chunk at `offset` of the partial file, leaving the rest as it is (chunks
    /// after it may be there already; a crash before the state update leaves bytes the state
    /// does not count, which the chunk's retry overwrites).
    func write(_ chunk: String, to partial: String, at offset: Int64) throws {
        let fd = open(partial, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BoxShareFileIOError("open \(partial): errno \(errno)") }
        defer { close(fd) }
        guard lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
            throw BoxShareFileIOError("seek \(partial): errno \(errno)")
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: chunk), options: .alwaysMapped)
        try data.withUnsafeBytes { try BoxShareFileSupport.writeAll(fd: fd, $0, path: partial) }
        guard fsync(fd) == 0 else { throw BoxShareFileIOError("fsync \(partial): errno \(errno)") }
    }

    enum StoreOutcome {
        case success(ShareFileUpload, ShareFileItem)
        case failure(String, Int)

        func response(_ emulator: ShareFileEmulator) -> Response {
            switch self {
            case .success(let u, let item): return emulator.uploadSuccess(u, item: item)
            case .failure(let message, let code): return emulator.uploadError(message, code: code)
            }
        }
    }

    /// Turns a complete upload into a stored file (replacing a same-named file when the upload
    /// said `Overwrite`), records it and forgets the upload.
    func storeUpload(_ upload: ShareFileUpload, from path: String, size: Int64, md5: String) throws -> StoreOutcome {
        let now = env.clock().timeIntervalSince1970
        let fileId = Self.itemId(prefix: "fi", env.random)
        let md5 = env.control.take(.shareFileEmptyHash) ? "" : md5
        let outcome: StoreOutcome = try store.update { state in
            guard state.uploads[upload.id] != nil else { return .failure("Unrecognized Upload ID", 605) }
            guard let parent = state.items[upload.parentId], parent.isFolder else {
                return .failure("The target folder no longer exists", 404)
            }
            if let existing = ShareFileJSON.child(named: upload.fileName, in: upload.parentId, state: state) {
                guard upload.overwrite, !existing.isFolder else {
                    return .failure("A file with the same name already exists", 409)
                }
                state.items[existing.id] = nil
                try? FileManager.default.removeItem(atPath: self.blobPath(existing.id))
            }
            try BoxShareFileSupport.move(path, to: self.blobPath(fileId))
            let item = ShareFileItem(id: fileId, isFolder: false, name: upload.fileName, parentId: upload.parentId,
                                     description: "", size: size, md5: md5, createdAt: now, modifiedAt: now,
                                     clientCreatedAt: upload.clientCreatedAt)
            state.items[fileId] = item
            state.uploads[upload.id] = nil
            return .success(upload, item)
        }
        if case .success(_, let item) = outcome {
            let path = store.read { ShareFileJSON.path(of: item, in: $0) }
            env.counters.recordUpload(provider: "sharefile", path: path)
            try? FileManager.default.removeItem(atPath: partialPath(upload.id))
        }
        return outcome
    }

    /// An upload id the upload server does not know (never issued, finished, or expired): as
    /// ShareFile answers it, in a 200.
    func expiredUpload() -> Response {
        uploadError("Unrecognized Upload ID", code: 605)
    }

    /// The quirks `sharefile-chunk-error-text` / `-json`: this chunk or finish fails in a 200.
    func armedUploadFailure() -> Response? {
        if env.control.take(.shareFileChunkErrorText) {
            return .bytes(Array("ERROR: The storage zone could not write the chunk; try again".utf8), contentType: "text/plain; charset=utf-8")
        }
        if env.control.take(.shareFileChunkErrorJSON) {
            return uploadError("The storage zone could not write the chunk; try again", code: 500)
        }
        return nil
    }

    /// The SDK finishes with `GET FinishUri&respformat=json&filehash=…`; rclone (whose
    /// ShareFile backend is tested against the live service) POSTs the bare FinishUri and reads
    /// the same JSON answer, so JSON is the default; another `respformat` gets `OK` / `ERROR: …`.
    func finish(_ id: String, _ request: Request) async throws -> Response {
        await BoxShareFileSupport.drain(request)
        guard let upload = store.read({ $0.uploads[id] }) else {
            return expiredUpload()
        }
        if let failed = armedUploadFailure() { return failed }
        let json = (request.uri.queryParameters.get("respformat")?.lowercased() ?? "json") == "json"
        switch try finishUpload(upload, request) {
        case .success(let u, let item):
            return json ? uploadSuccess(u, item: item) : .bytes(Array("OK".utf8), contentType: "text/plain; charset=utf-8")
        case .failure(let message, let code, let extra):
            return json ? uploadError(message, code: code, extra: extra)
                : .bytes(Array("ERROR: \(message)".utf8), contentType: "text/plain; charset=utf-8")
        }
    }

    enum FinishOutcome {
        case success(ShareFileUpload, ShareFileItem)
        case failure(String, Int, [(String, JSONValue)])
    }

    func finishUpload(_ upload: ShareFileUpload, _ request: Request) throws -> FinishOutcome {
        let id = upload.id
        guard upload.threaded else { return .failure("Standard uploads finish with their single chunk", 400, []) }
        guard upload.received == upload.fileLength else {
            return .failure("Upload incomplete: missing chunks (received \(upload.received) of \(upload.fileLength) bytes)", 400,
                            [("expectedByteOffset", .int(upload.received))])
        }
        let partial = partialPath(id)
        if upload.fileLength == 0, !FileManager.default.fileExists(atPath: partial) {
            _ = FileManager.default.createFile(atPath: partial, contents: nil)
        }
        // A chunk re-sent short may leave bytes past the end: the file is its declared length.
        _ = truncate(partial, off_t(upload.fileLength))
        let md5 = try BoxShareFileSupport.digests(path: partial).md5
        if let claimed = request.uri.queryParameters.get("filehash"), !claimed.isEmpty, claimed.lowercased() != md5 {
            return .failure("File hash mismatch: uploaded data has MD5 \(md5), filehash is \(claimed)", 400, [])
        }
        // Keep the partial file until the move succeeds: move a copy-free hard link.
        let staging = tmpPath()
        guard link(partial, staging) == 0 else { throw BoxShareFileIOError("link \(partial): errno \(errno)") }
        switch try storeUpload(upload, from: staging, size: upload.received, md5: md5) {
        case .success(let u, let item): return .success(u, item)
        case .failure(let message, let code):
            try? FileManager.default.removeItem(atPath: staging)
            return .failure(message, code, [])
        }
    }
}
