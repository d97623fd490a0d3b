import EvidenceSandbox
import Foundation
import Testing

@Suite("QED emulation: authentication")
struct QEDAuthTests {
    @Test("no Authorization header → 401 credentials not provided")
    func missingToken() async throws {
        try await withSandbox { sandbox in
            let r = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/", key: nil)
            #expect(r.status == 401)
            #expect(r.json == .object([("detail", .string("Authentication credentials were not provided."))]))
            #expect(r.header("WWW-Authenticate") == "app-token")
        }
    }

    @Test("a wrong key → 401 Invalid token; another scheme counts as missing")
    func wrongToken() async throws {
        try await withSandbox { sandbox in
            let wrong = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: randomHash()), key: "nope")
            #expect(wrong.status == 401)
            #expect(wrong.json == .object([("detail", .string("Invalid token."))]))

            let bearer = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/", key: nil,
                                                extraHeaders: ["Authorization": "Bearer sandbox-key"])
            #expect(bearer.status == 401)
            #expect(bearer.json?["detail"] == .string("Authentication credentials were not provided."))
        }
    }

    @Test("--api-key changes the accepted key")
    func customKey() async throws {
        try await withSandbox(["--api-key", "k-123"]) { sandbox in
            let old = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/")
            #expect(old.status == 401)
            let new = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/", key: "k-123")
            #expect(new.status == 200)
        }
    }
}
