import EvidenceCore
import Foundation
import Glibc
import Hummingbird

/// ShareFile uploads: `Items({folder})/Upload2` hands out an UploadSpecification whose
/// `ChunkUri`/`FinishUri` point at the (unauthenticated) upload server. See `ShareFileEmulator`.
extension ShareFileEmulator {
    func upload2(folder: String, _ request: Request, _ api: String) async throws -> Response {
        guard let body = try await jsonBody(request) else { return odataError(.badRequest, "BadRequest", "Invalid JSON body") }
        let method = body["Method"]?.stringValue ?? "Standard"
        guard method == "Standard" || method == "Threaded" else {
            return odataError(.badRequest, "BadRequest", "Unsupported upload method: \(method)")
        }
        guard case .bool(true)? = body["Raw"] else {
            return odataError(.badRequest, "BadRequest", "The sandbox takes raw uploads only: set \"Raw\": true")
        }
        guard let name = body["FileName"]?.stringValue else { return odataError(.badRequest, "BadRequest", "FileName is required") }
        if let problem = ShareFileJSON.nameProblem(name) { return odataError(.badRequest, "BadRequest", problem) }
        var length: Int64 = -1
        switch body["FileLength"] {
        case .int(let n)?: length = n
        case .double(let d)? where d == d.rounded(): length = Int64(d)
        default: break
        }
        let threaded = method == "Threaded"
        if threaded, length < 0 { return odataError(.badRequest, "BadRequest", "FileLength is required for Threaded uploads") }
        if !threaded, length > Self.standardLimit {
            return odataError(.badRequest, "BadRequest", "Standard uploads are limited to 128 MiB; use the Threaded method")
        }
        var overwrite = false
        if case .bool(let b)? = body["Overwrite"] { overwrite = b }
        let clientCreated = ShareFileJSON.parseDate(body["ClientCreatedDate"]?.stringValue)
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
            let origin = BoxShareFileSupport.origin(request)
            let query = "uploadid=\(upload.id)&batchid=\(upload.id)&userid=sandbox&zoneid=sandbox&raw=1"
            var resumeHash = ""
            if resume, upload.received > 0 {
                resumeHash = (try? BoxShareFileSupport.digests(path: partialPath(upload.id)).md5) ?? ""
            }
            return .json(.object([
                ("odata.metadata", .string("\(api)/$metadata#ShareFile.Api.Models.UploadSpecification@Element")),
                ("odata.type", .string("ShareFile.Api.Models.UploadSpecification")),
                ("Method", .string(upload.threaded ? "Threaded" : "Standard")),
                ("PrepareUri", .null),
                ("ChunkUri", .string("\(origin)/sharefile/upload/\(upload.id)/chunk?\(query)")),
                ("FinishUri", .string("\(origin)/sharefile/upload/\(upload.id)/finish?\(query)")),
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
            return uploadError("Invalid or expired upload id \(id)", code: 404)
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
        guard offset == upload.received else {
            await BoxShareFileSupport.drain(request)
            return uploadError("Invalid byteOffset \(offset): expected \(upload.received)", code: 409,
                               extra: [("expectedByteOffset", .int(upload.received))])
        }
        let received = try await BoxShareFileSupport.receive(request, to: tmp, limit: upload.fileLength - upload.received)
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
            guard var u = state.uploads[id] else { return self.uploadError("Invalid or expired upload id \(id)", code: 404) }
            guard u.received == offset else {
                return self.uploadError("Invalid byteOffset \(offset): expected \(u.received)", code: 409,
                                        extra: [("expectedByteOffset", .int(u.received))])
            }
            try self.append(tmp, to: self.partialPath(id), at: offset)
            u.received += received.size
            u.chunks = max(u.chunks, index + 1)
            state.uploads[id] = u
            return nil
        }
        return result ?? .json(.object([("error", .bool(false)), ("value", .null)]))
    }

    /// Appends the chunk at `offset` (truncating anything past it first: a crash between the
    /// write and the state update leaves bytes the state does not count).
    func append(_ chunk: String, to partial: String, at offset: Int64) throws {
        let fd = open(partial, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BoxShareFileIOError("open \(partial): errno \(errno)") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(offset)) == 0, lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
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
        let outcome: StoreOutcome = try store.update { state in
            guard state.uploads[upload.id] != nil else { return .failure("Invalid or expired upload id \(upload.id)", 404) }
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

    func finish(_ id: String, _ request: Request) async throws -> Response {
        await BoxShareFileSupport.drain(request)
        guard let upload = store.read({ $0.uploads[id] }) else {
            return uploadError("Invalid or expired upload id \(id)", code: 404)
        }
        guard upload.threaded else { return uploadError("Standard uploads finish with their single chunk", code: 400) }
        guard upload.received == upload.fileLength else {
            return uploadError("Upload incomplete: missing chunks (received \(upload.received) of \(upload.fileLength) bytes)", code: 400,
                               extra: [("expectedByteOffset", .int(upload.received))])
        }
        let partial = partialPath(id)
        if upload.fileLength == 0, !FileManager.default.fileExists(atPath: partial) {
            _ = FileManager.default.createFile(atPath: partial, contents: nil)
        }
        let md5 = try BoxShareFileSupport.digests(path: partial).md5
        if let claimed = request.uri.queryParameters.get("filehash"), !claimed.isEmpty, claimed.lowercased() != md5 {
            return uploadError("File hash mismatch: uploaded data has MD5 \(md5), filehash is \(claimed)", code: 400)
        }
        // Keep the partial file until the move succeeds: move a copy-free hard link.
        let staging = tmpPath()
        guard link(partial, staging) == 0 else { throw BoxShareFileIOError("link \(partial): errno \(errno)") }
        let outcome = try storeUpload(upload, from: staging, size: upload.received, md5: md5)
        if case .failure = outcome { try? FileManager.default.removeItem(atPath: staging) }
        return outcome.response(self)
    }
}
