import Foundation

/// Everything the ShareFile emulation persists in `<state>/sharefile/state.json`.
struct ShareFileState: Codable, Sendable {
    var homeId: String = ""
    var items: [String: ShareFileItem] = [:]
    var accessTokens: [String: ShareFileAccessToken] = [:]
    /// ShareFile refresh tokens stay valid when used (not rotated).
    var refreshTokens: Set<String> = []
    var uploads: [String: ShareFileUpload] = [:]
    var shares: [String: ShareFileShare] = [:]
    /// Share ids in creation order.
    var shareOrder: [String] = []
}

struct ShareFileItem: Codable, Sendable {
    var id: String
    var isFolder: Bool
    var name: String
    var parentId: String?
    var description: String
    var size: Int64
    var md5: String?
    var createdAt: Double
    var modifiedAt: Double
    var clientCreatedAt: Double?
}

struct ShareFileAccessToken: Codable, Sendable {
    var expiresAt: Double
    var generation: Int
}

struct ShareFileUpload: Codable, Sendable {
    var id: String
    var parentId: String
    var fileName: String
    var fileLength: Int64
    var threaded: Bool
    var overwrite: Bool
    var clientCreatedAt: Double?
    /// Bytes held from offset 0 without a gap (what a resume starts after).
    var received: Int64
    /// Chunks wholly inside `received` (the index a resume starts at).
    var chunks: Int
    var createdAt: Double
    /// Every chunk of a threaded upload held so far: they arrive in any order (nil in state
    /// saved before chunks were kept: the chunks then are the `received` prefix).
    var pieces: [ShareFilePiece]?

    /// Records a chunk and recomputes `received` and `chunks` from all of them.
    mutating func add(_ piece: ShareFilePiece) {
        var all = (pieces ?? []).filter { $0.offset != piece.offset }
        all.append(piece)
        all.sort { $0.offset < $1.offset }
        pieces = all
        var end: Int64 = 0
        var whole = 0
        for p in all where p.offset <= end {
            end = max(end, p.offset + p.size)
            whole += 1
        }
        received = end
        chunks = whole
    }
}

/// One chunk of a threaded upload: where it sits in the file.
struct ShareFilePiece: Codable, Sendable {
    var index: Int
    var offset: Int64
    var size: Int64
}

struct ShareFileShare: Codable, Sendable {
    var id: String
    var title: String
    var itemIds: [String]
    var expiration: String
    var requireLogin: Bool
    var requireUserInfo: Bool
    var createdAt: Double
}

/// ShareFile's OData renderings.
enum ShareFileJSON {
    static let neverExpires = "9999-12-31T23:59:59.9999999Z"

    /// ShareFile dates: UTC with milliseconds (`2026-05-07T10:11:12.345Z`).
    static func date(_ t: Double) -> JSONValue {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
        return .string(f.string(from: Date(timeIntervalSince1970: t)))
    }

