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
    func withServer<T: Sendable>(_ body: @Sendable (SandboxServer, URL) async throws -> T) async throws -> T {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-qed-misbehave-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir))
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
            // Short low-speed guard so the trickle times out in seconds (the default is 60 s).
            let http = HTTPClient(configuration: HTTPClientConfiguration(lowSpeedTime: 2, retry: .never), logger: Logger(label: "test"))
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key", http: http)
            server.misbehaviour.arm(prefix: "/v1/reports/", mode: Misbehaviour.Mode(rawValue: mode)!, count: 1)
            let start = Date()
            let error = await #expect(throws: NotaryError.self) { _ = try await qed.reports(hash: Self.digest) }
            #expect(error?.message.hasPrefix("qed: ") == true && error?.message.contains(named) == true, "\(error?.message ?? "")")
            #expect(error?.retryable == true, "\(mode) is worth asking again later")
            // The trickle would last 600 s; the guard ends it in seconds (60 allows a loaded machine).
            #expect(Date().timeIntervalSince(start) < 60)
            // The next request reaches the emulation again.
            #expect(try await qed.reports(hash: Self.digest).isEmpty)
        }
    }
}
