import EvidenceCore
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

extension HTTPResponse {
    /// The body read as the wire model `T`, or nil when it is not that shape.
    func decoded<T: Decodable>(_ type: T.Type) -> T? { WireJSON.decode(type, from: body) }
}

/// A progress callback for a chunk that starts at `offset` of the whole file.
func shifted(_ progress: (@Sendable (Int64) -> Void)?, by offset: Int64) -> (@Sendable (Int64) -> Void)? {
    guard let progress else { return nil }
    return { progress(offset + $0) }
}
