import Foundation
import Logging

extension HTTPClient {
    /// 2xx succeed; 408, 429 and 5xx are retryable, honouring `Retry-After`; the rest are permanent.
    public static func defaultClassification(_ response: HTTPResponse) -> Classification {
        switch response.status {
        case 200..<300:
            return .success
        case 408, 429, 500...599:
            return .retryable(retryAfter: response.header("retry-after").flatMap { RetryAfter.seconds($0) })
        default:
            return .permanent
        }
    }

    /// `send` with retries per `configuration.retry` — the one retry loop for all HTTP.
    ///
    /// `classify` judges each answer (default `defaultClassification`); transport errors and
    /// timeouts are retried, TLS errors, `.tooLarge`, local file errors and cancellation are not.
    /// The wait between attempts is exponential with jitter and never shorter than the server's
    /// `Retry-After`; a `Retry-After` beyond `retry.maxRetryAfter` ends the loop at once.
    /// Returns the successful response, or throws the last `HTTPError` (`.status` with `response`
    /// for an answer judged permanent or still failing after the last attempt). Not idempotent by
    /// itself: only retry requests the server can safely receive twice. With `retryTransport`
    /// false, only answers `classify` judges retryable are sent again: a write that creates
    /// something may have arrived when its answer was lost, and the caller (the job queue)
    /// looks at the remote before writing again.
    ///
    /// `beforeRetry`, when given, is asked before each retry (after the loop has decided one is
    /// due, before it waits) what to send next: the same request, another one (a grant that
    /// must not be re-sent blindly: the caller looks for a newer token first), or nothing
    /// (`.stop`: the last failure is thrown). It never waits or retries on its own.
    public func execute(_ request: HTTPRequest,
                        classify: (@Sendable (HTTPResponse) -> Classification)? = nil,
                        retryTransport: Bool = true,
                        beforeRetry: (@Sendable (HTTPError) async -> Resend)? = nil,
                        progress: (@Sendable (_ sent: Int64, _ received: Int64) -> Void)? = nil)
        async throws(HTTPError) -> HTTPResponse
    {
        let policy = configuration.retry
        var request = request
        var attempt = 0
        while true {
            attempt += 1
            let failure: HTTPError
            do throws(HTTPError) {
                let response = try await send(request, progress: progress)
                switch (classify ?? HTTPClient.defaultClassification)(response) {
                case .success:
                    return response
                case .retryable(let retryAfter):
                    let wait = retryAfter ?? response.header("retry-after").flatMap { RetryAfter.seconds($0) }
                    failure = Self.statusError(request, response, retryAfter: wait, retryable: true,
                                               secrets: Redact.secrets(of: request))
                case .permanent:
                    throw Self.statusError(request, response, retryAfter: nil, retryable: false,
                                           secrets: Redact.secrets(of: request))
                }
            } catch {
                guard error.isRetryable, retryTransport || error.response != nil else { throw error }
                failure = error
            }

            if attempt >= policy.maxAttempts {
                throw failure
            }
            if let retryAfter = failure.retryAfter, retryAfter > policy.maxRetryAfter {
                logger.info("HTTP server asks to wait longer than allowed; giving up for now",
                            metadata: ["http.error": .string(failure.description)])
                throw failure
            }
            if let beforeRetry {
                switch await beforeRetry(failure) {
                case .same: break
                case .send(let next): request = next
                case .stop: throw failure
                }
            }
            let delay = policy.delay(afterAttempt: attempt, retryAfter: failure.retryAfter)
            logger.info("HTTP attempt \(attempt) of \(policy.maxAttempts) failed; retrying",
                        metadata: ["http.error": .string(failure.description),
                                   "http.retry_in_s": .string(String(format: "%.2f", delay))])
            do {
                try await Task.sleep(for: .seconds(delay))
            } catch {
                throw HTTPError(kind: .cancelled, method: request.method, url: Redact.url(request.url))
            }
        }
    }

    static func statusError(_ request: HTTPRequest, _ response: HTTPResponse, retryAfter: Double?,
                            retryable: Bool, secrets: [String]) -> HTTPError {
        HTTPError(kind: .status(response.status), method: request.method, url: Redact.url(request.url),
                  message: Redact.excerpt(response.body, secrets: secrets), retryAfter: retryAfter,
                  response: response, isRetryable: retryable)
    }
}
