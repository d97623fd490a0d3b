import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import EvidenceSandbox

/// One HTTP exchange as the tests see it.
struct HTTPResult: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as JSON (with member order kept), or nil.
    var json: JSONValue? { try? JSONValue.parse(body) }

    func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}

/// A small URLSession client with bounded timeouts; a fresh session per request, so a
/// connection closed by fault injection never leaks into the next exchange.
enum TestHTTP {
    static let apiKey = "sandbox-key"

    static func send(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil,
                     timeout: Double = 15) async throws -> HTTPResult {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = method
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        request.httpBody = body
        let config = URLSessionConfiguration.ephemeral
        config.timeoutIntervalForRequest = timeout
        config.timeoutIntervalForResource = timeout
        let session = URLSession(configuration: config)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var fields: [String: String] = [:]
        for (k, v) in http.allHeaderFields { fields["\(k)"] = "\(v)" }
        return HTTPResult(status: http.statusCode, headers: fields, body: data)
    }

    /// An authenticated QED call (`Authorization: app-token sandbox-key`), JSON body if given.
    static func qed(_ method: String, _ base: URL, _ path: String, json: String? = nil,
                    key: String? = apiKey, extraHeaders: [String: String] = [:]) async throws -> HTTPResult {
        var headers = extraHeaders
        if let key { headers["Authorization"] = "app-token \(key)" }
        if json != nil, headers["Content-Type"] == nil { headers["Content-Type"] = "application/json" }
        return try await send(method, URL(string: path, relativeTo: base)!.absoluteURL, headers: headers,
                              body: json.map { Data($0.utf8) })
    }
}
