import Foundation

extension HTTPClient {
    /// `execute`'s retry loop for a caller whose contract is synchronous (the S3 store, which
    /// blocks like file I/O, on the blocking pool): the same classification, `RetryPolicy`
    /// back-off, `Retry-After` and `OriginPause`, the waits slept on the calling thread.
    ///
    /// `attempt` sends the request to `url` once and returns the answer, or throws the
    /// `HTTPError` of a request that got none (`CurlCode.failure` for a libcurl error). Before
    /// each attempt the origin's pause is waited out, or `.paused` thrown when it is longer than
    /// `policy.maxRetryAfter`; every answer is noted in `OriginPause.shared`. Returns the first
    /// answer `classify` does not judge retryable (a 404 or 412 is the caller's to read), or the
    /// last retryable one when the attempts are used up or its `Retry-After` is longer than
    /// `policy.maxRetryAfter`. A retryable `HTTPError` is retried; the last one is thrown.
    /// Only for requests the server may receive twice.
    public static func retryingBlocking(method: String, url: String, policy: RetryPolicy,
                                        classify: (HTTPResponse) -> Classification = defaultClassification,
                                        sleep: (Double) -> Void = { Thread.sleep(forTimeInterval: $0) },
                                        attempt: () throws(HTTPError) -> HTTPResponse) throws(HTTPError) -> HTTPResponse {
        var tried = 0
        while true {
            tried += 1
            var left = OriginPause.shared.remaining(for: url)
            while left > 0 {
                if left > policy.maxRetryAfter { throw pausedError(method: method, url: url, left: left) }
                sleep(jittered(left))
                // Another answer may have extended the pause meanwhile.
                left = OriginPause.shared.remaining(for: url)
            }
            let retryAfter: Double?
            do throws(HTTPError) {
                let response = try attempt()
                OriginPause.shared.note(response, url: url)
                switch classify(response) {
                case .success, .permanent:
                    return response
                case .retryable(let asked):
                    let wait = asked ?? response.header("retry-after").flatMap { RetryAfter.seconds($0) }
                    if tried >= policy.maxAttempts || (wait ?? 0) > policy.maxRetryAfter { return response }
                    retryAfter = wait
                }
            } catch {
                guard error.isRetryable, tried < policy.maxAttempts else { throw error }
                retryAfter = error.retryAfter
            }
            sleep(policy.delay(afterAttempt: tried, retryAfter: retryAfter))
        }
    }
}
