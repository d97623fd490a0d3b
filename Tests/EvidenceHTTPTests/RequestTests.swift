import EvidenceHTTP
import Foundation
import Testing

extension Loopback {
    @Suite struct Requests {
        @Test func getReturnsStatusHeadersAndBody() async throws {
            let server = try TestServer(routes: ["/items": { _, _ in
                .respond(200, headers: [("Content-Type", "application/json"), ("X-Trace", "a"), ("x-trace", "b")],
                         body: Data(#"{"ok":true}"#.utf8))
            }])
            defer { server.stop() }
            let client = makeClient()

            let response = try await client.send(HTTPRequest(
                url: server.url("/items?page=2"),
                headers: [(name: "Accept", value: "application/json"), (name: "X-Request-Id", value: "r-1"),
                          (name: "X-Empty", value: "")]))

            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.headers["x-trace"] == "a, b")
            #expect(String(decoding: response.body, as: UTF8.self) == #"{"ok":true}"#)
            #expect(response.url == server.url("/items?page=2"))
            let seen = try #require(server.requests.first)
            #expect(seen.method == "GET")
            #expect(seen.target == "/items?page=2")
            #expect(seen.header("accept") == "application/json")
            #expect(seen.header("x-request-id") == "r-1")
            #expect(seen.header("x-empty") == "")
            #expect(seen.header("user-agent") == "evidence/0.1")
        }

        @Test func postJSONRoundTrip() async throws {
            let server = try TestServer(routes: ["/v1/reports/": { request, _ in
                .respond(201, headers: [("Content-Type", request.header("content-type") ?? "none")], body: request.body)
            }])
            defer { server.stop() }
            let client = makeClient()
            let json = Data(#"{"hash":"ab12","provable_files":[],"name":"clip.mp4"}"#.utf8)

            let response = try await client.execute(HTTPRequest(
                method: "POST", url: server.url("/v1/reports/"),
                headers: [(name: "Content-Type", value: "application/json")], body: .data(json)))

            #expect(response.status == 201)
            #expect(response.body == json)
            #expect(response.header("content-type") == "application/json")
            let seen = try #require(server.requests.first)
            #expect(seen.method == "POST")
            #expect(seen.header("content-length") == "\(json.count)")
            #expect(seen.header("expect") == nil)
        }

        @Test func postWithoutContentTypeIsNotLabelledAsAForm() async throws {
            let server = try TestServer(routes: ["/p": { _, _ in .respond(204) }])
            defer { server.stop() }
            let response = try await makeClient().send(HTTPRequest(method: "POST", url: server.url("/p"),
                                                                   body: .data(Data("raw".utf8))))
            #expect(response.status == 204)
            let seen = try #require(server.requests.first)
            #expect(seen.header("content-type") == nil)
            #expect(seen.body == Data("raw".utf8))
        }

        @Test(arguments: [
            ("PUT", Data("put body".utf8) as Data?),
            ("PUT", nil),
            ("PROPFIND", Data(#"<?xml version="1.0"?><d:propfind xmlns:d="DAV:"/>"#.utf8)),
            ("MOVE", nil),
            ("DELETE", nil),
            ("MKCOL", nil),
            ("HEAD", nil),
        ])
        func methodsAndBodiesGoOverTheWireAsGiven(method: String, body: Data?) async throws {
            let server = try TestServer(routes: ["/dav/x": { _, _ in .respond(207, body: Data("multi".utf8)) }])
            defer { server.stop() }
            let request = HTTPRequest(method: method, url: server.url("/dav/x"),
                                      headers: [(name: "Destination", value: "/dav/y")],
                                      body: body.map { .data($0) } ?? .none)

            let response = try await makeClient().send(request)

            #expect(response.status == 207)
            #expect(response.body == (method == "HEAD" ? Data() : Data("multi".utf8)))
            let seen = try #require(server.requests.first)
            #expect(seen.method == method)
            #expect(seen.body == (body ?? Data()))
            #expect(seen.header("destination") == "/dav/y")
            #expect(seen.header("expect") == nil)
        }

        @Test func interimContinueAnswerIsSkipped() async throws {
            let raw = "HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n"
                + "HTTP/1.1 201 Created\r\nX-Final: yes\r\nContent-Length: 4\r\nConnection: close\r\n\r\ndone"
            let server = try TestServer(routes: ["/upload": { _, _ in .raw(Data(raw.utf8)) }])
            defer { server.stop() }

            let response = try await makeClient().send(HTTPRequest(method: "PUT", url: server.url("/upload"),
                                                                   body: .data(Data("x".utf8))))

            #expect(response.status == 201)
            #expect(response.header("x-final") == "yes")
            #expect(response.header("x-interim") == nil)
            #expect(response.body == Data("done".utf8))
        }

        @Test func headerFieldsAreTrimmedFoldedJoinedAndKeptAsUTF8() async throws {
            let raw = "HTTP/1.1 200 OK\r\nX-Padded: \t  value with  inner  spaces \t\r\nX-Folded: first\r\n  \tsecond part\r\n"
                + "X-UTF8: Überwachung 東京\r\nX-Empty:\r\nX-Rep: a\r\nx-rep:b \r\n"
                + "Content-Length: 2\r\nConnection: close\r\n\r\nok"
            let server = try TestServer(routes: ["/h": { _, _ in .raw(Data(raw.utf8)) }])
            defer { server.stop() }

            let response = try await makeClient().send(HTTPRequest(url: server.url("/h")))

            #expect(response.status == 200)
            #expect(response.header("x-padded") == "value with  inner  spaces")
            #expect(response.header("x-folded") == "first second part")
            #expect(response.header("x-utf8") == "Überwachung 東京")
            #expect(response.header("x-empty") == "")
            #expect(response.header("x-rep") == "a, b")
            #expect(response.body == Data("ok".utf8))
        }

        @Test func redirectsAreReportedNotFollowed() async throws {
            let server = try TestServer(routes: [
                "/old": { _, _ in .respond(302, headers: [("Location", "/new")]) },
                "/new": { _, _ in .respond(200) },
            ])
            defer { server.stop() }

            let response = try await makeClient().send(HTTPRequest(url: server.url("/old")))

            #expect(response.status == 302)
            #expect(response.header("location") == "/new")
            #expect(server.hits("/new") == 0)
        }

        @Test func inMemoryBodyAboveTheLimitFailsAsTooLarge() async throws {
            let server = try TestServer(routes: ["/big": { _, _ in .stream(200, length: 5_000) }])
            defer { server.stop() }
            let client = makeClient { $0.maxResponseBytes = 1_000 }

            let error = await httpError { try await client.execute(HTTPRequest(url: server.url("/big"))) }

            #expect(error?.kind == .tooLarge)
            #expect(error?.isRetryable == false)
            #expect(server.hits("/big") == 1)
        }

        @Test func keepAliveReusesOneConnection() async throws {
            let server = try TestServer(keepAlive: true, routes: ["/k": { _, _ in .respond(200, body: Data("k".utf8)) }])
            defer { server.stop() }
            let client = makeClient { $0.maxConcurrentTransfers = 1 }

            for _ in 0..<3 {
                let response = try await client.send(HTTPRequest(url: server.url("/k")))
                #expect(response.status == 200)
            }

            #expect(server.hits("/k") == 3)
            #expect(server.connectionCount == 1)
        }

        @Test func refusedConnectionIsARetryableTransportError() async throws {
            let port = try TestServer.freePort()
            let client = makeClient { $0.retry.maxAttempts = 1 }

            let error = await httpError { try await client.execute(HTTPRequest(url: "http://127.0.0.1:\(port)/")) }

            #expect(error?.kind == .transport(code: 7, name: "CURLE_COULDNT_CONNECT"))
            #expect(error?.isRetryable == true)
            #expect(error?.description.contains("CURLE_COULDNT_CONNECT") == true)
        }

        @Test func malformedURLIsAPermanentTransportError() async throws {
            let error = await httpError { try await makeClient().execute(HTTPRequest(url: "ftp://127.0.0.1/x")) }
            #expect(error?.kind == .transport(code: 1, name: "CURLE_UNSUPPORTED_PROTOCOL"))
            #expect(error?.isRetryable == false)
        }

        @Test func headerInjectionIsRefusedBeforeSending() async throws {
            let server = try TestServer(routes: ["/h": { _, _ in .respond(200) }])
            defer { server.stop() }
            let request = HTTPRequest(url: server.url("/h"), headers: [(name: "X-A", value: "1\r\nX-Evil: 2")])

            let error = await httpError { try await makeClient().execute(request) }

            #expect(error?.isRetryable == false)
            #expect(server.hits("/h") == 0)
        }
    }
}
