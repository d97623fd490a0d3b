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
    static func status(_ r: HTTPResponse, account: String, doing what: String) -> ArchiveError {
        let said = String(decoding: r.body.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let message = "\(account): \(what): HTTP \(r.status)" + (said.isEmpty ? "" : ": \(said)")
        let retryAfter = r.header("retry-after").flatMap { RetryAfter.seconds($0) }
        switch r.status {
        case 401, 403: return ArchiveError(r.status == 401 ? .unauthorized : .permanent, message + " (check the account's credentials)")
        case 404: return ArchiveError(.notFound, message)
        case 409, 412: return ArchiveError(.conflict, message)
        case 408, 429, 500...599: return ArchiveError(.transient, message, retryAfter: retryAfter)
        default: return ArchiveError(.permanent, message)
        }
    }
}
