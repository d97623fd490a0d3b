@testable import EvidenceArchive
import EvidenceCore
import Foundation
import Testing

/// The typed wire models read what the services send, including tags they may add tomorrow.
@Suite("Provider wire models")
struct WireModelTests {
    func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try #require(WireJSON.decode(type, from: Data(json.utf8)), "\(json)")
    }

    @Test("a Dropbox error summary reads as its union path: write contention is seen wherever it sits")
    func dropboxSummary() {
        let s = DropboxAPI.ErrorSummary("path/too_many_write_operations/...")
        #expect(s.tags == [.path, .tooManyWriteOperations] && s.isBusy)
        #expect(DropboxAPI.ErrorSummary("path/conflict/folder/..").starts(with: .path, .conflict, .folder))
        #expect(!DropboxAPI.ErrorSummary("path/not_found/..").starts(with: .notFound))
        #expect(DropboxAPI.ErrorSummary("settings_error/not_authorized/..").reason == "settings_error/not_authorized")
        #expect(DropboxAPI.ErrorSummary("brand_new_error/..").tags == [.other("brand_new_error")])
    }

    @Test("Dropbox unions: known tags carry their details, an unknown tag is .other, never a failure")
    func dropboxUnions() throws {
        let append = try decode(DropboxAPI.RouteError.self, #"{"error_summary":"incorrect_offset/..","error":{".tag":"incorrect_offset","correct_offset":8388608}}"#)
        guard case .incorrectOffset(let n)? = append.error else { Issue.record("\(String(describing: append.error))"); return }
        #expect(n == 8 << 20)
        let finish = try decode(DropboxAPI.RouteError.self, #"{"error":{".tag":"lookup_failed","lookup_failed":{".tag":"incorrect_offset","correct_offset":"42"}}}"#)
        guard case .lookupFailed(.incorrectOffset(42))? = finish.error else { Issue.record("\(String(describing: finish.error))"); return }
        let unknown = try decode(DropboxAPI.RouteError.self, #"{"error_summary":"x/..","error":{".tag":"quantum_flux","quantum_flux":{}}}"#)
        guard case .other("quantum_flux")? = unknown.error else { Issue.record("\(String(describing: unknown.error))"); return }
        #expect(try decode(DropboxAPI.Metadata.self, #"{".tag":"symlink","id":"id:1"}"#).kind == .other("symlink"))
        // A union of a shape we do not know leaves the summary readable.
        let odd = try decode(DropboxAPI.RouteError.self, #"{"error_summary":"path/too_many_write_operations/..","error":42}"#)
        #expect(odd.summary.isBusy && odd.error == nil)
        let link = try decode(DropboxAPI.SharedLink.self,
                              #"{"url":"https://x","link_permissions":{"resolved_visibility":{".tag":"team_and_password"},"effective_audience":{".tag":"galaxy"}}}"#)
        #expect(link.link_permissions?.resolved_visibility == .teamAndPassword)
        #expect(link.link_permissions?.effective_audience == .other("galaxy"))
        #expect(DropboxProvider.link(link)?.passwordProtected == true)
    }

    @Test("Dropbox arguments: only the settings asked are sent, unions as bare tags, the header arg in ASCII")
    func dropboxArguments() {
        let settings = DropboxProvider.settings(for: ShareRequest(access: .collaborators))
        #expect(String(decoding: WireJSON.encode(settings), as: UTF8.self) == #"{"audience":"no_one"}"#)
        let arg = DropboxAPI.UploadArg(commit: DropboxAPI.CommitInfo(path: "/é"), content_hash: "ab")
        #expect(WireJSON.asciiHeader(arg) == #"{"autorename":false,"content_hash":"ab","mode":"add","mute":true,"path":"\/\u00e9","strict_conflict":true}"#
                || WireJSON.asciiHeader(arg) == #"{"autorename":false,"content_hash":"ab","mode":"add","mute":true,"path":"/\u00e9","strict_conflict":true}"#)
    }

    @Test("Box items: ids as strings or numbers, an unknown type is .other; a conflict holder as an object or a list")
    func boxItems() throws {
        let item = try decode(BoxAPI.Item.self, #"{"type":"file","id":12345,"name":"a.bin","size":"10","sha1":"ABC"}"#)
        #expect(item.id == "12345" && item.size == 10 && item.sha1 == "abc" && item.type == .file)
        #expect(try decode(BoxAPI.Item.self, #"{"type":"hologram","id":"1","name":"x"}"#).type == .other("hologram"))
        let one = try decode(BoxAPI.ErrorAnswer.self, #"{"code":"item_name_in_use","context_info":{"conflicts":{"type":"folder","id":"7","name":"a"}}}"#)
        let list = try decode(BoxAPI.ErrorAnswer.self, #"{"code":"item_name_in_use","context_info":{"conflicts":[{"type":"folder","id":"8","name":"a"}]}}"#)
        #expect(one.conflict?.id == "7" && list.conflict?.id == "8" && one.code == .itemNameInUse)
        #expect(try decode(BoxAPI.ErrorAnswer.self, #"{"code":"parts_mismatch"}"#).code == .partsMismatch)
        #expect(try decode(BoxAPI.ErrorAnswer.self, #"{"code":"bad_digest"}"#).code?.isCorruption == true)
        #expect(try decode(BoxAPI.ErrorAnswer.self, #"{"code":"new_thing"}"#).code == .other("new_thing"))
        #expect(try decode(BoxAPI.ErrorAnswer.self, #"{"code":7,"message":"odd","context_info":{"conflicts":[{"type":"file","id":"9","name":"n"}]}}"#).conflict?.id == "9")
        let page = try decode(BoxAPI.Page<BoxAPI.Item>.self, #"{"total_count":3,"entries":[{"type":"file","id":"1","name":"a"},{"odd":true},{"type":"folder","id":"2","name":"b"}]}"#)
        #expect(page.entries.elements.map(\.id) == ["1", "2"], "an odd entry is skipped, not the page refused")
    }

    @Test("ShareFile: odata.type names the kind (unknown: .other), errors carry their message as an object or a string, feeds page by either nextLink")
    func shareFile() throws {
        #expect(try decode(ShareFileAPI.Item.self, #"{"Id":"fo1","odata.type":"ShareFile.Api.Models.Folder"}"#).isFolder)
        #expect(try decode(ShareFileAPI.Item.self, #"{"Id":"x","odata.type":"ShareFile.Api.Models.Portal"}"#).kind == .other("ShareFile.Api.Models.Portal"))
        #expect(try decode(ShareFileAPI.ErrorAnswer.self, #"{"code":"NotFound","message":{"lang":"en-US","value":"gone"}}"#).message == "gone")
        #expect(try decode(ShareFileAPI.ErrorAnswer.self, #"{"code":"NotFound","message":"gone"}"#).message == "gone")
        #expect(try decode(ShareFileAPI.Feed<ShareFileAPI.Share>.self, #"{"value":[],"@odata.nextLink":"https://n"}"#).nextLink == "https://n")
        let answer = try decode(ShareFileAPI.UploadAnswer.self, #"{"error":true,"errorMessage":"bad offset, expected 2097152","errorCode":605}"#)
        #expect(answer.expectedOffset == 2 << 20 && answer.errorCode?.value == "605")
        let share = try decode(ShareFileAPI.Share.self, #"{"ShareType":"Request","Uri":"u"}"#)
        #expect(share.ShareType == .request)
    }

    @Test("OAuth token answers: expires_in as a number or a string, the providers' extras kept, error codes typed")
    func tokenAnswer() throws {
        let a = try decode(OAuthAPI.TokenAnswer.self, #"{"access_token":"t","expires_in":"28800","subdomain":"acme","apicp":"sf-api.eu","x":1}"#)
        #expect(a.expires_in == 28800 && a.extras == ["subdomain": "acme", "apicp": "sf-api.eu"])
        #expect(try decode(OAuthAPI.TokenAnswer.self, #"{"error":"invalid_grant"}"#).error == .invalidGrant)
        #expect(try decode(OAuthAPI.TokenAnswer.self, #"{"error":"slow_down"}"#).error == .other("slow_down"))
    }

    @Test("any JSON kept as it came keeps big integers exact")
    func jsonTree() throws {
        let tree = try decode(JSONTree.self, #"{"h":9007199254740993,"f":1.5,"s":"x","n":null,"a":[true]}"#)
        #expect(String(decoding: WireJSON.encode(tree), as: UTF8.self) == #"{"a":[true],"f":1.5,"h":9007199254740993,"n":null,"s":"x"}"#)
    }
}
