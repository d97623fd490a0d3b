import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Logging
import Testing

/// QEDClient and TSAClient against the sandbox running in this process.
@Suite("Notary clients against the sandbox")
struct NotaryClientTests {
    let http = HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "test"))

    func withServer<T: Sendable>(pending: Double = 0.5, failRate: Double = 0, dropRate: Double = 0,
                                 _ body: @Sendable (URL) async throws -> T) async throws -> T {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-notary-client-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir, pendingSeconds: pending,
                                                               failRate: failRate, dropRate: dropRate,
                                                               faultPathPrefixes: ["/v1/", "/tsa"], seed: 7))
        return try await server.withRunning(body)
    }

    func submission(_ digest: SHA256Digest, name: String = "clip.mp4") -> QEDSubmission {
        QEDSubmission(hash: digest, fileName: "clip.mp4", originalCreatedAt: Date(timeIntervalSince1970: 1_700_000_000),
                      name: name, note: "test", metaData: ["unit": "K-9"])
    }

    @Test("submit, poll until confirmed with tx data, find by hash, fetch a real PDF")
    func lifecycle() async throws {
        let http = self.http
        try await withServer { url in
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key", http: http)
            let digest = SHA256Digest(hex: String(repeating: "1f", count: 32))!
            let made = try await qed.submit(submission(digest))
            #expect(made.status == .pending)
            #expect(made.hash == digest.hex)
            // The sandbox confirms a report 0.5 s after it was made: asked until it is no longer pending.
            var polled = made
            try await pollUntil(timeout: 30, every: 0.1) {
                polled = try await qed.report(slug: made.slug)
                return polled.status != .pending
            }
            #expect(polled.status == .confirmed)
            #expect(polled.txHash?.hasPrefix("0x") == true)
            #expect(polled.blockHeight != nil && polled.blockTime != nil && polled.explorerURL != nil)
            let found = try await qed.reports(hash: digest)
            #expect(found.map(\.slug) == [made.slug])
            #expect(try await qed.reports(hash: SHA256Digest(hex: String(repeating: "2e", count: 32))!).isEmpty)
            #expect(try await qed.certificate(slug: made.slug).prefix(5) == Data("%PDF-".utf8))
        }
    }

    @Test("a wrong API key is a permanent error that says to check the key, and never shows it")
    func wrongKey() async throws {
        let http = self.http
        try await withServer { url in
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "not-the-key-123", http: http)
            let error = await #expect(throws: NotaryError.self) {
                _ = try await qed.submit(submission(SHA256Digest(hex: String(repeating: "3d", count: 32))!))
            }
            #expect(error?.retryable == false)
            #expect(error?.message.contains("HTTP 401") == true)
            #expect(error?.message.contains("check the API key") == true)
            #expect(error?.message.contains("not-the-key-123") == false)
        }
    }

    @Test("a report QED refuses names the field in the error")
    func validation() async throws {
        let http = self.http
        try await withServer { url in
            let qed = QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key", http: http)
            let long = String(repeating: "n", count: 300)
            let error = await #expect(throws: NotaryError.self) {
                _ = try await qed.submit(submission(SHA256Digest(hex: String(repeating: "4c", count: 32))!, name: long))
            }
            #expect(error?.retryable == false)
            #expect(error?.message.contains("HTTP 400") == true)
            #expect(error?.message.contains("name:") == true, "\(error?.message ?? "")")
        }
    }

    @Test("5xx answers are retryable errors carrying the notary's name")
    func serverErrors() async throws {
        let http = self.http
        try await withServer(failRate: 1) { url in
            let qed = QEDClient(name: "qed-main", baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key", http: http)
            let error = await #expect(throws: NotaryError.self) {
                _ = try await qed.submit(submission(SHA256Digest(hex: String(repeating: "5b", count: 32))!))
            }
            #expect(error?.retryable == true)
            #expect(error?.message.hasPrefix("qed-main:") == true)
        }
    }

    @Test("TSA: a dead first URL falls over to the next; the token verifies against the chain")
    func tsaFailover() async throws {
        let http = self.http
        try await withServer { url in
            let ca = FileManager.default.temporaryDirectory.appendingPathComponent("tsa-ca-\(UUID().uuidString).pem").path
            defer { try? FileManager.default.removeItem(atPath: ca) }
            _ = try await http.execute(HTTPRequest(url: url.absoluteString + "/tsa/ca.pem", downloadTo: ca))
            let tsa = TSAClient(urls: ["http://127.0.0.1:9/tsa", url.absoluteString + "/tsa"], caFile: ca, http: http)
            let digest = SHA256Digest(hex: String(repeating: "6a", count: 32))!
            let (token, used) = try await tsa.timestamp(digest)
            #expect(used == url.absoluteString + "/tsa")
            #expect(token.digest == digest)
            #expect(abs(token.genTime.timeIntervalSinceNow) < 60)
        }
    }

    @Test("TSA: a reply that is not application/timestamp-reply is refused, naming the content type, and asked again later")
    func tsaWrongType() async throws {
        let http = self.http
        try await withServer { url in
            // A misconfigured TSA URL: the sandbox's reset route answers POST with 200 and JSON.
            let tsa = TSAClient(urls: [url.absoluteString + "/_sandbox/reset"], trust: TSATrust(), http: http)
            let error = await #expect(throws: NotaryError.self) {
                _ = try await tsa.timestamp(SHA256Digest(hex: String(repeating: "7a", count: 32))!)
            }
            #expect(error?.message.contains("not application/timestamp-reply") == true, "\(error?.message ?? "")")
            #expect(error?.retryable == true)
        }
    }
}
