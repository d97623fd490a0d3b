import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Logging
import Testing

/// The hash lookup that keeps an item from being notarized twice reads QED's report list in
/// either shape the docs allow, adopts only reports for the item's own hash, and fails loudly
/// (never "no reports") when the answer cannot be read.
@Suite("QED client: the report list")
struct QEDReportListTests {
    func withServer<T: Sendable>(_ shape: QEDEmulator.ListShape, ignoresHashFilter: Bool = false,
                                 _ body: @Sendable (SandboxServer, QEDClient) async throws -> T) async throws -> T {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-qed-list-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir, pendingSeconds: 0, qedListShape: shape,
                                                               qedIgnoresHashFilter: ignoresHashFilter))
        let http = HTTPClient(configuration: HTTPClientConfiguration(retry: .never), logger: Logger(label: "test"))
        return try await server.withRunning { url in
            try await body(server, QEDClient(baseURL: url.absoluteString + "/v1/", apiKey: "sandbox-key", http: http))
        }
    }

    func submission(_ digest: SHA256Digest) -> QEDSubmission {
        QEDSubmission(hash: digest, fileName: "clip.mp4", originalCreatedAt: Date(timeIntervalSince1970: 1_700_000_000),
                      name: "clip", note: "test", metaData: [:])
    }

    static let mine = SHA256Digest(hex: String(repeating: "5a", count: 32))!
    static let other = SHA256Digest(hex: String(repeating: "6b", count: 32))!

    @Test("a bare JSON array and a paginated object both find the report made for the hash",
          arguments: QEDEmulator.ListShape.allCases)
    func bothShapes(_ shape: QEDEmulator.ListShape) async throws {
        try await withServer(shape) { _, qed in
            let made = try await qed.submit(submission(Self.mine))
            #expect(try await qed.reports(hash: Self.mine).map(\.slug) == [made.slug])
            #expect(try await qed.reports(hash: Self.other).isEmpty)
        }
    }

    @Test("a listed report whose hash is not the item's is never adopted", arguments: QEDEmulator.ListShape.allCases)
    func wrongHash(_ shape: QEDEmulator.ListShape) async throws {
        try await withServer(shape, ignoresHashFilter: true) { _, qed in
            let foreign = try await qed.submit(submission(Self.other))
            let mine = try await qed.submit(submission(Self.mine))
            #expect(try await qed.reports(hash: Self.mine).map(\.slug) == [mine.slug])
            #expect(try await qed.reports(hash: SHA256Digest(hex: String(repeating: "7c", count: 32))!).isEmpty,
                    "\(foreign.slug) is listed but carries another hash")
        }
    }

    @Test("JSON of an unexpected shape is a retryable error quoting what came, not an empty list")
    func unreadable() async throws {
        try await withServer(.paginated) { server, qed in
            _ = try await qed.submit(submission(Self.mine))
            server.misbehaviour.arm(prefix: "/v1/reports/", mode: .wrongJSON, count: 1)
            let error = await #expect(throws: NotaryError.self) { _ = try await qed.reports(hash: Self.mine) }
            #expect(error?.retryable == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("neither a JSON array nor an object with \"results\"") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("maintenance mode") == true, "the excerpt shows what came: \(error?.message ?? "")")
            #expect(try await qed.reports(hash: Self.mine).count == 1)
        }
    }

    @Test("a list entry that is not a report makes the whole answer unreadable (retryable), with the entry named")
    func badEntry() throws {
        #expect(throws: QEDReport.ListError.self) { _ = try QEDReport.parseList(Data(#"[{"slug":"a"}]"#.utf8)) }
        let page = try QEDReport.parseList(Data(#"{"count":1,"next":null,"extra":{"x":1},"results":[{"slug":"a","status":"pending","hash":"ab","tx":{"hash":"0x1"},"new_field":[1]}]}"#.utf8))
        #expect(page.reports.map(\.slug) == ["a"] && page.next == nil)
    }

    @Test("a next page written with the host the server sees behind a proxy stays on the configured base")
    func nextPage() {
        let base = "https://api.qed.digital/v1/"
        #expect(QEDClient.relativePath("https://api.qed.digital/v1/reports/?hash=ab&page=2", base: base) == "reports/?hash=ab&page=2")
        #expect(QEDClient.relativePath("http://10.0.0.7:8000/v1/reports/?page=3", base: base) == "reports/?page=3")
        #expect(QEDClient.relativePath("/v1/reports/?page=2", base: base) == "reports/?page=2")
        #expect(QEDClient.relativePath("https://elsewhere.example/api/reports/?page=2", base: base) == nil)
    }
}
