import EvidenceArchive
import EvidenceCore
import Foundation

extension FuzzTargets {
    /// Provider JSON answers as the providers read them: every wire model of `API.swift` and
    /// the readers of links and offsets, on the answer and on every object and array in it.
    static let providers = FuzzTarget(
        name: "providers", summary: "provider JSON answers (Dropbox, Box, ShareFile, ownCloud OCS)", tokens: jsonTokens + [
            "\"url\"", "\"expires\"", "\"unshared_at\"", "\"link_permissions\"", "\"resolved_visibility\"", "\".tag\"",
            "\"password\"", "\"type\"", "\"id\"", "\"name\"", "\"size\"", "\"sha1\"", "\"Id\"", "\"odata.type\"",
            "\"FileSizeBytes\"", "\"Hash\"", "\"expectedByteOffset\"", "\"errorMessage\"", "\"expected 99999999999999999999\"",
            "\"ocs\"", "\"meta\"", "\"statuscode\"", "\"data\"", "1e300", "-1e300", "\"2024-05-01T12:34:56Z\"",
        ]
    ) { data throws(FuzzViolation) in
        _ = WireModels.readAll(data)
        guard let root = WireJSON.decode(JSONTree.self, from: data) else { return }
        // Every nested object and array as an answer of its own, as the models meet them.
        var parts: [JSONTree] = []
        func collect(_ v: JSONTree, depth: Int) {
            guard depth < 64 else { return }
            switch v {
            case .object(let o): parts.append(v); o.values.forEach { collect($0, depth: depth + 1) }
            case .array(let a): parts.append(v); a.forEach { collect($0, depth: depth + 1) }
            default: break
            }
        }
        collect(root, depth: 0)
        for part in parts.dropFirst().prefix(256) { _ = WireModels.readAll(WireJSON.encode(part)) }
        // What providers send back must be JSON again, and headers ASCII.
        let encoded = WireJSON.encode(root)
        try require(WireJSON.isJSON(encoded), "providers", "WireJSON.encode wrote invalid JSON")
        let header = WireJSON.asciiHeader(root)
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
