import EvidenceCore
import EvidenceStore
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Glibc
import HTTPTypes
import Hummingbird

/// Which server the ownCloud emulation is (`--owncloud-flavour`).
public enum OwnCloudFlavour: String, Sendable, CaseIterable {
    /// ownCloud 10: SHA1, MD5 and ADLER32 computed from the stored bytes; a client
    /// `OC-Checksum` that differs from what arrived is refused with 400.
    case owncloud
    /// Nextcloud: the client's `OC-Checksum` is stored as sent and echoed back (in
    /// `oc:checksums` and on `GET`), never checked; a file uploaded without one has none.
    case nextcloud

    var productName: String { self == .owncloud ? "ownCloud" : "Nextcloud" }
}

/// ownCloud 10 wire shapes: Sabre/DAV XML errors, 207 multistatus, OCS v1 envelopes, and the
/// checksums ownCloud keeps for every file (SHA1, MD5, ADLER32).
enum OwnCloudWire {
    static let xmlType = "application/xml; charset=utf-8"

    static func xmlEscape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// The body Sabre writes for an exception: `<d:error>` with the PHP class and message.
    static func sabreError(_ status: HTTPResponse.Status, _ exception: String, _ message: String,
                           extra: String = "", headers: HTTPFields = [:]) -> Response {
        let xml = """
            <?xml version="1.0" encoding="utf-8"?>
            <d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns">
              <s:exception>\(xmlEscape(exception))</s:exception>
              <s:message>\(xmlEscape(message))</s:message>\(extra)
            </d:error>

            """
        return .bytes(Array(xml.utf8), contentType: xmlType, status: status, headers: headers)
    }

    static func notFound(_ message: String) -> Response {
        sabreError(.notFound, "Sabre\\DAV\\Exception\\NotFound", message)
    }

    static func conflict(_ message: String) -> Response {
        sabreError(.conflict, "Sabre\\DAV\\Exception\\Conflict", message)
    }

    static func badRequest(_ message: String) -> Response {
        sabreError(.badRequest, "Sabre\\DAV\\Exception\\BadRequest", message)
    }

    static func preconditionFailed(_ message: String, header: String) -> Response {
        sabreError(.preconditionFailed, "Sabre\\DAV\\Exception\\PreconditionFailed", message,
                   extra: "\n  <s:header>\(header)</s:header>")
    }

    static func invalidPath(_ message: String) -> Response {
        sabreError(.badRequest, "OCA\\DAV\\Connector\\Sabre\\Exception\\InvalidPath", message,
                   extra: "\n  <o:retry xmlns:o=\"o:\">false</o:retry>\n  <o:reason xmlns:o=\"o:\">\(xmlEscape(message))</o:reason>")
    }

    static func forbidden(_ message: String) -> Response {
        sabreError(.forbidden, "OCA\\DAV\\Connector\\Sabre\\Exception\\Forbidden", message,
                   extra: "\n  <o:retry xmlns:o=\"o:\">false</o:retry>\n  <o:reason xmlns:o=\"o:\">\(xmlEscape(message))</o:reason>")
    }

    /// ownCloud's name checks (`verifyPath`) for an item about to be created: nil when fine.
    static func nameProblem(_ name: String) -> Response? {
        if name == "." || name == ".." { return invalidPath("Dot files are not allowed") }
        if name.trimmingCharacters(in: .whitespaces).isEmpty { return invalidPath("Empty filename is not allowed") }
        if name.utf8.count > 255 { return invalidPath("File name is too long") }
        if name.lowercased() == ".htaccess" { return forbidden("Creating a file or folder named \".htaccess\" is not allowed") }
        if name.hasSuffix(" ") { return invalidPath("Filenames must not end with a space") }
        if name == "*" { return invalidPath("File name is a reserved word") }
        return nil
    }

    // MARK: Dates

    /// RFC 1123, as `getlastmodified` and `Last-Modified` carry it.
    static func httpDate(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return String(format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", days[Int(tmv.tm_wday)], Int(tmv.tm_mday),
                      months[Int(tmv.tm_mon)], Int(tmv.tm_year) + 1900, Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
    }

    /// `YYYY-MM-DD` of a date in UTC.
    static func civilDate(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "%04d-%02d-%02d", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1, Int(tmv.tm_mday))
    }

    /// Strict `YYYY-MM-DD` (a real calendar date), else nil.
    static func parseCivilDate(_ s: String) -> String? {
        let u = Array(s.utf8)
        guard u.count == 10, u[4] == 0x2D, u[7] == 0x2D,
              let y = Int(String(decoding: u[0..<4], as: UTF8.self)),
              let m = Int(String(decoding: u[5..<7], as: UTF8.self)),
              let d = Int(String(decoding: u[8..<10], as: UTF8.self)), (1...12).contains(m), d >= 1 else { return nil }
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard d <= lengths[m - 1] else { return nil }
        return s
    }

    // MARK: Paths

