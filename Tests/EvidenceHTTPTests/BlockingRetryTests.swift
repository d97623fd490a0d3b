import EvidenceHTTP
import Foundation
import Testing

/// `HTTPClient.retryingBlocking`, the synchronous loop the S3 store retries through: the same
/// classification, back-off and `Retry-After` as `execute`, with the waits recorded, not slept.
struct BlockingRetryTests {
    // 500, not 503: a 503 with `Retry-After` would pause the origin for real (tested with S3).
    static let url = "http://blocking-retry.invalid:81/bucket/key"
    static let policy = RetryPolicy(maxAttempts: 3, base: 0.01, cap: 1, maxRetryAfter: 60)

    func run(_ script: [Result<HTTPResponse, HTTPError>], policy: RetryPolicy = BlockingRetryTests.policy)
        -> (result: Result<HTTPResponse, HTTPError>, slept: [Double], sent: Int) {
        var script = script, slept: [Double] = [], sent = 0
        let result = Result { () throws(HTTPError) in
            try HTTPClient.retryingBlocking(method: "GET", url: Self.url, policy: policy, sleep: { slept.append($0) }) { () throws(HTTPError) in
                sent += 1
                return try script.removeFirst().get()
            }
        }
        return (result, slept, sent)
    }

    static func transport(_ code: Int) -> HTTPError {
        CurlCode.failure(code, "curl says no", method: "GET", url: url)
    }

    @Test func aRetryableAnswerIsSentAgainNoSoonerThanItsRetryAfter() throws {
        let r = run([.success(HTTPResponse(status: 500, headers: ["retry-after": "7"])), .success(HTTPResponse(status: 200))])
        #expect(try r.result.get().status == 200)
        #expect(r.sent == 2)
        #expect(r.slept.count == 1 && r.slept[0] >= 7)
    }

    @Test func aPermanentAnswerIsReturnedAtOnceForTheCallerToRead() throws {
        let r = run([.success(HTTPResponse(status: 404))])
        #expect(try r.result.get().status == 404)
        #expect(r.sent == 1 && r.slept.isEmpty)
    }

    @Test func theLastRetryableAnswerIsReturnedWhenTheAttemptsAreUsedUp() throws {
        let r = run(Array(repeating: .success(HTTPResponse(status: 502)), count: 3))
        #expect(try r.result.get().status == 502)
        #expect(r.sent == 3 && r.slept.count == 2)
    }

    @Test func aRetryAfterLongerThanAllowedIsNotWaitedOut() throws {
        let r = run([.success(HTTPResponse(status: 500, headers: ["retry-after": "3600"]))])
        #expect(try r.result.get().status == 500)
        #expect(r.sent == 1 && r.slept.isEmpty)
    }

    @Test func aConnectionFailureIsRetriedAndATLSFailureIsNot() throws {
        let retried = run([.failure(Self.transport(7)), .success(HTTPResponse(status: 200))])
        #expect(try retried.result.get().status == 200)
        #expect(retried.sent == 2)

        let tls = run([.failure(Self.transport(60)), .success(HTTPResponse(status: 200))])
        #expect(tls.sent == 1)
        guard case .failure(let error) = tls.result else { Issue.record("TLS failure not thrown"); return }
        #expect(error.kind == .tls && !error.isRetryable)
    }

    @Test func theCurlTableIsTheOneTransfersUse() {
        #expect(Self.transport(28).kind == .timeout)
        #expect(Self.transport(3).kind == .transport(code: 3, name: "CURLE_URL_MALFORMAT") && !Self.transport(3).isRetryable)
        #expect(Self.transport(56).isRetryable)
    }
}
