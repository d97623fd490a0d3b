import EvidenceHTTP
import Foundation

extension ArchiveError {
    /// A transport failure (no answer): retryable when the HTTP layer says so.
    static func transport(_ e: HTTPError, account: String, doing what: String) -> ArchiveError {
        ArchiveError(e.isRetryable ? .transient : .permanent, "\(account): \(what): \(e.description)", retryAfter: e.retryAfter)
    }

    /// An answer that is not the one wanted, classified once for every provider: 401 → refresh
    /// and retry, 404, 409/412 conflict, 429/5xx retryable (with `Retry-After`), else permanent.
    /// The provider's own words (first 300 bytes) are in the message.
    ///
    /// A 2xx lands here only when its body could not be read as the answer (a proxy's HTML
    /// page, bytes that are not JSON): the way in between misbehaved, not the provider's verdict
    /// on the file, so it is retryable and the message names the content type and size.
    static func status(_ r: HTTPResponse, account: String, doing what: String) -> ArchiveError {
        // Printable only, and with the request's credentials masked: the excerpt goes to logs,
        // terminals and the portal.
        let said = String(r.excerpt
            .map { $0.isASCII && ($0.asciiValue! < 0x20 || $0.asciiValue! == 0x7f) ? "." : $0 }
            .map { $0 == "\u{FFFD}" ? "." : $0 }).trimmingCharacters(in: .whitespacesAndNewlines)
        let retryAfter = r.header("retry-after").flatMap { RetryAfter.seconds($0) }
        if r.isSuccess {
            return ArchiveError(.transient, "\(account): \(what): HTTP \(r.status) with an answer that cannot be read ("
                                + "\(r.header("content-type") ?? "no content type"), \(r.body.count) bytes)" + (said.isEmpty ? "" : ": \(said.prefix(120))"))
        }
        let message = "\(account): \(what): HTTP \(r.status)" + (said.isEmpty ? "" : ": \(said)")
        switch r.status {
        case 401, 403: return ArchiveError(r.status == 401 ? .unauthorized : .permanent, message + " (check the account's credentials)",
                                           httpStatus: r.status)
        case 404: return ArchiveError(.notFound, message)
        case 409, 412: return ArchiveError(.conflict, message)
        // 423 Locked (WebDAV): another request holds the path for now.
        case 408, 423, 429, 500...599: return ArchiveError(.transient, message, retryAfter: retryAfter)
        default: return ArchiveError(.permanent, message)
        }
    }
}
