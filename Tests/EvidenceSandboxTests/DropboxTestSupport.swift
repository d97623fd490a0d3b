import EvidenceSandbox
import Foundation
import Glibc
import Testing

/// A raw HTTP/1.1 connection on loopback, for what URLSession cannot do: send header bytes
/// exactly as given (non-ASCII), or send a body slowly so two requests overlap in time.
/// Reads poll without blocking a cooperative thread (the in-process server shares the pool).
final class RawHTTPConnection {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw URLError(.cannotConnectToHost) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { Glibc.close(fd); throw URLError(.cannotConnectToHost) }
    }

    deinit { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw URLError(.networkConnectionLost) }
            done += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// One response (Content-Length bodies only).
    func readResponse(timeout: Double = 15) async throws -> HTTPResult {
        var buffer: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var headerEnd: Int?
        var contentLength = 0
        var status = 0
        var headers: [String: String] = [:]
        while true {
            if headerEnd == nil, let r = find(buffer, Array("\r\n\r\n".utf8)) {
                headerEnd = r + 4
                let lines = String(decoding: buffer[0..<r], as: UTF8.self).components(separatedBy: "\r\n")
                status = Int(lines[0].split(separator: " ")[1]) ?? 0
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                contentLength = Int(headers.first { $0.key.lowercased() == "content-length" }?.value ?? "0") ?? 0
            }
            if let h = headerEnd, buffer.count >= h + contentLength {
                return HTTPResult(status: status, headers: headers, body: Data(buffer[h..<(h + contentLength)]))
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                buffer += chunk[0..<n]
            } else if n == 0 {
                throw URLError(.networkConnectionLost)
            } else {
                guard Date() < deadline else { throw URLError(.timedOut) }
                try await Task.sleep(nanoseconds: 5_000_000)
            }
        }
    }

    private func find(_ hay: [UInt8], _ needle: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle {
            return i
        }
        return nil
    }
}

/// Calls against the Dropbox emulation of an in-process sandbox.
struct DropboxClient {
    let base: URL
    var token: String = ""

    static let key = "sandbox-dropbox-key"
    static let secret = "sandbox-dropbox-secret"
    static let refresh = "sandbox-dropbox-refresh"

    func url(_ path: String) -> URL { URL(string: path, relativeTo: base)!.absoluteURL }

    func form(_ path: String, _ fields: [(String, String)], headers: [String: String] = [:]) async throws -> HTTPResult {
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)" }.joined(separator: "&")
        var h = headers
        h["Content-Type"] = "application/x-www-form-urlencoded"
        return try await TestHTTP.send("POST", url(path), headers: h, body: Data(body.utf8))
    }

    /// A fresh access token from the fixed refresh token.
    func refreshed() async throws -> DropboxClient {
        let r = try await form("/dropbox/api/oauth2/token", [("grant_type", "refresh_token"), ("refresh_token", Self.refresh),
                                                            ("client_id", Self.key), ("client_secret", Self.secret)])
        #expect(r.status == 200)
        var copy = self
        copy.token = try #require(r.json?["access_token"]?.stringValue)
        return copy
    }

    func rpc(_ route: String, _ json: String?, contentType: String = "application/json") async throws -> HTTPResult {
        var headers = ["Authorization": "Bearer \(token)"]
        if json != nil { headers["Content-Type"] = contentType }
        return try await TestHTTP.send("POST", url("/dropbox/api/2/\(route)"), headers: headers, body: json.map { Data($0.utf8) })
    }

    func content(_ route: String, arg: String, body: Data = Data(), contentType: String = "application/octet-stream") async throws -> HTTPResult {
        try await TestHTTP.send("POST", url("/dropbox/content/2/\(route)"),
                                headers: ["Authorization": "Bearer \(token)", "Dropbox-API-Arg": arg, "Content-Type": contentType],
                                body: body, timeout: 60)
    }

    func counters() async throws -> JSONValue {
        try #require(try await TestHTTP.send("GET", url("/_sandbox/counters")).json)
    }
}

/// Deterministic pseudo-random bytes (so a test's bodies differ from each other).
func testBytes(_ count: Int, seed: UInt64) -> Data {
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    var out = [UInt8](repeating: 0, count: count)
    var i = 0
    while i < count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        var v = state >> 16
        for _ in 0..<6 where i < count { out[i] = UInt8(truncatingIfNeeded: v); v >>= 8; i += 1 }
    }
    return Data(out)
}

/// Dropbox's content hash computed independently of the emulation, with the `openssl` tool:
/// SHA-256 of each 4 MiB block, then SHA-256 of the concatenated binary digests.
func dropboxHashWithOpenSSL(_ data: Data) async throws -> String {
    let dir = try makeTemporaryDirectory("dbxhash")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var digests = Data()
    let block = 4 * 1024 * 1024
    var offset = 0
    var index = 0
    while offset < data.count {
        let piece = data.subdata(in: offset..<min(data.count, offset + block))
        let path = "\(dir)/b\(index)"
        try piece.write(to: URL(fileURLWithPath: path))
        let r = try await runTool("openssl", ["dgst", "-sha256", "-r", path])
        let hex = String(r.stdout.prefix(64))
        var bytes = [UInt8]()
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            bytes.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        digests.append(contentsOf: bytes)
        offset += block
        index += 1
    }
    let all = "\(dir)/all"
    try digests.write(to: URL(fileURLWithPath: all))
    let r = try await runTool("openssl", ["dgst", "-sha256", "-r", all])
    return String(r.stdout.prefix(64))
}

/// RFC 7636 S256 code challenge, computed with the `openssl` tool.
func s256WithOpenSSL(_ verifier: String) async throws -> String {
    let dir = try makeTemporaryDirectory("pkce")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try Data(verifier.utf8).write(to: URL(fileURLWithPath: "\(dir)/v"))
    let hex = String(try await runTool("openssl", ["dgst", "-sha256", "-r", "\(dir)/v"]).stdout.prefix(64))
    var bytes = [UInt8]()
    var i = hex.startIndex
    while i < hex.endIndex {
        let j = hex.index(i, offsetBy: 2)
        bytes.append(UInt8(hex[i..<j], radix: 16)!)
        i = j
    }
    return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// An in-process sandbox on a fresh (or given) state folder.
func withProviderSandbox<T: Sendable>(stateDirectory: String? = nil, tokenLifetime: Double? = nil,
                                      _ body: @Sendable (URL) async throws -> T) async throws -> T {
    let dir = try stateDirectory ?? makeTemporaryDirectory("prov")
    defer { if stateDirectory == nil { try? FileManager.default.removeItem(atPath: dir) } }
    var options = SandboxOptions(stateDirectory: dir, seed: 11)
    if let tokenLifetime { options.tokenLifetime = tokenLifetime }
    let server = try SandboxServer(options: options)
    return try await server.withRunning(body)
}
