import EvidenceCore
import Foundation

/// Box API 2.0 wire shapes (https://developer.box.com/reference/): requests we send and the
/// answers we read. Items carry their kind in `type`; an unknown type decodes to `.other`.
package enum BoxAPI {
    // MARK: Requests

    struct Parent: Codable, Equatable { var id: String }

    /// `POST /folders`, and the upload preflight `OPTIONS /files/content`.
    struct NameInFolder: Encodable { var name: String; var parent: Parent }

    /// The `attributes` part of a multipart upload.
    struct UploadAttributes: Encodable {
        var name: String
        var parent: Parent
        var content_modified_at: String?
    }

    /// `POST /files/upload_sessions`.
    struct SessionCreate: Encodable { var folder_id: String; var file_size: Int64; var file_name: String }

    /// One uploaded part, as Box lists it and as the commit names it.
    struct Part: Codable, Equatable {
        var part_id: String
        var offset: Int64
        var size: Int64
        var sha1: String

        enum Keys: String, CodingKey { case part_id, offset, size, sha1 }

        init(part_id: String, offset: Int64, size: Int64, sha1: String) {
            self.part_id = part_id; self.offset = offset; self.size = size; self.sha1 = sha1
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            part_id = try c.decode(LenientString.self, forKey: .part_id).value
            offset = try c.decode(LenientInt64.self, forKey: .offset).value
            size = try c.decode(LenientInt64.self, forKey: .size).value
            sha1 = try c.decodeIfPresent(String.self, forKey: .sha1) ?? ""
        }
    }

    /// `POST /files/upload_sessions/{id}/commit`.
    struct Commit: Encodable { var parts: [Part] }

    /// `PUT /files/{id}?fields=shared_link`.
    struct SharedLinkUpdate: Encodable { var shared_link: SharedLinkSettings }

    struct SharedLinkSettings: Encodable, Equatable {
        var access: Access
        var password: String?
        var unshared_at: String?
    }

    /// Who can open a shared link, from most to least open.
    enum Access: Codable, Equatable, Sendable, Comparable {
        case open, company, collaborators
        case other(String)

        var text: String {
            switch self {
            case .open: return "open"
            case .company: return "company"
            case .collaborators: return "collaborators"
            case .other(let s): return s
            }
        }

        init(text: String) { self = ["open": Self.open, "company": .company, "collaborators": .collaborators][text] ?? .other(text) }
        init(from decoder: any Decoder) throws { self.init(text: try decoder.singleValueContainer().decode(String.self)) }
        func encode(to encoder: any Encoder) throws { var c = encoder.singleValueContainer(); try c.encode(text) }

        /// How closed: an unknown level counts as the most open (never assumed strict).
        var strictness: Int {
            switch self {
            case .open, .other: return 0
            case .company: return 1
            case .collaborators: return 2
            }
        }

        static func < (a: Access, b: Access) -> Bool { a.strictness < b.strictness }
    }

    // MARK: Answers

    enum ItemType: Decodable, Equatable, CustomStringConvertible {
        case file, folder, webLink
        case other(String)

        init(from decoder: any Decoder) throws {
            let s = try decoder.singleValueContainer().decode(String.self)
            self = ["file": Self.file, "folder": .folder, "web_link": .webLink][s] ?? .other(s)
        }

        var description: String {
            switch self {
            case .file: return "file"
            case .folder: return "folder"
            case .webLink: return "web_link"
            case .other(let s): return s
            }
        }
    }

    /// A file or folder (full or mini): ids may come as strings or numbers.
    package struct Item: Decodable, Equatable {
        var type: ItemType
        var id: String
        var name: String
        var size: Int64?
        var sha1: String?

        enum Keys: String, CodingKey { case type, id, name, size, sha1 }

        package init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            type = try c.decode(ItemType.self, forKey: .type)
            id = try c.decode(LenientString.self, forKey: .id).value
            name = try c.decode(String.self, forKey: .name)
            size = try c.decodeIfPresent(LenientInt64.self, forKey: .size)?.value
            sha1 = try c.decodeIfPresent(String.self, forKey: .sha1)?.lowercased()
        }
    }

    /// A page of a folder listing or a part list (`limit`/`offset` paging).
    struct Page<Entry: Decodable>: Decodable {
        var entries: LossyList<Entry>
        var total_count: LenientInt64?
    }

    /// `POST /files/content` and a commit: the created file is the first entry.
    struct Files: Decodable { var entries: LossyList<Item> }

    struct User: Decodable { var id: LenientString?; var login: String?; var name: String? }

    struct Session: Decodable { var id: String; var part_size: LenientInt64 }

    /// The answer to an uploaded part: its id, and what Box says of its size and SHA-1 when it does.
    struct PartAnswer: Decodable {
        struct Uploaded: Decodable { var part_id: LenientString; var size: LenientInt64?; var sha1: String? }
        var part: Uploaded
    }

    struct SharedLink: Decodable {
        var url: String?
        var unshared_at: String?
        var is_password_enabled: Bool?
        var access: Access?
        var effective_access: Access?
    }

    struct FileSharedLink: Decodable { var shared_link: SharedLink? }

    /// Box's error body: `code`, `message` and, for a name in use, the holder in `context_info`
    /// (an object from the upload preflight, a list from folder creation).
    struct ErrorAnswer: Decodable {
        var code: Code?
        var message: String?
        var context_info: ContextInfo?

        enum Keys: String, CodingKey { case code, message, context_info }
        /// Each field on its own: one of an unexpected type must not hide the others.
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            code = try? c.decodeIfPresent(Code.self, forKey: .code)
            message = try? c.decodeIfPresent(String.self, forKey: .message)
            context_info = try? c.decodeIfPresent(ContextInfo.self, forKey: .context_info)
        }

        struct ContextInfo: Decodable {
            var conflicts: [Item]

            enum Keys: String, CodingKey { case conflicts }
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: Keys.self)
                if let one = try? c.decode(Item.self, forKey: .conflicts) { conflicts = [one]; return }
                conflicts = (try? c.decode(LossyList<Item>.self, forKey: .conflicts))?.elements ?? []
            }
        }

        /// The first holder of a name in use, when Box names one.
        var conflict: Item? { context_info?.conflicts.first }
    }

    /// The error codes we act on; any other is `.other(code)`.
    enum Code: Decodable, Equatable, CustomStringConvertible {
        case itemNameInUse, partsMismatch, sha1Mismatch
        /// 409 `operation_blocked_temporary` or `name_temporarily_reserved`: "try again later",
        /// not a name taken.
        case temporary(String)
        /// A `Digest`/`Content-MD5` check failed (`bad_digest`, `invalid_digest`, …): corrupted in transit.
        case digest(String)
        case other(String)

        init(text: String) {
            switch text {
            case "item_name_in_use": self = .itemNameInUse
            case "parts_mismatch": self = .partsMismatch
            case "sha1_mismatch": self = .sha1Mismatch
            case "operation_blocked_temporary", "name_temporarily_reserved": self = .temporary(text)
            default: self = text.contains("digest") ? .digest(text) : .other(text)
            }
        }

        init(from decoder: any Decoder) throws { self.init(text: try decoder.singleValueContainer().decode(String.self)) }

        var description: String {
            switch self {
            case .itemNameInUse: return "item_name_in_use"
            case .partsMismatch: return "parts_mismatch"
            case .sha1Mismatch: return "sha1_mismatch"
            case .digest(let s), .other(let s), .temporary(let s): return s
            }
        }

        /// Box asks to try again later (a 409 that is not a name taken).
        var isTemporary: Bool {
            if case .temporary = self { return true }
            return false
        }

        /// Box's hash of what arrived is not ours.
        var isCorruption: Bool {
            switch self {
            case .sha1Mismatch, .digest: return true
            default: return false
            }
        }
    }
}
