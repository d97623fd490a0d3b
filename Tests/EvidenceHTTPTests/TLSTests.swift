import EvidenceHTTP
import Foundation
import Testing

extension Loopback {
    @Suite struct TLS {
        @Test func unknownCAFailsAsTLSAndIsNotRetried() async throws {
            let server = try TLSServer()
            defer { server.stop() }
            let client = makeClient { $0.retry = RetryPolicy(maxAttempts: 3, base: 5) }

            let (error, elapsed) = await timed { await httpError { try await client.execute(HTTPRequest(url: server.url())) } }

            #expect(error?.kind == .tls)
            #expect(error?.isRetryable == false)
            #expect(elapsed < 4, "a TLS failure must not wait for a retry")
        }

        @Test func configuredCAFileIsTrusted() async throws {
            let server = try TLSServer()
            defer { server.stop() }
            let client = makeClient { $0.caFile = server.caFile }

            let response = try await client.execute(HTTPRequest(url: server.url()))

            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self).contains("s_server"))
        }

        @Test func hostNameIsVerifiedEvenWithTheCA() async throws {
            let server = try TLSServer()  // certificate names IP 127.0.0.1 only
            defer { server.stop() }
            let client = makeClient { $0.caFile = server.caFile }

            let error = await httpError { try await client.send(HTTPRequest(url: server.url(host: "localhost"))) }

            #expect(error?.kind == .tls)
        }
    }
}
