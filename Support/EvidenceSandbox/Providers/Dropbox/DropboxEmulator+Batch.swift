import Foundation
import Hummingbird

/// `files/upload_session/finish_batch_v2` (an RPC on the API host): commits up to 1,000
/// closed upload sessions in one write, answering synchronously `{"entries": […]}` in the
/// order asked, each `{".tag":"success", …file metadata}` or
/// `{".tag":"failure","failure":UploadSessionFinishError}`. rclone's default `batch_mode =
/// sync` finishes every upload this way. Each session must have been closed (the last
/// `append_v2` with `close=true`), else `lookup_failed/not_closed`; a wrong offset is
/// `lookup_failed/incorrect_offset`, an unknown session `lookup_failed/not_found`; a conflict
/// keeps the session (it can be finished elsewhere), as `finish` does.
extension DropboxEmulator {
    static let maxBatchEntries = 1000

    func finishBatch(_ arg: JSONValue) async throws -> Response {
        guard let list = arg["entries"], list != .null else { throw ArgError(message: "request body: missing required field 'entries'") }
        guard case .array(let items) = list else { throw ArgError(message: "request body: entries: expected list, got \(Self.jsonKind(list))") }
        guard items.count <= Self.maxBatchEntries else {
            throw ArgError(message: "request body: entries: list has \(items.count) items, more than the maximum \(Self.maxBatchEntries)")
        }
        // Every argument is checked before anything is committed: a malformed entry fails the call.
        var parsed: [(Cursor, CommitArgs)] = []
        for (i, item) in items.enumerated() {
            let prefix = "request body: entries[\(i)]"
            guard case .object = item else { throw ArgError(message: "\(prefix): expected object, got \(Self.jsonKind(item))") }
            guard let commit = item["commit"], case .object = commit else { throw ArgError(message: "\(prefix): missing required field 'commit'") }
            let args = try commitArgs(commit, prefix: "\(prefix): commit")
            if args.target == .root { throw ArgError(message: "\(prefix): commit: path: The root folder is unsupported.") }
            parsed.append((try cursor(item, prefix: prefix), args))
        }
        var results: [JSONValue] = []
        for (cur, commit) in parsed { results.append(try await finishOne(cur, commit)) }
        return .json(.object([("entries", .array(results))]))
    }

    private func finishOne(_ cur: Cursor, _ commit: CommitArgs) async throws -> JSONValue {
        func failure(_ tag: String, _ inner: JSONValue) -> JSONValue {
            .object([(".tag", .string("failure")), ("failure", DropboxWire.tag(tag, [(tag, inner)]))])
        }
        let now = env.clock()
        let session: DropboxSession
        switch await store.beginAppend(cur.sessionID, offset: cur.offset, now: now, allowClosed: true) {
        case .ready(let s): session = s
        case .notFound: return failure("lookup_failed", DropboxWire.tag("not_found"))
        case .closed: return failure("lookup_failed", DropboxWire.tag("closed"))
        case .incorrectOffset(let n): return failure("lookup_failed", DropboxWire.tag("incorrect_offset", [("correct_offset", .int(n))]))
        }
        guard session.closed else {
            await store.abortAppend(session.id)
            return failure("lookup_failed", DropboxWire.tag("not_closed"))
        }
        func keep(_ inner: JSONValue) async throws -> JSONValue {
            _ = try await store.endAppend(session.id, added: 0, blocks: [], close: true)
            return failure("path", inner)
        }
        guard let parts = await writeTarget(commit.target) else {
            if case .id = commit.target { return try await keep(DropboxWire.tag("not_found")) }
            return try await keep(DropboxWire.tag("malformed_path"))
        }
        let path = store.sessionPath(session.id)
        switch try await store.commitFile(parts, mode: commit.mode, autorename: commit.autorename, strictConflict: commit.strictConflict,
                                          clientModified: commit.clientModified, temp: path, size: session.offset,
                                          contentHash: try sessionContentHash(path, earlier: session.blocks, offset: session.offset, last: []),
                                          now: now) {
        case .stored(let e):
            try await store.removeSession(session.id)
            env.counters.recordUpload(provider: "dropbox", path: e.pathDisplay)
            return success(e)
        case .unchanged(let e):
            try await store.removeSession(session.id)
            return success(e)
        case .conflict(let what):
            return try await keep(DropboxWire.tag("conflict", [("conflict", DropboxWire.tag(what))]))
        case .disallowedName:
            return try await keep(DropboxWire.tag("disallowed_name"))
        }
    }

    /// `{".tag":"success", …}`: the file's metadata with the tag in front.
    private func success(_ e: DropboxEntry) -> JSONValue {
        guard case .object(let fields) = metadata(e, tagged: false) else { return .null }
        return .object([(".tag", .string("success"))] + fields)
    }
}
