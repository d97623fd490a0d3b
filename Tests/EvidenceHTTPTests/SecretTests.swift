import EvidenceHTTP
import Foundation
import Testing

extension Loopback {
    @Suite struct Secrets {
        @Test func failedRequestErrorAndLogsNeverContainTheCredentials() async throws {
            let server = try TestServer(routes: ["/v1/reports/": { request, _ in
                // A careless server echoing what it got.
                .respond(401, body: Data("invalid credentials \(request.header("authorization") ?? "") for \(request.target)".utf8))
            }])
            defer { server.stop() }
            let logs = LogCapture()
            let client = makeClient(logger: logs.logger)
            let url = server.url("/v1/reports/?access_token=QUERYSECRET&hash=ab12").replacingOccurrences(
                of: "http://", with: "http://evidence:PASSWORDSECRET@")

            let error = await httpError {
                try await client.execute(HTTPRequest(
                    method: "POST", url: url,
                    headers: [(name: "Authorization", value: "app-token SECRET"),
                              (name: "Content-Type", value: "application/json")],
                    body: .data(Data("{}".utf8))))
            }

            let failure = try #require(error)
            #expect(failure.kind == .status(401))
            let everything = [failure.description, failure.message, failure.url] + logs.lines
            #expect(!logs.lines.isEmpty)
            for text in everything {
                #expect(!text.contains("SECRET"), "leaked in: \(text)")
            }
            #expect(failure.description.contains("invalid credentials <redacted>"))
            #expect(failure.description.contains("access_token=<redacted>&hash=ab12"))
            #expect(server.requests.first?.header("authorization") == "app-token SECRET")
        }

        @Test func transportErrorMessagesAreRedactedToo() async throws {
            let port = try TestServer.freePort()
            let logs = LogCapture()
            let client = makeClient({ $0.retry.maxAttempts = 2 }, logger: logs.logger)

            let error = await httpError {
                try await client.execute(HTTPRequest(url: "http://user:TOPSECRET@127.0.0.1:\(port)/?sig=SIGSECRET",
                                                     headers: [(name: "X-Api-Key", value: "KEYSECRET")]))
            }

            #expect(error?.kind == .transport(code: 7, name: "CURLE_COULDNT_CONNECT"))
            for text in [error?.description ?? ""] + logs.lines {
                #expect(!text.contains("SECRET"), "leaked in: \(text)")
            }
            #expect(logs.lines.contains { $0.contains("retrying") })
        }
    }
}
