import Foundation
import HTTPTypes
import Hummingbird

/// Dropbox API v2 wire shapes: route errors (409 with `error_summary` and the nested union),
/// plain-text 400s for malformed calls, the 401 token errors, timestamps and paths.
enum DropboxWire {
    static func tag(_ name: String, _ extra: [(String, JSONValue)] = []) -> JSONValue {
        .object([(".tag", .string(name))] + extra)
    }

    /// A route error: HTTP 409, `error_summary` is the tag path plus Dropbox's "/.." tail.
    static func routeError(_ summary: String, _ error: JSONValue) -> Response {
        .json(.object([("error_summary", .string(summary + "/..")), ("error", error)]), status: .conflict)
    }

    /// `{".tag":outer, outer: {".tag":inner, …}}` with summary `outer/inner`.
    static func nested(_ outer: String, _ inner: String, _ extra: [(String, JSONValue)] = []) -> Response {
        routeError("\(outer)/\(inner)", tag(outer, [(outer, tag(inner, extra))]))
    }

    /// A call Dropbox refuses before routing it: HTTP 400, plain text.
    static func badRequest(_ route: String, _ message: String) -> Response {
        .bytes(Array("Error in call to API function \"\(route)\": \(message)".utf8),
               contentType: "text/plain; charset=utf-8", status: .badRequest)
    }

    static func unauthorized(_ tagName: String) -> Response {
        .json(.object([("error_summary", .string(tagName + "/")), ("error", tag(tagName))]), status: .unauthorized,
              headers: [.wwwAuthenticate: "Bearer realm=\"Dropbox-API\""])
    }

    static func tooManyWrites() -> Response {
        .json(.object([
            ("error_summary", .string("too_many_write_operations/..")),
            ("error", .object([("reason", tag("too_many_write_operations")), ("retry_after", .int(1))])),
        ]), status: .tooManyRequests, headers: [.retryAfter: "1"])
    }

    /// `too_many_write_operations` as a 409 route error, nested as each route's union has it:
    /// `files/delete_v2` at the top (`DeleteError`), `files/upload` under `path.reason`
    /// (`UploadWriteFailed`), the others under `path` (`WriteError`).
    static func writeContention(_ path: String) -> Response {
        switch path {
        case "files/delete_v2":
            return routeError("too_many_write_operations", tag("too_many_write_operations"))
        case "files/upload":
            return routeError("path/too_many_write_operations", tag("path", [("reason", tag("too_many_write_operations"))]))
        default:
            return nested("path", "too_many_write_operations")
        }
    }

    /// "files/create_folder_v2" → "files/create_folder:2", as the real error texts name routes.
    static func routeName(_ path: String) -> String {
        path.hasSuffix("_v2") ? String(path.dropLast(3)) + ":2" : path
    }

    // MARK: Timestamps

    /// `2026-05-01T12:34:56Z` (Dropbox timestamps have whole seconds).
    static func timestamp(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1,
                      Int(tmv.tm_mday), Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
    }

    static func parseTimestamp(_ s: String) -> Date? {
        let u = Array(s.utf8)
        guard u.count == 20, u[4] == 0x2D, u[7] == 0x2D, u[10] == 0x54, u[13] == 0x3A, u[16] == 0x3A, u[19] == 0x5A else { return nil }
        func num(_ r: Range<Int>) -> Int? { Int(String(decoding: u[r], as: UTF8.self)) }
        guard let y = num(0..<4), let mo = num(5..<7), let d = num(8..<10), let h = num(11..<13),
              let mi = num(14..<16), let se = num(17..<19), (1...12).contains(mo), (1...31).contains(d),
              h < 24, mi < 60, se < 61 else { return nil }
        var tmv = tm()
        tmv.tm_year = Int32(y - 1900); tmv.tm_mon = Int32(mo - 1); tmv.tm_mday = Int32(d)
        tmv.tm_hour = Int32(h); tmv.tm_min = Int32(mi); tmv.tm_sec = Int32(se)
        return Date(timeIntervalSince1970: TimeInterval(timegm(&tmv)))
    }

    // MARK: Paths

    enum PathArg: Equatable {
        case root
        case id(String)
        case path([String])
        /// Matches the pattern but is not a usable path (empty component, `.`, `..`, trailing slash).
        case malformed
    }

    static let pathPattern = #"(/(.|[\r\n])*|id:.*)|(rev:[0-9a-f]{9,})|(ns:[0-9]+(/.*)?)"#

    /// nil when the string does not even match Dropbox's path pattern (a 400).
    static func parsePath(_ s: String) -> PathArg? {
        if s.isEmpty { return .root }
        if s.hasPrefix("id:") { return s.count > 3 ? .id(s) : .malformed }
        if s.hasPrefix("rev:") || s.hasPrefix("ns:") { return .malformed }
        guard s.hasPrefix("/") else { return nil }
        let parts = s.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for p in parts where p.isEmpty || p == "." || p == ".." || p.utf16.count > 255 { return .malformed }
        return .path(parts)
    }

    /// Percent-encodes a URL path segment (shared-link URLs carry the file name).
    static func urlSegment(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    /// JSON made "HTTP header safe": every character from 0x7F up as `\uXXXX` (surrogate pairs
    /// above the BMP), as Dropbox writes `Dropbox-API-Result` and wants `Dropbox-API-Arg`.
    static func headerSafe(_ value: JSONValue) -> String {
        var out = ""
        for scalar in value.description.unicodeScalars {
            if scalar.value < 0x7F {
                out.unicodeScalars.append(scalar)
            } else {
                for unit in String(scalar).utf16 { out += String(format: "\\u%04x", unit) }
            }
        }
        return out
    }
}

/// Dropbox answers 429 `too_many_write_operations` when two writes to one namespace overlap;
/// this gate admits one write at a time and refuses (rather than queues) the second.
final class DropboxWriteGate: @unchecked Sendable {
    private let lock = NSLock()
    private var busy = false

    func tryEnter() -> Bool {
        lock.lock(); defer { lock.unlock() }
        if busy { return false }
        busy = true
        return true
    }

    func leave() {
        lock.lock(); busy = false; lock.unlock()
    }
}

extension HTTPField.Name {
    static let dropboxAPIArg = HTTPField.Name("Dropbox-API-Arg")!
    static let dropboxAPIResult = HTTPField.Name("Dropbox-API-Result")!
}
