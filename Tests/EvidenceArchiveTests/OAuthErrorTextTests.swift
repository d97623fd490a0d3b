import EvidenceArchive
import EvidenceTesting
import Foundation
import Hummingbird
import Testing

@Suite("OAuth token endpoint errors")
struct OAuthErrorTextTests {
    /// A token endpoint that refuses every request and quotes the form it got back in its
    /// `error_description`, as careless servers do.
    actor Port { var value = 0; func set(_ v: Int) { value = v } }

    @Test("what we sent (client secret, password, refresh token) is removed from the provider's error text")
    func echoedFormIsRedacted() async throws {
        let router = Router()
        router.post("token") { request, _ -> Response in
            let form = String(buffer: try await request.body.collect(upTo: 1 << 16))
            let json = #"{"error":"invalid_client","error_description":"bad request: \#(form)"}"#
            return Response(status: .badRequest, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: json)))
        }
        let port = Port()
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { await port.set($0.localAddress?.port ?? 0) })
        let server = Task { try await app.runService(gracefulShutdownSignals: []) }
        defer { server.cancel() }
        #expect(await pollUntil(timeout: 30) { await port.value != 0 }, "the echo server never listened")
        let dir = NSTemporaryDirectory() + "oauth-echo-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let session = OAuthSession(account: "sf", tokenURL: "http://127.0.0.1:\(await port.value)/token", clientID: "client-1",
                                   clientSecret: "Client-Secret-Canary", grant: .password(username: "u@example.org", password: "Password-Canary"),
                                   tokenFile: dir + "/t.json", http: httpClient())
        do {
            _ = try await session.accessToken()
            Issue.record("the refusing endpoint gave a token")
        } catch {
            #expect(error.message.contains("invalid_client") && error.message.contains("bad request"), "\(error.message)")
            #expect(!error.message.contains("Client-Secret-Canary") && !error.message.contains("Password-Canary"), "\(error.message)")
        }
    }
}
