import EvidenceCore
import Foundation

/// ShareFile API v3 wire shapes (OData; https://api.sharefile.com/docs, the ShareFile-NET SDK's
/// models): requests we send and answers we read. An item's kind is its `odata.type`
/// (`ShareFile.Api.Models.Folder`, …); an unknown one decodes to `.other`.
package enum ShareFileAPI {
    // MARK: Requests

    struct FolderCreate: Encodable { var Name: String }

    /// `UploadRequestParams` as the SDK sends it: the size is `FileSize`.
    struct UploadRequest: Encodable {
        var Method: UploadMethod
        var Raw = true
        var FileName: String
        var FileSize: Int64
        var Overwrite = false
        var Unzip = false
    }

    enum UploadMethod: String, Encodable { case standard = "Standard", threaded = "Threaded" }

    struct ItemRef: Codable, Equatable { var Id: String }

    /// `POST /Shares`: a Send share of one item.
    struct ShareCreate: Encodable {
        var ShareType = ShareKind.send
        var Title: String
        var Items: [ItemRef]
        var RequireUserInfo = false
        var RequireLogin: Bool
        var ExpirationDate: String
    }

    // MARK: Unions

    /// `odata.type` of an item.
    enum ItemKind: Decodable, Equatable {
        case file, folder, symbolicLink, note, link
        case other(String)

        init(odataType: String) {
            let name = odataType.split(separator: ".").last.map(String.init) ?? odataType
            self = ["File": Self.file, "Folder": .folder, "SymbolicLink": .symbolicLink, "Note": .note, "Link": .link][name]
                ?? .other(odataType)
        }

        init(from decoder: any Decoder) throws { self.init(odataType: try decoder.singleValueContainer().decode(String.self)) }

        /// What holds other items (a symbolic link to a connector is walked like a folder).
        var isFolder: Bool { self == .folder || self == .symbolicLink }
    }

    enum ShareKind: Codable, Equatable {
        case send, request
        case other(String)

        var text: String {
            switch self {
            case .send: return "Send"
            case .request: return "Request"
            case .other(let s): return s
            }
        }

        init(from decoder: any Decoder) throws {
            let s = try decoder.singleValueContainer().decode(String.self)
            self = ["Send": Self.send, "Request": .request][s] ?? .other(s)
        }

        func encode(to encoder: any Encoder) throws { var c = encoder.singleValueContainer(); try c.encode(text) }
    }

    // MARK: Answers

    package struct Item: Decodable, Equatable {
        var id: String
        var kind: ItemKind
        var size: Int64?
        var md5: String?

        var isFolder: Bool { kind.isFolder }

        enum Keys: String, CodingKey { case Id, type = "odata.type", FileSizeBytes, Hash }

        package init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            id = try c.decode(String.self, forKey: .Id)
            kind = try c.decodeIfPresent(ItemKind.self, forKey: .type) ?? .other("")
            size = try c.decodeIfPresent(LenientInt64.self, forKey: .FileSizeBytes)?.value
            md5 = ShareFileAPI.md5(try c.decodeIfPresent(String.self, forKey: .Hash))
        }
    }

    /// A `Hash`/`md5` as a digest: 32 hex digits, lowercased; nil for anything else. Some storage
    /// zones store files without computing one and answer `""`: no digest, so the copy is read
    /// back and re-hashed, where comparing `""` with ours would call every copy corrupt and
    /// upload it again for ever.
    static func md5(_ text: String?) -> String? {
        guard let t = text?.trimmingCharacters(in: .whitespaces).lowercased(), t.count == 32,
              t.allSatisfy({ $0.isHexDigit }) else { return nil }
        return t
    }

    /// `UploadSpecification`.
    struct UploadSpec: Decodable { var ChunkUri: String; var FinishUri: String }

    /// The upload server's answer to a chunk or finish call (`fmt=json`/`respformat=json`):
    /// HTTP 200 even on failure, which `error` says.
    package struct UploadAnswer: Decodable {
        struct Stored: Decodable { var id: String?; var md5: String?; var size: LenientInt64? }
        var error: Bool?
        var errorMessage: String?
        var errorCode: LenientString?
        var expectedByteOffset: LenientInt64?
        var value: LossyList<Stored>?

        /// The byte offset the server says it expects (`expectedByteOffset`, or "expected N" in the message).
        package var expectedOffset: Int64? {
            if let n = expectedByteOffset { return n.value }
            guard let message = errorMessage, let r = message.range(of: "expected ") else { return nil }
            return Int64(message[r.upperBound...].prefix { $0.isNumber })
        }
    }

    struct Share: Decodable {
        var ShareType: ShareKind?
        var Uri: String?
        var ExpirationDate: String?
        var RequireLogin: Bool?
        var Items: LossyList<ItemRef>?
    }

    /// An OData feed page: `value` and the next page's address (`odata.nextLink`, or
    /// `@odata.nextLink` in OData 4 form), absent on the last page.
    struct Feed<Element: Decodable>: Decodable {
        var value: LossyList<Element>
        var nextLink: String?

        enum Keys: String, CodingKey { case value, v3 = "odata.nextLink", v4 = "@odata.nextLink" }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            value = try c.decodeIfPresent(LossyList<Element>.self, forKey: .value) ?? LossyList()
            nextLink = try c.decodeIfPresent(String.self, forKey: .v3) ?? c.decodeIfPresent(String.self, forKey: .v4)
        }
    }

    /// OData's error `{"code", "message": {"lang", "value"}}` (some answers put the message as a string).
    struct ErrorAnswer: Decodable {
        var code: String?
        var message: String?

        enum Keys: String, CodingKey { case code, message }
        struct Message: Decodable { var value: String? }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            code = try? c.decodeIfPresent(String.self, forKey: .code)
            if let text = try? c.decodeIfPresent(String.self, forKey: .message) { message = text }
            else { message = (try? c.decodeIfPresent(Message.self, forKey: .message))?.value }
        }
    }
}
