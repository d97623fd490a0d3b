import Foundation

/// Everything the Box emulation persists in `<state>/box/state.json`.
struct BoxState: Codable, Sendable {
    /// Files and folders by id; the root folder `"0"` ("All Files") is always present.
    var items: [String: BoxItem] = [:]
    var accessTokens: [String: BoxAccessToken] = [:]
    /// Valid (unused) refresh tokens → expiry (Box refresh tokens live 60 days, single use).
    var refreshTokens: [String: Double] = [:]
    var sessions: [String: BoxUploadSession] = [:]
}

struct BoxItem: Codable, Sendable {
    var id: String
    var isFolder: Bool
    var name: String
    var parentId: String?
    var sequenceId: Int
    var etag: Int
    var createdAt: Double
    var modifiedAt: Double
    var contentCreatedAt: Double
    var contentModifiedAt: Double
    var size: Int64
    var sha1: String?
    var versionId: String?
    var sharedLink: BoxSharedLink?
}

struct BoxSharedLink: Codable, Sendable {
    var token: String
    var access: String
    var password: String?
    var canDownload: Bool
}

struct BoxAccessToken: Codable, Sendable {
    var expiresAt: Double
    var generation: Int
    /// "user" or "enterprise": who `users/me` is.
    var subject: String
}

struct BoxUploadSession: Codable, Sendable {
    var id: String
    var folderId: String
    var fileName: String
    var fileSize: Int64
    var partSize: Int64
    var createdAt: Double
    var expiresAt: Double
    /// Parts by offset.
    var parts: [BoxPart]
    var commitAttempts: Int
    /// The file this session makes a new version of (`POST /files/{id}/upload_sessions`); nil
    /// for a new file.
    var fileId: String?
}

struct BoxPart: Codable, Sendable, Equatable {
    var partId: String
    var offset: Int64
    var size: Int64
    var sha1: String

    var json: JSONValue {
        .object([("part_id", .string(partId)), ("offset", .int(offset)), ("size", .int(size)), ("sha1", .string(sha1))])
    }
}

/// Box's JSON renderings of items (full objects, mini objects, `fields=` selections).
enum BoxJSON {
    static let helpURL = "http://developers.box.com/docs/#errors"

