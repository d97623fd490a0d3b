import EvidenceHTTP
import Foundation
import Testing

@Suite struct RetryPolicyTests {
    @Test func backoffDoublesUpToTheCap() {
        let policy = RetryPolicy(maxAttempts: 10, base: 0.5, cap: 30)
        let delays = (1...9).map { policy.delay(afterAttempt: $0, jitter: 1) }
        #expect(delays == [0.5, 1, 2, 4, 8, 16, 30, 30, 30])
    }

    @Test func jitterScalesBetweenHalfAndOneAndAHalf() {
        let policy = RetryPolicy(base: 1, cap: 30)
        #expect(policy.delay(afterAttempt: 3, jitter: 0.5) == 2)
        #expect(policy.delay(afterAttempt: 3, jitter: 1.5) == 6)
        for _ in 0..<200 {
            let delay = policy.delay(afterAttempt: 3)
            #expect(delay >= 2 && delay < 6)
        }
    }

    @Test func retryAfterIsAFloor() {
        let policy = RetryPolicy(base: 0.5, cap: 30)
        #expect(policy.delay(afterAttempt: 1, retryAfter: 7, jitter: 1) == 7)
        #expect(policy.delay(afterAttempt: 6, retryAfter: 1, jitter: 1) == 16)
    }

    @Test func defaultClassificationOfStatuses() {
        func classify(_ status: Int, _ headers: [String: String] = [:]) -> String {
            switch HTTPClient.defaultClassification(HTTPResponse(status: status, headers: headers)) {
            case .success: "success"
            case .retryable(let after): "retryable(\(after.map { "\($0)" } ?? "nil"))"
            case .permanent: "permanent"
            }
        }
        #expect(classify(200) == "success")
        #expect(classify(204) == "success")
        #expect(classify(304) == "permanent")
        #expect(classify(400) == "permanent")
        #expect(classify(404) == "permanent")
        #expect(classify(408) == "retryable(nil)")
        #expect(classify(429, ["retry-after": "3"]) == "retryable(3.0)")
        #expect(classify(503) == "retryable(nil)")
        #expect(classify(500, ["retry-after": "garbage"]) == "retryable(nil)")
    }
}
