import EvidenceCore
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// ownCloud's wire shapes: WebDAV PROPFIND answers and OCS share replies.
package enum OwnCloudAPI {
    static let propfindBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
          <d:prop><d:getcontentlength/><d:resourcetype/><oc:checksums/><oc:fileid/><d:getetag/></d:prop>
        </d:propfind>
        """

    package struct Entry {
        package var size: Int64?
        var isCollection = false
        /// `oc:checksums` text, e.g. "SHA1:ab… MD5:cd… ADLER32:…".
        var checksums = ""
        var fileID: String?
        /// `d:getetag`, quotes and all (a content digest only where the account says so: `etag`).
        var etag: String?

        package func checksum(_ kind: String) -> String? {
            for token in checksums.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }) {
                let parts = token.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].uppercased() == kind.uppercased() { return parts[1].lowercased() }
            }
            return nil
        }
    }

    /// A namespace-aware parser over `data`, or nil for the answers that crash Foundation's
    /// XMLParser on Linux (the whole process, not just the parse), found by `make fuzz`:
    /// - an element name with invalid UTF-8 (`<d:multistatus\u{EB} …>`): SIGILL. WebDAV answers are UTF-8.
    /// - a processing instruction without data (`<?x?>`): libxml2 hands over NULL, Foundation
    ///   calls strlen on it (SIGSEGV). WebDAV answers have no processing instructions.
    private static func xmlParser(_ data: Data, _ delegate: any XMLParserDelegate) -> XMLParser? {
        guard String(validating: data, as: UTF8.self) != nil, !hasEmptyProcessingInstruction(data) else { return nil }
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.delegate = delegate
        return parser
    }

    /// `<?target?>` (blanks allowed before `?>`) anywhere, even inside a comment or CDATA: refusing
    /// those too costs nothing for WebDAV answers.
    static func hasEmptyProcessingInstruction(_ data: Data) -> Bool {
        let b = [UInt8](data)
        var i = 0
        while i + 1 < b.count {
            defer { i += 1 }
            guard b[i] == UInt8(ascii: "<"), b[i + 1] == UInt8(ascii: "?") else { continue }
            var j = i + 2
            while j < b.count, !isBlank(b[j]), b[j] != UInt8(ascii: "?") { j += 1 }
            while j < b.count, isBlank(b[j]) { j += 1 }
            if j + 1 < b.count, b[j] == UInt8(ascii: "?"), b[j + 1] == UInt8(ascii: ">") { return true }
        }
        return false
    }

    private static func isBlank(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d }

    /// The first `d:response` of a 207 multistatus (Depth: 0 asks for just the target).
    package static func parsePropfind(_ data: Data) -> Entry? {
        let delegate = PropfindParser()
        guard let parser = xmlParser(data, delegate), parser.parse(), delegate.sawResponse else { return nil }
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
            case "getetag": entry.etag = value.isEmpty ? nil : value
            default: break
            }
        }
    }

    /// The SHA-1 an ETag spells (`"<40 hex>"`, quotes optional, a weak `W/` refused: a weak tag
    /// promises no bytes), lowercase; nil for any other tag.
    package static func sha1(etag: String?) -> String? {
        guard var t = etag?.trimmingCharacters(in: .whitespaces), !t.hasPrefix("W/") else { return nil }
        if t.count >= 2, t.hasPrefix("\""), t.hasSuffix("\"") { t = String(t.dropFirst().dropLast()) }
        guard t.utf8.count == 40, t.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }) else {
            return nil
        }
        return t.lowercased()
    }

    /// Every `d:response` of a Depth 1 PROPFIND: (decoded last path component, size).
    package static func parseListing(_ data: Data) -> [(name: String, size: Int64)]? {
        let delegate = ListingParser()
        guard let parser = xmlParser(data, delegate), parser.parse() else { return nil }
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
    /// `data` is what the call returns (a share, a list of shares); read with `OCSReply.data(as:)`.
    package struct OCSReply {
        var statusCode: Int
        var message: String
        var data: JSONTree?

        /// `data` as the model `T`, or nil when it is not that shape.
        func data<T: Decodable>(as type: T.Type) -> T? {
            guard let data else { return nil }
            return WireJSON.decode(type, from: WireJSON.encode(data))
        }
    }

    struct OCSEnvelope: Decodable {
        struct Body: Decodable { var meta: Meta; var data: JSONTree? }
        struct Meta: Decodable {
            var statuscode: LenientInt64?
            var message: String?

            enum Keys: String, CodingKey { case statuscode, message }
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: Keys.self)
                statuscode = try? c.decodeIfPresent(LenientInt64.self, forKey: .statuscode)
                message = try? c.decodeIfPresent(String.self, forKey: .message)
            }
        }
        var ocs: Body
    }

    /// A public link (share type 3) as the share API describes it.
    struct Share: Decodable {
        var id: LenientString?
        var share_type: LenientInt64?
        var url: String?
        /// A link's password appears here (hashed) when it has one.
        var share_with: JSONTree?
        /// `YYYY-MM-DD 00:00:00` (the link works through that day), or null.
        var expiration: String?

        var isPublicLink: Bool { share_type?.value == 3 }
        var hasPassword: Bool { share_with != nil && share_with != .null }

        /// The end of the expiry day (UTC), nil when the link never expires or the date cannot be read.
        var expires: Date? {
            guard let day = expiration?.split(separator: " ").first else { return nil }
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: "UTC")
            f.dateFormat = "yyyy-MM-dd"
            return f.date(from: String(day)).map { $0.addingTimeInterval(86_399) }
        }

        /// At least as strict as `request`: a password when one is asked, an expiry when one is
        /// asked, no later than asked (the day it is on).
        func satisfies(_ request: ShareRequest) -> Bool {
            if request.password != nil && !hasPassword { return false }
            if let wanted = request.expires {
                guard let expires else { return false }
                return expires <= wanted.addingTimeInterval(86_399)
            }
            return true
        }
    }

    /// `status.php`: product, version, and (Nextcloud 18 and later) `extendedSupport`. Fields
    /// of another type read as absent: an object of any shape is a status answer.
    struct Status: Decodable {
        var productname: String?
        var product: String?
        var versionstring: String?
        var version: String?
        var extendedSupport: JSONTree?

        enum Keys: String, CodingKey { case productname, product, versionstring, version, extendedSupport }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            productname = try? c.decodeIfPresent(String.self, forKey: .productname)
            product = try? c.decodeIfPresent(String.self, forKey: .product)
            versionstring = try? c.decodeIfPresent(String.self, forKey: .versionstring)
            version = try? c.decodeIfPresent(String.self, forKey: .version)
            extendedSupport = try? c.decodeIfPresent(JSONTree.self, forKey: .extendedSupport)
        }
    }

    package static func parseOCS(_ body: Data) -> OCSReply? {
        guard let envelope = WireJSON.decode(OCSEnvelope.self, from: body) else { return nil }
        let meta = envelope.ocs.meta
        return OCSReply(statusCode: meta.statuscode.map { Int(clamping: $0.value) } ?? -1, message: meta.message ?? "",
                        data: envelope.ocs.data)
    }
}
