import EvidenceSandbox
import Foundation
import Testing

@Suite("Counters and request log")
struct CountersTests {
    @Test("counters count submissions per hash, requests and reports; reset zeroes them")
    func submissionsPerHash() async throws {
        try await withSandbox { sandbox in
            let a = randomHash()
            let b = randomHash()
            for hash in [a, a, b] {
                let r = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: hash))
                #expect(r.status == 201)
            }
            // A refused submission is not a submission.
            _ = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: "{}")
            let countersURL = sandbox.baseURL.appendingPathComponent("_sandbox/counters")
            let counters = try #require(try await TestHTTP.send("GET", countersURL).json)
            #expect(counters["submissions_by_hash"]?[a] == .int(2))
            #expect(counters["submissions_by_hash"]?[b] == .int(1))
            #expect(counters["requests"] == .int(4))
            #expect(counters["faults"] == .object([("5xx", .int(0)), ("429", .int(0)), ("dropped", .int(0)), ("spikes", .int(0))]))
            #expect(counters["reports"] == .int(3))

            let reset = try await TestHTTP.send("POST", sandbox.baseURL.appendingPathComponent("_sandbox/reset"))
            #expect(reset.status == 200)
            #expect(reset.json?["submissions_by_hash"] == .object([]))
            #expect(reset.json?["requests"] == .int(0))
            #expect(reset.json?["reports"] == .int(3))

            let wipe = try await TestHTTP.send("POST", URL(string: "/_sandbox/reset?reports=true", relativeTo: sandbox.baseURL)!.absoluteURL)
            #expect(wipe.json?["reports"] == .int(0))
        }
    }

    @Test("a 429 or 503 line in requests.log carries its Retry-After; spikes hold a request and are counted")
    func retryAfterAndSpikes() async throws {
        try await withSandbox(["--rate-limit", "1", "--retry-after", "2", "--spike-rate", "1", "--spike", "300ms"]) { sandbox in
            let start = Date()
            _ = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/")
            #expect(Date().timeIntervalSince(start) >= 0.3, "the spike held the request")
            // Four at once: with one allowed per second, at least one is refused even if a
            // loaded machine spreads them out (three would be if they all arrived together).
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 { group.addTask { try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/").status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 429 }.count >= 1, "\(statuses)")
            let text = try String(contentsOfFile: sandbox.stateDirectory + "/requests.log", encoding: .utf8)
            let lines = text.split(separator: "\n").compactMap { try? JSONValue.parse(Data($0.utf8)) }
            #expect(lines.first?["retry_after"] == nil)
            let throttled = lines.filter { $0["status"] == .int(429) }
            #expect(throttled.count == statuses.filter { $0 == 429 }.count && throttled.allSatisfy { $0["retry_after"] == .int(2) }, "\(text)")
            let counters = try #require(try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("_sandbox/counters")).json)
            #expect(counters["faults"]?["spikes"] == .int(5))
        }
    }

    @Test("requests.log has one JSON line per request with time, method, path, status and client")
    func requestLog() async throws {
        try await withSandbox { sandbox in
            _ = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/")
            _ = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/", key: nil)
            _ = try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("_sandbox/counters"))
            let text = try String(contentsOfFile: (sandbox.stateDirectory as NSString).appendingPathComponent("requests.log"), encoding: .utf8)
            let lines = text.split(separator: "\n").map { try? JSONValue.parse(Data($0.utf8)) }
            #expect(lines.count == 2, "control routes are not logged: \(text)")
            #expect(lines.first??["method"] == .string("GET"))
            #expect(lines.first??["path"] == .string("/v1/reports/"))
            #expect(lines.first??["status"] == .int(200))
            #expect(lines.last??["status"] == .int(401))
            #expect(lines.first??["client"] == .string("127.0.0.1"))
            #expect(lines.first??["time"]?.stringValue?.hasSuffix("Z") == true)
        }
    }
}