    static func parseDate(_ text: String?) -> Double? {
        guard let text else { return nil }
        let f = ISO8601DateFormatter()
        if let d = f.date(from: text) { return d.timeIntervalSince1970 }
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text)?.timeIntervalSince1970
    }

    static func modelType(_ item: ShareFileItem) -> String {
        item.isFolder ? "ShareFile.Api.Models.Folder" : "ShareFile.Api.Models.File"
    }

    /// An item; `metadata` adds `odata.metadata` (single-item answers carry it, collection members don't).
    static func item(_ item: ShareFileItem, in state: ShareFileState, api: String, metadata: Bool) -> JSONValue {
        var m: [(String, JSONValue)] = []
        if metadata { m.append(("odata.metadata", .string("\(api)/$metadata#Items/\(modelType(item))@Element"))) }
        m.append(("odata.type", .string(modelType(item))))
        let size = item.isFolder ? folderSize(item.id, in: state) : item.size
        m += [
            ("Id", .string(item.id)),
            ("Name", .string(item.id == state.homeId ? "My Files & Folders" : item.name)),
            ("FileName", .string(item.id == state.homeId ? "My Files & Folders" : item.name)),
            ("FileSizeBytes", .int(size)),
        ]
        if !item.isFolder { m.append(("Hash", .string(item.md5 ?? ""))) }
        m += [
            ("CreationDate", date(item.createdAt)),
            ("ProgenyEditDate", date(item.modifiedAt)),
            ("ClientCreatedDate", date(item.clientCreatedAt ?? item.createdAt)),
            ("ClientModifiedDate", date(item.clientCreatedAt ?? item.modifiedAt)),
            ("ExpirationDate", .string(neverExpires)),
            ("Description", .string(item.description)),
            ("IsHidden", .bool(false)),
            ("CreatorNameShort", .string("S. User")),
            ("CreatorFirstName", .string("Sandbox")),
            ("CreatorLastName", .string("User")),
        ]
        if item.isFolder {
            let children = state.items.values.filter { $0.parentId == item.id }
            m += [
                ("FileCount", .int(Int64(children.filter { !$0.isFolder }.count))),
                ("IsRoot", .bool(false)),
            ]
        }
        if let parentId = item.parentId {
            m.append(("Parent", .object([("Id", .string(parentId)), ("url", .string("\(api)/Items(\(parentId))"))])))
        }
        m.append(("url", .string("\(api)/Items(\(item.id))")))
        return .object(m)
    }

    static func folderSize(_ id: String, in state: ShareFileState) -> Int64 {
        state.items.values.filter { $0.parentId == id }.reduce(0) { $0 + ($1.isFolder ? folderSize($1.id, in: state) : $1.size) }
    }

    static func children(of id: String, in state: ShareFileState) -> [ShareFileItem] {
        state.items.values.filter { $0.parentId == id }.sorted {
            if $0.isFolder != $1.isFolder { return $0.isFolder }
            let a = $0.name.lowercased(), b = $1.name.lowercased()
            return a != b ? a < b : $0.id < $1.id
        }
    }

    /// ShareFile names are case-insensitive within a folder.
    static func child(named name: String, in parentId: String, state: ShareFileState) -> ShareFileItem? {
        let key = name.lowercased()
        return state.items.values.first { $0.parentId == parentId && $0.name.lowercased() == key }
    }

    /// ShareFile refuses `\ / : * ? " < > |` in names, empty names, names over 255 characters,
    /// and names ending in a space or a period.
    static func nameProblem(_ name: String) -> String? {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return "Name cannot be empty" }
        if name.count > 255 { return "Name is too long (maximum 255 characters)" }
        if let bad = name.first(where: { "\\/:*?\"<>|".contains($0) }) {
            return "The name '\(name)' contains an invalid character: \(bad). Names cannot contain \\ / : * ? \" < > |"
        }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 }) { return "The name '\(name)' contains a control character" }
        if name.hasSuffix(" ") || name.hasSuffix(".") { return "Names cannot end with a space or a period" }
        return nil
    }

    /// `/a/b/file` below home, for the upload counters.
    static func path(of item: ShareFileItem, in state: ShareFileState) -> String {
        var names = [item.name]
        var next = item.parentId
        while let id = next, id != state.homeId, let parent = state.items[id] {
            names.insert(parent.name, at: 0)
            next = parent.parentId
        }
        return "/" + names.joined(separator: "/")
    }

    static func share(_ s: ShareFileShare, in state: ShareFileState, api: String, metadata: Bool) -> JSONValue {
        var m: [(String, JSONValue)] = []
        if metadata { m.append(("odata.metadata", .string("\(api)/$metadata#Shares/ShareFile.Api.Models.Share@Element"))) }
        m += [
            ("odata.type", .string("ShareFile.Api.Models.Share")),
            ("Id", .string(s.id)),
            ("Uri", .string("https://sandbox.sharefile.com/d-\(s.id)")),
            ("ShareType", .string("Send")),
            ("Title", .string(s.title)),
            ("HasSentMessage", .bool(false)),
            ("SentMessageTitle", .string("")),
            ("RequireLogin", .bool(s.requireLogin)),
            ("RequireUserInfo", .bool(s.requireUserInfo)),
            ("CreationDate", date(s.createdAt)),
            ("ExpirationDate", .string(s.expiration)),
            ("TotalDownloads", .int(0)),
            ("IsViewOnly", .bool(false)),
            ("IsArchived", .bool(false)),
            ("Items", .array(s.itemIds.compactMap { state.items[$0] }.map { item($0, in: state, api: api, metadata: false) })),
            ("url", .string("\(api)/Shares(\(s.id))")),
        ]
        return .object(m)
    }
}
