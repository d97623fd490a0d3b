import EvidenceCore
import EvidenceHTTP
import Foundation

/// RFC 3161 time-stamping over HTTP: a fresh `TimeStampReq` (SHA-256 imprint, nonce, certReq)
/// POSTed to each configured TSA in turn until one answers with a reply that verifies against
/// the request (status, imprint, nonce, signature and chain against `trust`). A reply is never
/// accepted on its imprint alone: with empty `trust` every reply is refused.
public struct TSAClient: Sendable {
    public let urls: [String]
    /// The TSA's CA file(s) and pinned signing-certificate fingerprints, from the config.
    public let trust: TSATrust
    let http: HTTPClient
    public let name: String

    public init(name: String = "rfc3161", urls: [String], trust: TSATrust, http: HTTPClient) {
        self.name = name; self.urls = urls; self.trust = trust; self.http = http
    }

    public init(name: String = "rfc3161", urls: [String], caFile: String, http: HTTPClient) {
        self.init(name: name, urls: urls, trust: TSATrust(caFiles: [caFile]), http: http)
    }

    /// The verified token and the URL that issued it. Every TSA failing throws the last failure,
    /// retryable when any of them was.
    public func timestamp(_ digest: SHA256Digest) async throws(NotaryError) -> (token: TimestampToken, url: String) {
        try await timestamp(imprint: Imprint(digest))
    }

    /// `timestamp(_:)` over a hash of either algorithm (SHA-512 for a hash-tree renewal).
    public func timestamp(imprint: Imprint) async throws(NotaryError) -> (token: TimestampToken, url: String) {
        let request: TimestampRequest
        do { request = try TimestampRequest.make(imprint: imprint) } catch {
            throw NotaryError("\(name): cannot build the time-stamp request: \(error)", retryable: false)
        }
        var failures: [NotaryError] = []
        for url in urls {
            do throws(NotaryError) {
                return (try await ask(url, request), url)
            } catch {
                failures.append(error)
            }
        }
        let message = failures.map(\.message).joined(separator: "; ")
        throw NotaryError(message.isEmpty ? "\(name): no TSA URL configured" : message,
                          retryable: failures.contains { $0.retryable },
                          retryAfter: failures.compactMap(\.retryAfter).max())
    }

    private func ask(_ url: String, _ request: TimestampRequest) async throws(NotaryError) -> TimestampToken {
        let response: HTTPResponse
        do {
            response = try await http.execute(HTTPRequest(
                method: "POST", url: url,
                headers: [("Content-Type", "application/timestamp-query"), ("Accept", "application/timestamp-reply")],
                body: .data(request.der)))
        } catch {
            throw NotaryError("\(name) \(Redact.url(url))", error)
        }
        let type = response.header("content-type") ?? ""
        // Another content type is what a proxy's error or login page, or a TSA being redeployed,
        // answers: retried with back-off and named in the job, as QED's garbage is, so a window
        // whose TSA misbehaves for a while does not fail every item in it for good. A wrong URL
        // shows as the same error in `evidence status` until it is fixed.
        guard type.lowercased().hasPrefix("application/timestamp-reply") else {
            throw NotaryError("\(name) \(Redact.url(url)): answered content type \"\(type.prefix(60))\", not application/timestamp-reply",
                              retryable: true)
        }
        do {
            return try TimestampVerifier.verify(response: response.body, for: request, trust: trust)
        } catch {
            throw NotaryError("\(name) \(Redact.url(url)): the reply does not verify: \(error.message)", retryable: error.isTransient)
        }
    }
}
