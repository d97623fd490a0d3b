import EvidenceCore
import Foundation

/// Every provider answer model, for the fuzzer: `data` read as each of them, the readers that
/// turn a model into our values run on what decoded. Must never crash, whatever the bytes.
package enum WireModels {
    /// How many models read `data` (the count only makes the work observable).
    package static func readAll(_ data: Data) -> Int {
        var read = 0
        func attempt<T: Decodable>(_ type: T.Type, _ use: (T) -> Void = { _ in }) {
            if let v = WireJSON.decode(type, from: data) { read += 1; use(v) }
        }
        attempt(DropboxAPI.Metadata.self)
        attempt(DropboxAPI.Account.self)
        attempt(DropboxAPI.SharedLink.self) { _ = DropboxProvider.link($0) }
        attempt(DropboxAPI.LinkList.self) { $0.links?.elements.forEach { _ = DropboxProvider.link($0) } }
        attempt(DropboxAPI.RouteError.self) { _ = $0.summary.isBusy }
        attempt(BoxAPI.Item.self)
        attempt(BoxAPI.Page<BoxAPI.Item>.self)
        attempt(BoxAPI.Page<BoxAPI.Part>.self)
        attempt(BoxAPI.Files.self)
        attempt(BoxAPI.Session.self)
        attempt(BoxAPI.FileSharedLink.self) { $0.shared_link.map { _ = BoxProvider.link($0) } }
        attempt(BoxAPI.ErrorAnswer.self) { _ = $0.conflict; _ = $0.code?.isCorruption }
        attempt(ShareFileAPI.Item.self)
        attempt(ShareFileAPI.UploadSpec.self)
        attempt(ShareFileAPI.UploadAnswer.self) { _ = $0.expectedOffset }
        attempt(ShareFileAPI.Feed<ShareFileAPI.Share>.self)
        attempt(ShareFileAPI.ErrorAnswer.self)
        attempt(OAuthAPI.TokenAnswer.self) { _ = $0.extras }
        if let reply = OwnCloudAPI.parseOCS(data) {
            read += 1
            _ = reply.data(as: OwnCloudAPI.Share.self)
            _ = reply.data(as: LossyList<OwnCloudAPI.Share>.self)
        }
        return read
    }
}
