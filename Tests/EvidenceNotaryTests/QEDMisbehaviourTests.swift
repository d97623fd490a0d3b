import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import EvidenceSandbox
import Foundation
import Logging
import Testing

/// QEDClient against answers that are 200 but wrong: each is a named, retryable error (the
/// job backs off and asks again), never a crash, a hang or a permanent failure of the item.
@Suite("QED client: misbehaving answers")
struct QEDMisbehaviourTests {
    func withServer<T: Sendable>(pending: Double? = nil, _ body: @Sendable (SandboxServer, URL) async throws -> T) async throws -> T {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-qed-misbehave-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = SandboxOptions(stateDirectory: dir)
        if let pending { options.pendingSeconds = pending }
        let server = try SandboxServer(options: options)
        return try await server.withRunning { url in try await body(server, url) }
    }

    static let digest = SHA256Digest(hex: String(repeating: "3c", count: 32))!

    @Test("garbage, HTML, a PNG, a cut body, 65 MiB, a trickle: each a retryable error that names what came",
          arguments: [("garbage", "the answer is not JSON (HTTP 200, content type application/json"),
                      ("html", "the answer is not JSON (HTTP 200, content type text/html"),
                      ("wrong-type", "the answer is not JSON (HTTP 200, content type image/png"),
                      ("truncated", "transfer closed with"),
                      ("oversized", "response too large"),
                      ("slow", "timed out")])
    func mode(_ mode: String, _ named: String) async throws {
        try await withServer { (server: SandboxServer, url: URL) async throws -> Void in
            // Short low-speed guard so the trickle times out in seconds (the default is 60 s). Only
            // the trickle gets it: under a loaded CI run the emulation once sent nothing for 2 s on
            // the other modes too, and the guard then answered "timed out" for what they serve.
            let guardSeconds: Double = mode == "slow" ? 2 : 30
            let http = HTTPClient(configuration: HTTPClientConfiguration(lowSpeedTime: guardSeconds, retry: .never),
                                  logger: Logger(label: "test"))
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key", http: http)
            server.misbehaviour.arm(prefix: "/v1/reports/", mode: Misbehaviour.Mode(rawValue: mode)!, count: 1)
            let start = Date()
            let error = await #expect(throws: NotaryError.self) { _ = try await qed.reports(hash: Self.digest) }
            #expect(error?.message.hasPrefix("qed: ") == true && error?.message.contains(named) == true, "\(error?.message ?? "")")
            #expect(error?.retryable == true, "\(mode) is worth asking again later")
            // The trickle would last 600 s; the guard ends it in seconds (60 allows a loaded machine).
            #expect(Date().timeIntervalSince(start) < 60)
            // The next request reaches the emulation again (asked without the short guard: on a
            // loaded machine an ordinary answer may also pause for 2 s).
            let again = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key",
                                  http: HTTPClient(configuration: HTTPClientConfiguration(retry: .never), logger: Logger(label: "test")))
            #expect(try await again.reports(hash: Self.digest).isEmpty)
        }
    }

    func submission() -> QEDSubmission {
        QEDSubmission(hash: Self.digest, fileName: "clip.mp4", originalCreatedAt: Date(timeIntervalSince1970: 1_700_000_000),
                      name: "clip", note: "test", metaData: [:])
    }

    @Test("a GET redirected on the same origin and API root (Django's trailing slash) is followed; the report comes back")
    func getRedirectFollowed() async throws {
        try await withServer { (server: SandboxServer, url: URL) async throws -> Void in
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key",
                                http: HTTPClient(configuration: HTTPClientConfiguration(retry: .never), logger: Logger(label: "test")))
            let created = try await qed.submit(submission())
            server.misbehaviour.arm(prefix: "/v1/reports/\(created.slug)", mode: .redirect, count: 1)
            let polled = try await qed.report(slug: created.slug)
            #expect(polled.slug == created.slug && polled.hash == Self.digest.hex)
            #expect(server.misbehaviour.servedCounts["redirect"] == 1, "the redirect was served, then followed")
        }
    }

    @Test("a GET redirected to another host is not followed (the API key would go with it): a permanent error naming both")
    func getRedirectAwayRefused() async throws {
        try await withServer { (server: SandboxServer, url: URL) async throws -> Void in
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key",
                                http: HTTPClient(configuration: HTTPClientConfiguration(retry: .never), logger: Logger(label: "test")))
            let created = try await qed.submit(submission())
            server.misbehaviour.arm(prefix: "/v1/reports/\(created.slug)", mode: .redirectAway, count: 1)
            let error = await #expect(throws: NotaryError.self) { _ = try await qed.report(slug: created.slug) }
            #expect(error?.retryable == false, "\(error?.message ?? "")")
            #expect(error?.message.contains("elsewhere.invalid") == true && error?.message.contains("not followed") == true,
                    "\(error?.message ?? "")")
        }
    }

    @Test("a POST answered with a redirect is never re-sent: one request reaches the server, and the error says to check base_url")
    func postRedirectRefused() async throws {
        try await withServer { (server: SandboxServer, url: URL) async throws -> Void in
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key",
                                http: HTTPClient(configuration: HTTPClientConfiguration(retry: .never), logger: Logger(label: "test")))
            server.misbehaviour.arm(prefix: "/v1/reports/", mode: .redirect, count: 1)
            let error = await #expect(throws: NotaryError.self) { _ = try await qed.submit(submission()) }
            #expect(error?.retryable == false && error?.message.contains("a POST is not re-sent") == true, "\(error?.message ?? "")")
            #expect(server.misbehaviour.servedCounts["redirect"] == 1)
            #expect(try await qed.reports(hash: Self.digest).isEmpty, "nothing was created by a resend")
        }
    }

    @Test("a certificate answer that is not a PDF is a permanent error naming the report and what came; a cut or oversized one is retryable",
          arguments: [("html", "is not a PDF (content type text/html", false),
                      ("wrong-type", "is not a PDF (content type image/png", false),
                      ("garbage", "is not a PDF (content type application/json", false),
                      ("truncated", "transfer closed with", true),
                      ("oversized", "response too large", true)])
    func certificateNotAPDF(_ mode: String, _ named: String, _ retryable: Bool) async throws {
        try await withServer(pending: 0) { (server: SandboxServer, url: URL) async throws -> Void in
            let http = HTTPClient(configuration: HTTPClientConfiguration(retry: .never), logger: Logger(label: "test"))
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key", http: http)
            let created = try await qed.submit(submission())
            server.misbehaviour.arm(prefix: "/v1/reports/\(created.slug)/pdf/", mode: Misbehaviour.Mode(rawValue: mode)!, count: 1)
            let error = await #expect(throws: NotaryError.self) { _ = try await qed.certificate(slug: created.slug) }
            #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
            #expect(error?.retryable == retryable, "\(mode): \(error?.message ?? "")")
            if !retryable { #expect(error?.message.contains(created.slug) == true, "names the report: \(error?.message ?? "")") }
            // Disarmed after one: the real PDF comes.
            #expect(try await qed.certificate(slug: created.slug).starts(with: Data("%PDF-".utf8)))
        }
    }

    @Test("the certificate is fetched at the documented path with its trailing slash; the emulation redirects a slash-less POST")
    func certificatePathHasTrailingSlash() async throws {
        try await withServer { (server: SandboxServer, url: URL) async throws -> Void in
            let http = HTTPClient(configuration: HTTPClientConfiguration(retry: .never), logger: Logger(label: "test"))
            let created = try await QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key", http: http).submit(submission())
            var request = HTTPRequest(method: "POST", url: url.absoluteString + "/v1/reports/\(created.slug)/pdf",
                                      headers: [("Authorization", "app-token sandbox-key"), ("Content-Type", "application/json")],
                                      body: .data(Data("{}".utf8)))
            let plain = try await http.send(request)
            #expect(plain.status == 301 && plain.header("location")?.hasSuffix("/pdf/") == true, "\(plain.status)")
            request.url += "/"
            let slash = try await http.send(request)
            #expect(slash.status != 301 && slash.status != 404, "the documented form is routed: \(slash.status)")
        }
    }
}
