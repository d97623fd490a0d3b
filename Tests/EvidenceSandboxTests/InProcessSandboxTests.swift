import EvidenceSandbox
import Foundation
import Testing

/// A clock the test moves by hand.
private final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now = Date(timeIntervalSince1970: 1_800_000_000)

    func read() -> Date {
        lock.lock(); defer { lock.unlock() }
        return now
    }

    func advance(_ seconds: Double) {
        lock.lock(); now += seconds; lock.unlock()
    }
}

@Suite("SandboxServer in-process")
struct InProcessSandboxTests {
    @Test("with an injected clock a report confirms exactly when the pending time has passed")
    func injectedClock() async throws {
        let dir = try makeTemporaryDirectory("inproc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clock = ManualClock()
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir, pendingSeconds: 60, seed: 9),
                                       clock: { clock.read() })
        try await server.withRunning { base in
            let created = try await TestHTTP.qed("POST", base, "/v1/reports/", json: reportJSON(hash: randomHash()))
            #expect(created.status == 201)
            let slug = try #require(created.json?["slug"]?.stringValue)
            #expect(created.json?["created_at"] == .string("2027-01-15T08:00:00Z"))

            clock.advance(59.9)
            #expect(try await TestHTTP.qed("GET", base, "/v1/reports/\(slug)").json?["status"] == .string("pending"))
            clock.advance(0.1)
            let confirmed = try await TestHTTP.qed("GET", base, "/v1/reports/\(slug)").json
            #expect(confirmed?["status"] == .string("confirmed"))
            #expect(confirmed?["tx"]?["block_time"] == .string("2027-01-15T08:01:00Z"))
        }
        #expect(server.counters.snapshot.submissionsByHash.values.reduce(0, +) == 1)
    }

    @Test("the same seed gives the same slugs")
    func seededSlugs() async throws {
        func firstSlug() async throws -> String {
            let dir = try makeTemporaryDirectory("inproc")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir, seed: 77))
            return try await server.withRunning { base in
                let r = try await TestHTTP.qed("POST", base, "/v1/reports/", json: reportJSON(hash: randomHash()))
                return try #require(r.json?["slug"]?.stringValue)
            }
        }
        let a = try await firstSlug()
        let b = try await firstSlug()
        #expect(a == b)
    }
}
