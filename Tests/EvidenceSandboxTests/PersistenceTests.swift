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

    @Test("the reports file is a journal: a line torn by a kill is dropped, the old whole-file form is read, and both go on being appended to")
    func journalSurvivesTornLineAndOldForm() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = (dir as NSString).appendingPathComponent("reports.json")
        let (first, second) = (randomHash(), randomHash())
        let slug: String = try await withSandbox(["--pending-seconds", "0"], stateDirectory: dir) { sandbox in
            let created = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: first))
            return try #require(created.json?["slug"]?.stringValue)
        }
        var lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == #"{"version":2}"#)
        #expect(lines.count == 3 && lines.last == "")  // header, one report, the final newline
        // A kill in the middle of an append: half a line, no newline.
        let whole = String(lines[1])
        try (lines.joined(separator: "\n") + whole.prefix(whole.count / 2)).write(toFile: file, atomically: false, encoding: .utf8)
        try await withSandbox(["--pending-seconds", "0"], stateDirectory: dir) { sandbox in
            #expect(try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/\(slug)").status == 200)
            let counters = try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("_sandbox/counters"))
            #expect(counters.json?["reports"] == .int(1))
            _ = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: second))
        }
        lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 4 && lines.last == "")  // the torn half is gone, the new report follows the first
        // The form of earlier versions: one object holding every report.
        try (#"{"version":1,"reports":["# + lines[1] + "," + lines[2] + "]}").write(toFile: file, atomically: false, encoding: .utf8)
        try await withSandbox(["--pending-seconds", "0"], stateDirectory: dir) { sandbox in
            for hash in [first, second] {
                let search = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/?hash=\(hash)")
                #expect(search.json?["count"] == .int(1))
            }
        }
        #expect(try String(contentsOfFile: file, encoding: .utf8).hasPrefix(#"{"version":2}"# + "\n"))
    }
}
