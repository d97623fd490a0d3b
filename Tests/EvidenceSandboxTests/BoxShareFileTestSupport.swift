import EvidenceCore
import EvidenceSandbox
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// Helpers for the Box and ShareFile fidelity tests (raw HTTP on loopback, no client code).
enum BSF {
    /// Runs an in-process sandbox on `dir` (fresh when nil) for `body`.
    static func withSandbox<T: Sendable>(dir: String? = nil, tokenLifetime: Double = 3600,
                                         _ body: @Sendable (URL, SandboxServer) async throws -> T) async throws -> T {
        let state = try dir ?? makeTemporaryDirectory("bsf")
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: state, seed: 42, tokenLifetime: tokenLifetime))
        let value = try await server.withRunning { base in try await body(base, server) }
        if dir == nil { try? FileManager.default.removeItem(atPath: state) }
        return value
    }

    static func url(_ base: URL, _ path: String) -> URL {
        URL(string: base.absoluteString + path)!
    }

    static func form(_ fields: [(String, String)]) -> Data {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return Data(fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&").utf8)
    }

    static func postForm(_ url: URL, _ fields: [(String, String)]) async throws -> HTTPResult {
        try await TestHTTP.send("POST", url, headers: ["Content-Type": "application/x-www-form-urlencoded"], body: form(fields))
    }

    static func call(_ method: String, _ url: URL, token: String?, json: String? = nil, body: Data? = nil,
                     headers: [String: String] = [:]) async throws -> HTTPResult {
        var h = headers
        if let token { h["Authorization"] = "Bearer \(token)" }
        if json != nil { h["Content-Type"] = "application/json" }
        return try await TestHTTP.send(method, url, headers: h, body: json.map { Data($0.utf8) } ?? body, timeout: 60)
    }

    /// One exchange that does NOT follow redirects (to see a 302 and its Location).
    static func noRedirect(_ url: URL, token: String?) async throws -> HTTPResult {
        var request = URLRequest(url: url)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let delegate = NoRedirect()
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (k, v) in http.allHeaderFields { fields["\(k)"] = "\(v)" }
        return HTTPResult(status: http.statusCode, headers: fields, body: data)
    }

    final class NoRedirect: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
            completionHandler(nil)
        }
    }

    /// Deterministic test bytes.
    static func bytes(_ count: Int, seed: UInt8 = 7) -> Data {
        var out = [UInt8](repeating: 0, count: count)
        var x = UInt32(seed) &* 2_654_435_761 | 1
        for i in 0..<count {
            x ^= x << 13; x ^= x >> 17; x ^= x << 5
            out[i] = UInt8(truncatingIfNeeded: x)
        }
        return Data(out)
    }

    /// The hex digest computed by the system's `sha1sum` / `md5sum` (independent of the sandbox).
    static func systemDigest(_ data: Data, tool: String) async throws -> String {
        let dir = try makeTemporaryDirectory("digest")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = (dir as NSString).appendingPathComponent("blob")
        try data.write(to: URL(fileURLWithPath: path))
        let result = try await runTool(tool, [path])
        return String(result.stdout.prefix { $0 != " " })
    }

    static func sha1(_ data: Data) async throws -> String { try await systemDigest(data, tool: "sha1sum") }
    static func md5(_ data: Data) async throws -> String { try await systemDigest(data, tool: "md5sum") }

    static func base64(hex: String) -> String { Data(Hex.decode(hex) ?? []).base64EncodedString() }

    static func counters(_ base: URL) async throws -> JSONValue {
        try #require(try await TestHTTP.send("GET", url(base, "/_sandbox/counters")).json)
    }
}
