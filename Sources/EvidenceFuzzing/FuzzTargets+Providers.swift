import EvidenceArchive
import Foundation

extension FuzzTargets {
    /// Provider JSON answers as the providers read them: the shared helpers in
    /// `Providers/Common` and each provider's entry/link/item readers, on every object in the answer.
    static let providers = FuzzTarget(
        name: "providers", summary: "provider JSON answers (Dropbox, Box, ShareFile, ownCloud OCS)", tokens: jsonTokens + [
            "\"url\"", "\"expires\"", "\"unshared_at\"", "\"link_permissions\"", "\"resolved_visibility\"", "\".tag\"",
            "\"password\"", "\"type\"", "\"id\"", "\"name\"", "\"size\"", "\"sha1\"", "\"Id\"", "\"odata.type\"",
            "\"FileSizeBytes\"", "\"Hash\"", "\"expectedByteOffset\"", "\"errorMessage\"", "\"expected 99999999999999999999\"",
            "\"ocs\"", "\"meta\"", "\"statuscode\"", "\"data\"", "1e300", "-1e300", "\"2024-05-01T12:34:56Z\"",
        ]
    ) { data throws(FuzzViolation) in
        _ = OwnCloudAPI.parseOCS(data)
        guard let root = JSON.object(data) else { return }
        var objects: [[String: Any]] = []
        func collect(_ v: Any, depth: Int) {
            guard depth < 64 else { return }
            if let o = v as? [String: Any] { objects.append(o); o.values.forEach { collect($0, depth: depth + 1) } }
            if let a = v as? [Any] { a.forEach { collect($0, depth: depth + 1) } }
        }
        collect(root, depth: 0)
        for o in objects {
            _ = BoxProvider.entry(o).map { String(describing: $0) }
            _ = BoxProvider.link(o)
            _ = DropboxProvider.link(o)
            _ = ShareFileProvider.item(o).map { String(describing: $0) }
            _ = ShareFileProvider.expectedOffset(o)
            for v in o.values { _ = JSON.int64(v) }
        }
        // What providers send back must be JSON again, and headers ASCII.
        let encoded = JSON.data(root)
        try require((try? JSONSerialization.jsonObject(with: encoded)) != nil, "providers", "JSON.data wrote invalid JSON")
        let header = JSON.asciiHeader(root)
        try require(header.utf8.allSatisfy { $0 < 0x80 }, "providers", "asciiHeader wrote non-ASCII bytes")
    }

    /// ownCloud's WebDAV PROPFIND answers (XMLParser with namespaces).
    static let webdav = FuzzTarget(
        name: "webdav", summary: "ownCloud WebDAV PROPFIND XML: parsePropfind / parseListing", tokens: [
            "<d:multistatus xmlns:d=\"DAV:\" xmlns:oc=\"http://owncloud.org/ns\">", "</d:multistatus>", "<d:response>",
            "</d:response>", "<d:href>", "</d:href>", "<d:getcontentlength>", "</d:getcontentlength>", "<d:collection/>",
            "<oc:checksums>", "<oc:checksum>", "SHA1:", "<oc:fileid>", "<!DOCTYPE d [<!ENTITY a \"aaaa\">]>", "&a;", "&amp;",
            "%2F", "%", "<![CDATA[", "]]>", "<?xml version=\"1.0\"?>",
        ]
    ) { data throws(FuzzViolation) in
        if let entry = OwnCloudAPI.parsePropfind(data) {
            _ = entry.checksum("SHA1")
            _ = String(describing: entry)
        }
        if let listing = OwnCloudAPI.parseListing(data) {
            // Names are decoded last path components (a server may encode "/" in one); sizes are -1 when absent.
            for e in listing { try require(e.size >= -1, "webdav", "size \(e.size) for \(e.name)") }
        }
    }
}