    /// Box writes times in Pacific time with an offset (`2026-05-07T03:04:05-07:00`).
    static func date(_ t: Double) -> JSONValue {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "America/Los_Angeles")
        f.dateFormat = "yyyy-MM-dd'T'HH:mm:ssxxx"
        return .string(f.string(from: Date(timeIntervalSince1970: t)))
    }

    static func user(_ subject: String) -> JSONValue {
        if subject == "enterprise" {
            return .object([("type", .string("user")), ("id", .string("20000002")),
                            ("name", .string("Sandbox Service Account")),
                            ("login", .string("AutomationUser_2000_sandbox@boxdevedition.com"))])
        }
        return .object([("type", .string("user")), ("id", .string("20000001")),
                        ("name", .string("Sandbox User")), ("login", .string("sandbox@example.org"))])
    }

    static func mini(_ item: BoxItem) -> JSONValue {
        if item.id == "0" {
            return .object([("type", .string("folder")), ("id", .string("0")), ("sequence_id", .null),
                            ("etag", .null), ("name", .string("All Files"))])
        }
        var m: [(String, JSONValue)] = [("type", .string(item.isFolder ? "folder" : "file")), ("id", .string(item.id))]
        if !item.isFolder {
            m.append(("file_version", .object([("type", .string("file_version")), ("id", .string(item.versionId ?? "")),
                                               ("sha1", .string(item.sha1 ?? ""))])))
        }
        m += [("sequence_id", .string(String(item.sequenceId))), ("etag", .string(String(item.etag))),
              ("name", .string(item.name))]
        if !item.isFolder { m.append(("sha1", .string(item.sha1 ?? ""))) }
        return .object(m)
    }

    /// The folders from the root down to `item`'s parent.
    static func pathCollection(_ item: BoxItem, in state: BoxState) -> JSONValue {
        var chain: [BoxItem] = []
        var next = item.parentId
        while let id = next, let parent = state.items[id] {
            chain.insert(parent, at: 0)
            next = parent.parentId
        }
        return .object([("total_count", .int(Int64(chain.count))),
                        ("entries", .array(chain.map { folderMini($0) }))])
    }

    /// A folder's mini object as it appears in `parent` and `path_collection` (no sha1).
    static func folderMini(_ item: BoxItem) -> JSONValue { mini(item) }

    static func sharedLink(_ link: BoxSharedLink?, item: BoxItem) -> JSONValue {
        guard let link else { return .null }
        let ext = (item.name as NSString).pathExtension
        return .object([
            ("url", .string("https://app.box.com/s/\(link.token)")),
            ("download_url", item.isFolder ? .null
                : .string("https://app.box.com/shared/static/\(link.token)" + (ext.isEmpty ? "" : ".\(ext)"))),
            ("vanity_url", .null),
            ("vanity_name", .null),
            ("effective_access", .string(link.access)),
            ("effective_permission", .string(link.canDownload ? "can_download" : "can_preview")),
            ("is_password_enabled", .bool(link.password != nil)),
            ("unshared_at", .null),
            ("download_count", .int(0)),
            ("preview_count", .int(0)),
            ("access", .string(link.access)),
            ("permissions", .object([("can_preview", .bool(true)), ("can_download", .bool(link.canDownload)),
                                     ("can_edit", .bool(false))])),
        ])
    }

    /// The full object for a file or folder (what `GET /files/{id}` answers without `fields`).
    static func full(_ item: BoxItem, in state: BoxState, owner: String = "user",
                     collection: JSONValue? = nil) -> [(String, JSONValue)] {
        let user = BoxJSON.user(owner)
        let isRoot = item.id == "0"
        var m: [(String, JSONValue)] = [("type", .string(item.isFolder ? "folder" : "file")), ("id", .string(item.id))]
        if !item.isFolder {
            m.append(("file_version", .object([("type", .string("file_version")), ("id", .string(item.versionId ?? "")),
                                               ("sha1", .string(item.sha1 ?? ""))])))
        }
        m += [
            ("sequence_id", isRoot ? .null : .string(String(item.sequenceId))),
            ("etag", isRoot ? .null : .string(String(item.etag))),
        ]
        if !item.isFolder { m.append(("sha1", .string(item.sha1 ?? ""))) }
        m += [
            ("name", .string(isRoot ? "All Files" : item.name)),
            ("description", .string("")),
            ("size", .int(item.isFolder ? folderSize(item.id, in: state) : item.size)),
            ("path_collection", pathCollection(item, in: state)),
            ("created_at", isRoot ? .null : date(item.createdAt)),
            ("modified_at", isRoot ? .null : date(item.modifiedAt)),
            ("trashed_at", .null),
            ("purged_at", .null),
            ("content_created_at", isRoot ? .null : date(item.contentCreatedAt)),
            ("content_modified_at", isRoot ? .null : date(item.contentModifiedAt)),
            ("created_by", isRoot ? .object([("type", .string("user")), ("id", .string("")), ("name", .string("")), ("login", .string(""))]) : user),
            ("modified_by", user),
            ("owned_by", user),
            ("shared_link", sharedLink(item.sharedLink, item: item)),
        ]
        if item.isFolder { m.append(("folder_upload_email", .null)) }
        m += [
            ("parent", item.parentId.flatMap { state.items[$0] }.map { folderMini($0) } ?? .null),
            ("item_status", .string("active")),
        ]
        if let collection { m.append(("item_collection", collection)) }
        return m
    }

    static func folderSize(_ id: String, in state: BoxState) -> Int64 {
        state.items.values.filter { $0.parentId == id }.reduce(0) { $0 + ($1.isFolder ? folderSize($1.id, in: state) : $1.size) }
    }

    /// Box answers a `fields=` request with `type`, `id`, `etag` plus exactly the fields asked for.
    static func select(_ members: [(String, JSONValue)], fields: Set<String>?) -> JSONValue {
        guard let fields else { return .object(members) }
        let keep = fields.union(["type", "id", "etag"])
        return .object(members.filter { keep.contains($0.0) })
    }

    /// The children of a folder in Box's default order (folders first, then by name).
    static func children(of id: String, in state: BoxState) -> [BoxItem] {
        state.items.values.filter { $0.parentId == id }.sorted {
            if $0.isFolder != $1.isFolder { return $0.isFolder }
            let a = $0.name.lowercased(), b = $1.name.lowercased()
            return a != b ? a < b : $0.id < $1.id
        }
    }

    /// One entry of `item_collection` / `…/items`: the mini object, or a `fields=` selection.
    static func entry(_ item: BoxItem, in state: BoxState, fields: Set<String>?) -> JSONValue {
        guard let fields else { return mini(item) }
        return select(full(item, in: state), fields: fields)
    }

    static func parseFields(_ text: String?) -> Set<String>? {
        guard let text, !text.isEmpty else { return nil }
        return Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }

    /// `/name/of/parents/file` from the root, for the upload counters.
    static func path(of item: BoxItem, in state: BoxState) -> String {
        var names = [item.name]
        var next = item.parentId
        while let id = next, id != "0", let parent = state.items[id] {
            names.insert(parent.name, at: 0)
            next = parent.parentId
        }
        return "/" + names.joined(separator: "/")
    }

    /// Box's name rules: 1–255 characters, no `/` or `\`, not `.` or `..`, no leading or
    /// trailing spaces, no non-printable ASCII. Returns the error code and message, or nil.
    static func nameProblem(_ name: String) -> (code: String, message: String)? {
        if name.count > 255 { return ("item_name_too_long", "Item name too long") }
        if name.isEmpty || name == "." || name == ".." || name.contains("/") || name.contains("\\")
            || name.hasPrefix(" ") || name.hasSuffix(" ")
            || name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return ("item_name_invalid", "Item name invalid")
        }
        return nil
    }

    /// The item in folder `parentId` whose name equals `name` ignoring case (Box names are
    /// case-insensitive; files and folders share one namespace).
    static func sibling(named name: String, in parentId: String, state: BoxState) -> BoxItem? {
        let key = name.lowercased()
        return state.items.values.first { $0.parentId == parentId && $0.name.lowercased() == key }
    }
}
