import Foundation
import Hummingbird

/// `files/list_folder` and `files/list_folder/continue`, as rclone lists and `lsjson` reads
/// hashes: entries are tagged metadata (`content_hash` on files), at most `limit` a page
/// (1…2000, default 2000 here), the rest behind `cursor` + `has_more`. The root is `""`;
/// `recursive` lists everything below and, as Dropbox does, the folder itself first.
/// Errors are the `ListFolderError` union: `path/not_found`, `path/not_folder`,
/// `path/malformed_path`; an unreadable cursor is a 400, a cursor whose folder is gone
/// `path/not_found` (`ListFolderContinueError.path`).
extension DropboxEmulator {
    static let listLimit: Int64 = 2000

    func listFolder(_ arg: JSONValue) async throws -> Response {
        let p = try pathArg(arg)
        let recursive = try bool(arg, "recursive")
        var limit = Self.listLimit
        if let v = arg["limit"], v != .null {
            guard case .int(let n) = v, (1...Self.listLimit).contains(n) else {
                throw ArgError(message: "request body: limit: \(v) is not within range [1, \(Self.listLimit)]")
            }
            limit = n
        }
        for key in ["include_deleted", "include_has_explicit_shared_members", "include_mounted_folders",
                    "include_non_downloadable_files"] {
            _ = try bool(arg, key)
        }
        let lower: String
        var listing: ListCursor
        switch p {
        case .root: lower = ""
        case .malformed: return DropboxWire.nested("path", "malformed_path")
        case .id, .path:
            guard let e = await lookup(p) else { return DropboxWire.nested("path", "not_found") }
            guard e.folder else { return DropboxWire.nested("path", "not_folder") }
            lower = e.pathLower
        }
        listing = ListCursor(folder: lower, recursive: recursive, offset: 0, limit: limit)
        return await page(listing)
    }

    func listFolderContinue(_ arg: JSONValue) async throws -> Response {
        guard let text = try string(arg, "cursor"), let cursor = ListCursor(text) else {
            throw ArgError(message: "request body: cursor: invalid cursor")
        }
        if !cursor.folder.isEmpty {
            guard let e = await store.entry(lower: cursor.folder), e.folder else { return DropboxWire.nested("path", "not_found") }
        }
        return await page(cursor)
    }

    /// One page from `cursor`'s offset; the cursor returned points after it.
    private func page(_ cursor: ListCursor) async -> Response {
        var entries = await store.listing(under: cursor.folder, recursive: cursor.recursive)
        if cursor.recursive, !cursor.folder.isEmpty, let me = await store.entry(lower: cursor.folder) {
            entries.insert(me, at: 0)
        }
        let start = min(Int(cursor.offset), entries.count)
        let end = min(start + Int(cursor.limit), entries.count)
        var next = cursor
        next.offset = Int64(end)
        return .json(.object([
            ("entries", .array(entries[start..<end].map { metadata($0, tagged: true) })),
            ("cursor", .string(next.text)),
            ("has_more", .bool(end < entries.count)),
        ]))
    }

    /// Where a listing stands: opaque to clients (base64url of `folder|recursive|offset|limit`).
    struct ListCursor {
        var folder: String
        var recursive: Bool
        var offset: Int64
        var limit: Int64

        init(folder: String, recursive: Bool, offset: Int64, limit: Int64) {
            self.folder = folder
            self.recursive = recursive
            self.offset = offset
            self.limit = limit
        }

        init?(_ text: String) {
            var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while b64.count % 4 != 0 { b64 += "=" }
            guard let data = Data(base64Encoded: b64), let plain = String(data: data, encoding: .utf8) else { return nil }
            let parts = plain.split(separator: "|", omittingEmptySubsequences: false)
            guard parts.count >= 4, let offset = Int64(parts[parts.count - 2]), let limit = Int64(parts[parts.count - 1]),
                  parts[parts.count - 3] == "0" || parts[parts.count - 3] == "1" else { return nil }
            self.init(folder: parts[..<(parts.count - 3)].joined(separator: "|"), recursive: parts[parts.count - 3] == "1",
                      offset: offset, limit: limit)
        }

        var text: String {
            Data("\(folder)|\(recursive ? 1 : 0)|\(offset)|\(limit)".utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
    }
}
