import EvidenceHTTP
import Foundation

/// How much of the shared retry loop a call may use.
enum RetryMode: Sendable {
    /// Safe to send twice (reads, idempotent writes, chunk appends that the server checks by
    /// offset): 429, 5xx and transport failures are retried, honouring `Retry-After`.
    case full
    /// A write that creates something: only 429 is retried (nothing was stored); any other
    /// failure goes back to the caller, which looks before writing again.
    case throttleOnly
}

/// Bearer-token calls for the OAuth providers: the token comes from `OAuthSession`; a 401 is
/// answered by one refresh (shared with every concurrent caller) and one more try.
struct AuthorizedHTTP: Sendable {
    let account: String
    let http: HTTPClient
    let session: OAuthSession

    /// Sends `make(token)` and returns any answer for the caller to judge (non-2xx included);
    /// throws only when no answer arrived. `busy` marks a provider's own way of saying "nothing
    /// was done, ask again" in an answer that is not a 429 (Dropbox's 409
    /// `too_many_write_operations`): the shared retry loop treats it like a 429 in either mode.
    func call(_ what: String, retry: RetryMode = .full, progress: (@Sendable (Int64) -> Void)? = nil,
              busy: (@Sendable (HTTPResponse) -> Bool)? = nil,
              _ make: (String) -> HTTPRequest) async throws(ArchiveError) -> HTTPResponse {
        var token = try await session.accessToken()
        var refreshed = false
        while true {
            let r = try await Self.send(make(token), http: http, account: account, doing: what, retry: retry, progress: progress,
                                        busy: busy)
            if r.status == 401 && !refreshed {
                refreshed = true
                token = try await session.rejected(token)
                continue
            }
            return r
        }
    }

    static func send(_ request: HTTPRequest, http: HTTPClient, account: String, doing what: String, retry: RetryMode,
                     progress: (@Sendable (Int64) -> Void)? = nil,
                     busy: (@Sendable (HTTPResponse) -> Bool)? = nil) async throws(ArchiveError) -> HTTPResponse {
        var report: (@Sendable (Int64, Int64) -> Void)?
        if let progress { report = { sent, _ in progress(sent) } }
        let throttled: @Sendable (HTTPResponse) -> Bool = { r in r.status == 429 || (busy?(r) ?? false) }
        do {
            switch retry {
            case .full:
                return try await http.execute(request, classify: { r in
                    (throttled(r) || r.status >= 500) ? .retryable(retryAfter: nil) : .success
                }, progress: report)
            case .throttleOnly:
                return try await http.execute(request, classify: { r in throttled(r) ? .retryable(retryAfter: nil) : .success },
                                              retryTransport: false, progress: report)
            }
        } catch {
            if case .status = error.kind, let r = error.response { return r }
            throw ArchiveError.transport(error, account: account, doing: what)
        }
    }
}

/// Fetches a redirect target without credentials (Box and ShareFile downloads answer 302 to a
/// short-lived, pre-signed URL on another host: our token must not follow it there).
func followDownload(_ first: HTTPResponse, http: HTTPClient, account: String, path: String, to local: String) async throws(ArchiveError) {
    if first.isSuccess { throw ArchiveError(.permanent, "\(account): reading back \(path): expected a redirect to the download URL") }
    var response = first
    var hops = 0
    while (300..<400).contains(response.status), let location = response.header("location"), hops < 5 {
        hops += 1
        response = try await AuthorizedHTTP.send(HTTPRequest(method: "GET", url: location, downloadTo: local), http: http,
                                                 account: account, doing: "reading back \(path)", retry: .full)
    }
    guard response.isSuccess else { throw ArchiveError.status(response, account: account, doing: "reading back \(path)") }
}

/// Sequential async critical sections (Dropbox wants one writer per namespace).
actor AsyncMutex {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func lock() async {
        if !busy { busy = true; return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func unlock() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }
}

/// JSON in and out of provider APIs (their shapes vary too much for Codable to pay off).
package enum JSON {
    package static func object(_ data: Data) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    /// JSON bytes of an array or object; anything else (Foundation would trap on it) is `null`.
    package static func data(_ value: Any) -> Data {
        guard JSONSerialization.isValidJSONObject(value) else { return Data("null".utf8) }
        return (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("null".utf8)
    }

    /// JSON for an HTTP header: every non-ASCII character as `\uXXXX` (UTF-16 units), as
    /// Dropbox requires for `Dropbox-API-Arg`.
    package static func asciiHeader(_ value: Any) -> String {
        let text = String(decoding: data(value), as: UTF8.self)
        var out = ""
        for unit in text.utf16 {
            if unit < 0x80 { out.unicodeScalars.append(Unicode.Scalar(UInt8(unit))) }
            else { out += String(format: "\\u%04x", unit) }
        }
        return out
    }

    package static func int64(_ v: Any?) -> Int64? {
        if let n = v as? NSNumber { return n.int64Value }
        if let s = v as? String { return Int64(s) }
        return nil
    }
}

extension HTTPResponse {
    var json: [String: Any]? { JSON.object(body) }
}

/// A progress callback for a chunk that starts at `offset` of the whole file.
func shifted(_ progress: (@Sendable (Int64) -> Void)?, by offset: Int64) -> (@Sendable (Int64) -> Void)? {
    guard let progress else { return nil }
    return { progress(offset + $0) }
}
