import EvidenceHTTP
import Foundation
import Testing

@Suite struct HTTPErrorTests {
    @Test func statusDescriptionNamesRequestStatusWaitAndExcerpt() {
        let error = HTTPError(kind: .status(429), method: "POST", url: "https://api.example/v1/reports/",
                              message: #"{"detail":"slow down"}"#, retryAfter: 3)
        #expect(error.description == #"POST https://api.example/v1/reports/: HTTP 429 (retry after 3s): {"detail":"slow down"}"#)
    }

    @Test func descriptionRedactsAURLSetByHand() {
        let error = HTTPError(kind: .timeout, method: "GET", url: "https://u:pw@h/x?token=abc")
        #expect(error.description == "GET https://h/x?token=<redacted>: timed out")
    }

    @Test func retryabilityFollowsTheKind() {
        func retryable(_ kind: HTTPError.Kind) -> Bool { HTTPError(kind: kind, method: "GET", url: "u").isRetryable }
        #expect(retryable(.transport(code: 7, name: "CURLE_COULDNT_CONNECT")))
        #expect(retryable(.timeout))
        #expect(retryable(.status(429)))
        #expect(retryable(.status(503)))
        #expect(retryable(.status(408)))
        #expect(!retryable(.status(400)))
        #expect(!retryable(.status(404)))
        #expect(!retryable(.tls))
        #expect(!retryable(.cancelled))
        #expect(!retryable(.tooLarge))
    }
}
