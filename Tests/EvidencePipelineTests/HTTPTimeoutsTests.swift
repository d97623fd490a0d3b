import EvidenceConfig
import EvidenceCore
@testable import EvidenceNotary
import EvidencePipeline
import EvidenceSandbox
import Foundation
import Logging
import Testing

/// `connect_timeout` and `stall_timeout` travel from the config file to the clients the
/// pipeline builds, and a stalled answer really ends at the configured time.
@Suite("HTTP timeouts from the config")
struct HTTPTimeoutsTests {
    static let digest = SHA256Digest(hex: String(repeating: "5e", count: 32))!

    @Test("a QED notary with stall_timeout = \"1s\" abandons a trickling answer in seconds (the default waits 60 s) and asks again")
    func stallTimeoutReachesTheNotaryClient() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-timeouts-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        setenv("EVIDENCE_TEST_TIMEOUTS_QED_KEY", "sandbox-key", 1)
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir + "/sandbox"))
        try await server.withRunning { (url: URL) async throws -> Void in
            let file = dir + "/evidence.toml"
            try """
                [notaries.qed]
                kind = "qed"
                base_url = "\(url.absoluteString)/v1/"
                api_key_env = "EVIDENCE_TEST_TIMEOUTS_QED_KEY"
                connect_timeout = "2s"
                stall_timeout = "1s"
                """.write(toFile: file, atomically: true, encoding: .utf8)
            let config = try ConfigLoader.load(path: file)
            let notaries = try Notaries.build(config: config, logger: Logger(label: "test"))
            guard case .qed(let qed) = try #require(notaries.entries["qed"]).client else {
                Issue.record("qed is not a QED client"); return
            }
            #expect(qed.http.configuration.lowSpeedTime == 1 && qed.http.configuration.connectTimeout == 2)

            // One byte every 2 s: below 1 byte/s, so the 1 s stall guard abandons the attempt
            // and the client asks again (the sandbox misbehaves once), as with any network error.
            server.misbehaviour.arm(prefix: "/v1/reports/", mode: .slow, count: 1)
            let start = Date()
            #expect(try await qed.reports(hash: Self.digest).isEmpty)
            let took = Date().timeIntervalSince(start)
            #expect(took < 30, "the stall ended after \(took) s; stall_timeout is 1 s, the default 60 s")
            let log = try String(contentsOfFile: dir + "/sandbox/requests.log", encoding: .utf8)
            let asked = log.split(separator: "\n").filter { $0.contains("\"/v1/reports/") }
            #expect(asked.count == 2, "one stalled attempt, one answered: \(log)")
        }
    }
}
