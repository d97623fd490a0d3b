import EvidenceSandbox
import Foundation
import Testing

@Suite("State across restarts")
struct PersistenceTests {
    @Test("reports survive a sandbox restart on the same state folder, unchanged")
    func restartKeepsReports() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hash = randomHash()
        let before: JSONValue = try await withSandbox(["--pending-seconds", "0.5"], stateDirectory: dir) { sandbox in
            let created = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: hash))
            let slug = try #require(created.json?["slug"]?.stringValue)
            return try await waitForSettled(sandbox.baseURL, slug: slug)
        }
        #expect(before["status"] == .string("confirmed"))
        let slug = try #require(before["slug"]?.stringValue)
        #expect(FileManager.default.fileExists(atPath: (dir as NSString).appendingPathComponent("reports.json")))

        try await withSandbox(["--pending-seconds", "0.5"], stateDirectory: dir) { sandbox in
            let again = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/\(slug)")
            #expect(again.status == 200)
            #expect(again.json == before)
            let search = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/?hash=\(hash)")
            #expect(search.json?["count"] == .int(1))
            let counters = try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("_sandbox/counters"))
            #expect(counters.json?["reports"] == .int(1))
        }
    }
}
