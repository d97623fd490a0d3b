import EvidenceCore
import Foundation

/// Dropbox API v2 wire shapes (https://www.dropbox.com/developers/documentation/http/documentation):
/// the arguments we send (JSON body of RPC calls, `Dropbox-API-Arg` of content calls) and the
/// answers we read. Dropbox's unions carry their case in `.tag`; an unknown tag decodes to
/// `.other`, never a failure.
package enum DropboxAPI {
    // MARK: Arguments

    struct PathArg: Encodable { var path: String }

    struct CreateFolderArg: Encodable { var path: String; var autorename = false }

    struct ListLinksArg: Encodable { var path: String; var direct_only = true }

    /// `files/upload` and the `commit` of `upload_session/finish`: never overwrite or rename.
    struct CommitInfo: Encodable {
        var path: String
        var mode = "add"
        var autorename = false
        var mute = true
        var strict_conflict = true
    }

    /// `files/upload`: the commit info and the whole file's `content_hash`.
    struct UploadArg: Encodable {
        var commit: CommitInfo
        var content_hash: String

        func encode(to encoder: any Encoder) throws {
            try commit.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(content_hash, forKey: .content_hash)
        }

        enum Keys: String, CodingKey { case content_hash }
    }

    struct Cursor: Codable, Equatable { var session_id: String; var offset: Int64 }

    struct SessionStartArg: Encodable { var close = false; var content_hash: String }

    struct AppendArg: Encodable { var cursor: Cursor; var close = false; var content_hash: String }

    struct FinishArg: Encodable { var cursor: Cursor; var commit: CommitInfo; var content_hash: String }

    /// `sharing/create_shared_link_with_settings`.
    struct CreateLinkArg: Encodable { var path: String; var settings: LinkSettings }

    /// Only the settings asked are sent (nil fields are left out).
    struct LinkSettings: Encodable, Equatable {
        var requested_visibility: Visibility?
        var audience: Audience?
        var link_password: String?
        var expires: String?

        /// The strictest link: for no one but those who already have access.
        static let membersOnly = LinkSettings(audience: .noOne)
    }

    // MARK: Unions

    /// `RequestedVisibility` / `ResolvedVisibility`.
    enum Visibility: Codable, Equatable, Sendable {
        case `public`, teamOnly, password, teamAndPassword, sharedFolderOnly, noOne
        case other(String)

        var tag: String {
            switch self {
            case .public: return "public"
            case .teamOnly: return "team_only"
            case .password: return "password"
            case .teamAndPassword: return "team_and_password"
            case .sharedFolderOnly: return "shared_folder_only"
            case .noOne: return "no_one"
            case .other(let s): return s
            }
        }

        init(tag: String) {
            self = [Self.public, .teamOnly, .password, .teamAndPassword, .sharedFolderOnly, .noOne]
                .first { $0.tag == tag } ?? .other(tag)
        }

        init(from decoder: any Decoder) throws { self.init(tag: try Tagged(from: decoder).tag) }
        func encode(to encoder: any Encoder) throws { var c = encoder.singleValueContainer(); try c.encode(tag) }
    }

    /// `LinkAudience`.
    enum Audience: Codable, Equatable, Sendable {
        case `public`, team, noOne, password, members
        case other(String)

        var tag: String {
            switch self {
            case .public: return "public"
            case .team: return "team"
            case .noOne: return "no_one"
            case .password: return "password"
            case .members: return "members"
            case .other(let s): return s
            }
        }

        init(tag: String) { self = [Self.public, .team, .noOne, .password, .members].first { $0.tag == tag } ?? .other(tag) }
        init(from decoder: any Decoder) throws { self.init(tag: try Tagged(from: decoder).tag) }
        func encode(to encoder: any Encoder) throws { var c = encoder.singleValueContainer(); try c.encode(tag) }
    }

    /// A union value as Dropbox writes it in answers: `{".tag": "…", …}` (or, for a void
    /// case in arguments, the bare string).
    struct Tagged: Decodable {
        var tag: String
        enum Keys: String, CodingKey { case tag = ".tag" }
        init(from decoder: any Decoder) throws {
            if let s = try? decoder.singleValueContainer().decode(String.self) { tag = s; return }
            tag = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .tag)
        }
    }

    // MARK: Answers

    struct Account: Decodable {
        struct Name: Decodable { var display_name: String? }
        var account_id: String?
        var email: String?
        var name: Name?
    }

    /// `Metadata`: a file, a folder or a deleted entry.
    struct Metadata: Decodable {
        enum Kind: Equatable { case file, folder, deleted, other(String) }
        var kind: Kind
        var id: String?
        var size: LenientInt64?
        var content_hash: String?

        enum Keys: String, CodingKey { case tag = ".tag", id, size, content_hash }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            let tag = try c.decodeIfPresent(String.self, forKey: .tag) ?? ""
            kind = ["file": .file, "folder": .folder, "deleted": .deleted][tag] ?? .other(tag)
            id = try c.decodeIfPresent(String.self, forKey: .id)
            size = try c.decodeIfPresent(LenientInt64.self, forKey: .size)
            content_hash = try c.decodeIfPresent(String.self, forKey: .content_hash)
        }
    }

    struct SessionStart: Decodable { var session_id: String }

    struct LinkPermissions: Decodable {
        var resolved_visibility: Visibility?
        var effective_audience: Audience?
        var require_password: Bool?
    }

    struct SharedLink: Decodable {
        var url: String?
        var expires: String?
        var link_permissions: LinkPermissions?
    }

    struct LinkList: Decodable { var links: LossyList<SharedLink>? }

    /// A route error (HTTP 409): `error_summary` for people and logs, `error` the union.
    struct RouteError: Decodable {
        var error_summary: String?
        var error: ErrorDetail?

        enum Keys: String, CodingKey { case error_summary, error }
        /// Each field on its own: a union we cannot read must not hide the summary (which
        /// alone says, e.g., that nothing was written and we should ask again).
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            error_summary = try? c.decodeIfPresent(String.self, forKey: .error_summary)
            error = try? c.decodeIfPresent(ErrorDetail.self, forKey: .error)
        }

        var summary: ErrorSummary { ErrorSummary(error_summary ?? "") }
    }

    /// The route errors whose details we act on; any other is `.other(tag)` (its summary says enough).
    enum ErrorDetail: Decodable {
        /// `upload_session/append_v2`: the session holds `correct_offset` bytes.
        case incorrectOffset(correct: Int64)
        /// `upload_session/finish`: the session lookup failed, for `reason`.
        case lookupFailed(LookupError)
        /// `sharing/create_shared_link_with_settings`: there is one already (metadata when Dropbox says).
        case sharedLinkAlreadyExists(SharedLink?)
        case other(String)

        enum Keys: String, CodingKey {
            case tag = ".tag", correct_offset, lookup_failed, shared_link_already_exists
        }

        struct Existing: Decodable { var metadata: SharedLink? }

        init(from decoder: any Decoder) throws {
            let tag = try Tagged(from: decoder).tag
            let c = try? decoder.container(keyedBy: Keys.self)
            switch tag {
            case "incorrect_offset":
                guard let n = try? c?.decodeIfPresent(LenientInt64.self, forKey: .correct_offset) else { self = .other(tag); return }
                self = .incorrectOffset(correct: n.value)
            case "lookup_failed":
                self = .lookupFailed((try? c?.decodeIfPresent(LookupError.self, forKey: .lookup_failed)) ?? .other(""))
            case "shared_link_already_exists":
                self = .sharedLinkAlreadyExists((try? c?.decodeIfPresent(Existing.self, forKey: .shared_link_already_exists))?.metadata)
            default:
                self = .other(tag)
            }
        }
    }

    /// `UploadSessionLookupError`.
    enum LookupError: Decodable {
        case incorrectOffset(correct: Int64)
        case notFound
        case other(String)

        enum Keys: String, CodingKey { case correct_offset }
        init(from decoder: any Decoder) throws {
            let tag = try Tagged(from: decoder).tag
            switch tag {
            case "incorrect_offset":
                guard let n = try? decoder.container(keyedBy: Keys.self).decode(LenientInt64.self, forKey: .correct_offset) else {
                    self = .other(tag); return
                }
                self = .incorrectOffset(correct: n.value)
            case "not_found": self = .notFound
            default: self = .other(tag)
            }
        }
    }

    /// An `error_summary` (`path/conflict/folder/..`, `incorrect_offset/..`) as its tags, outermost
    /// first: the union path of the error, which is what decides how we treat it.
    struct ErrorSummary: Equatable {
        enum Tag: Equatable {
            case path, notFound, conflict, folder, file, incorrectOffset, lookupFailed, settingsError, notAuthorized
            case sharedLinkAlreadyExists, contentHashMismatch, tooManyWriteOperations, tooManyRequests
            case other(String)

            static let known: [String: Tag] = [
                "path": .path, "not_found": .notFound, "conflict": .conflict, "folder": .folder, "file": .file,
                "incorrect_offset": .incorrectOffset, "lookup_failed": .lookupFailed, "settings_error": .settingsError,
                "not_authorized": .notAuthorized, "shared_link_already_exists": .sharedLinkAlreadyExists,
                "content_hash_mismatch": .contentHashMismatch, "too_many_write_operations": .tooManyWriteOperations,
                "too_many_requests": .tooManyRequests,
            ]

            init(_ text: Substring) { self = Self.known[String(text)] ?? .other(String(text)) }
        }

        /// The summary as Dropbox wrote it (for messages).
        var text: String
        var tags: [Tag]

        init(_ text: String) {
            self.text = text
            // The trailing `..` / `...` is a request id separator, not a tag.
            tags = text.split(separator: "/").filter { !$0.allSatisfy { $0 == "." } }.map(Tag.init)
        }

        var isEmpty: Bool { tags.isEmpty }
        func starts(with prefix: Tag...) -> Bool { tags.starts(with: prefix) }
        func contains(_ tag: Tag) -> Bool { tags.contains(tag) }

        /// Dropbox's "nothing was done, ask again" wherever it sits in the union path.
        var isBusy: Bool { contains(.tooManyWriteOperations) || contains(.tooManyRequests) }

        /// The first two tags (`settings_error/not_authorized`), for a message.
        var reason: String { text.split(separator: "/").prefix(2).joined(separator: "/") }
    }
}