    /// Percent-encodes each segment of a `/`-separated path for an `href`.
    static func hrefPath(_ path: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~!$&'()*+,;=:@")
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { String($0).addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0) }
            .joined(separator: "/")
    }

    static func mimeType(_ name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "mp4", "m4v": return "video/mp4"
        case "mov": return "video/quicktime"
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        case "pdf": return "application/pdf"
        case "txt": return "text/plain"
        case "json": return "application/json"
        case "zip": return "application/zip"
        case "tsr": return "application/timestamp-reply"
        default: return "application/octet-stream"
        }
    }

    // MARK: OCS

    /// An OCS v1 answer: HTTP status as given (200 even for most failures), `ocs.meta` +
    /// `ocs.data`, as JSON with `format=json`, else XML.
    static func ocs(status: HTTPResponse.Status = .ok, code: Int, message: String, data: JSONValue, json: Bool) -> Response {
        let meta: [(String, JSONValue)] = [
            ("status", .string(code == 100 ? "ok" : "failure")),
            ("statuscode", .int(Int64(code))),
            ("message", .string(message)),
            ("totalitems", .string("")),
            ("itemsperpage", .string("")),
        ]
        if json {
            return .json(.object([("ocs", .object([("meta", .object(meta)), ("data", data)]))]), status: status,
                         headers: [.contentType: "application/json; charset=utf-8"])
        }
        var xml = "<?xml version=\"1.0\"?>\n<ocs>\n <meta>\n"
        for (k, v) in meta { xml += "  <\(k)>\(xmlEscape(v.stringValue ?? v.description))</\(k)>\n" }
        xml += " </meta>\n"
        xml += xmlElement("data", data, indent: " ")
        xml += "</ocs>\n"
        return .bytes(Array(xml.utf8), contentType: "text/xml; charset=UTF-8", status: status)
    }

    private static func xmlElement(_ name: String, _ value: JSONValue, indent: String) -> String {
        switch value {
        case .null: return "\(indent)<\(name)/>\n"
        case .array(let items):
            if items.isEmpty { return "\(indent)<\(name)/>\n" }
            return "\(indent)<\(name)>\n" + items.map { xmlElement("element", $0, indent: indent + " ") }.joined() + "\(indent)</\(name)>\n"
        case .object(let members):
            return "\(indent)<\(name)>\n" + members.map { xmlElement($0.0, $0.1, indent: indent + " ") }.joined() + "\(indent)</\(name)>\n"
        case .string(let s): return "\(indent)<\(name)>\(xmlEscape(s))</\(name)>\n"
        default: return "\(indent)<\(name)>\(value.description)</\(name)>\n"
        }
    }

    // MARK: PROPFIND bodies

    /// The properties a PROPFIND asks for as (namespace, local name); nil means allprop.
    static func requestedProperties(_ body: Data) -> [(String, String)]? {
        guard !body.isEmpty else { return nil }
        final class Collector: NSObject, XMLParserDelegate {
            var depthInProp = 0
            var props: [(String, String)] = []
            var allprop = false
            func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
                let ns = namespaceURI ?? ""
                if depthInProp == 1 { props.append((ns, elementName)) }
                if depthInProp > 0 { depthInProp += 1 }
                if ns == "DAV:" && elementName == "prop" && depthInProp == 0 { depthInProp = 1 }
                if ns == "DAV:" && (elementName == "allprop" || elementName == "propname") { allprop = true }
            }
            func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
                if depthInProp > 0 { depthInProp -= 1 }
            }
        }
        let parser = XMLParser(data: body)
        parser.shouldProcessNamespaces = true
        let collector = Collector()
        parser.delegate = collector
        guard parser.parse() else { return [] }
        return collector.allprop || collector.props.isEmpty ? nil : collector.props
    }
}

/// The digests ownCloud stores for a file, computed while the bytes stream in.
struct OwnCloudHasher {
    private let sha1 = EVPHasher(.sha1)
    private let md5 = EVPHasher(.md5)
    private var a: UInt32 = 1
    private var b: UInt32 = 0

    struct Digests: Codable, Sendable, Equatable {
        var sha1: String
        var md5: String
        var adler32: String
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        sha1.update(bytes)
        md5.update(bytes)
        var i = 0
        let n = bytes.count
        while i < n {
            let end = min(n, i + 5552)
            while i < end {
                a &+= UInt32(bytes[i])
                b &+= a
                i += 1
            }
            a %= 65521
            b %= 65521
        }
    }

    func finish() -> Digests {
        Digests(sha1: Hex.encode(sha1.finalize()), md5: Hex.encode(md5.finalize()), adler32: String(format: "%08x", (b << 16) | a))
    }

    static func digests(ofFile path: String) throws -> Digests {
        var h = OwnCloudHasher()
        try DropboxFiles.read(path) { h.update($0) }
        return h.finish()
    }
}

extension HTTPField.Name {
    static let ocChecksum = HTTPField.Name("OC-Checksum")!
    static let xOCMtime = HTTPField.Name("X-OC-Mtime")!
    static let ocFileID = HTTPField.Name("OC-FileId")!
    static let ocETag = HTTPField.Name("OC-ETag")!
    static let ocTotalLength = HTTPField.Name("OC-Total-Length")!
    static let ocsAPIRequest = HTTPField.Name("OCS-APIRequest")!
    static let davDepth = HTTPField.Name("Depth")!
    static let davDestination = HTTPField.Name("Destination")!
    static let davOverwrite = HTTPField.Name("Overwrite")!
}
