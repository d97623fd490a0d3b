import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// ownCloud's wire shapes: WebDAV PROPFIND answers and OCS share replies.
enum OwnCloudAPI {
    static let propfindBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
          <d:prop><d:getcontentlength/><d:resourcetype/><oc:checksums/><oc:fileid/></d:prop>
        </d:propfind>
        """

    struct Entry {
        var size: Int64?
        var isCollection = false
        /// `oc:checksums` text, e.g. "SHA1:ab… MD5:cd… ADLER32:…".
        var checksums = ""
        var fileID: String?

        func checksum(_ kind: String) -> String? {
            for token in checksums.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }) {
                let parts = token.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].uppercased() == kind.uppercased() { return parts[1].lowercased() }
            }
            return nil
        }
    }

    /// The first `d:response` of a 207 multistatus (Depth: 0 asks for just the target).
    static func parsePropfind(_ data: Data) -> Entry? {
        let delegate = PropfindParser()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.delegate = delegate
        guard parser.parse(), delegate.sawResponse else { return nil }
        return delegate.entry
    }

    final class PropfindParser: NSObject, XMLParserDelegate {
        var entry = Entry()
        var sawResponse = false
        private var text = ""
        private var responses = 0

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            text = ""
            if name == "response" { responses += 1; sawResponse = true }
            if name == "collection", responses == 1 { entry.isCollection = true }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard responses == 1 else { return }
            let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
            switch name {
            case "getcontentlength": entry.size = Int64(value)
            case "checksum": entry.checksums += " " + value
            case "checksums" where !value.isEmpty && entry.checksums.isEmpty: entry.checksums = value
            case "fileid": entry.fileID = value.isEmpty ? nil : value
            default: break
            }
        }
    }

    /// Every `d:response` of a Depth 1 PROPFIND: (decoded last path component, size).
    static func parseListing(_ data: Data) -> [(name: String, size: Int64)]? {
        let delegate = ListingParser()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.delegate = delegate
        guard parser.parse() else { return nil }
        return delegate.entries
    }

    final class ListingParser: NSObject, XMLParserDelegate {
        var entries: [(name: String, size: Int64)] = []
        private var text = ""
        private var href = ""
        private var size: Int64 = -1

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            text = ""
            if name == "response" { href = ""; size = -1 }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
            switch name {
            case "href": href = value
            case "getcontentlength": size = Int64(value) ?? -1
            case "response":
                let last = href.split(separator: "/").last.map(String.init) ?? ""
                entries.append((last.removingPercentEncoding ?? last, size))
            default: break
            }
        }
    }

    /// OCS v1 answers HTTP 200 even on failure: success is `ocs.meta.statuscode == 100`.
    struct OCSReply {
        var statusCode: Int
        var message: String
        var data: Any?
    }

    static func parseOCS(_ body: Data) -> OCSReply? {
        guard let obj = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let ocs = obj["ocs"] as? [String: Any], let meta = ocs["meta"] as? [String: Any] else { return nil }
        let code = (meta["statuscode"] as? NSNumber)?.intValue ?? Int(meta["statuscode"] as? String ?? "") ?? -1
        return OCSReply(statusCode: code, message: meta["message"] as? String ?? "", data: ocs["data"])
    }
}
