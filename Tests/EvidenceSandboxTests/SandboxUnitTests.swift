import EvidenceSandbox
import Foundation
import Testing

@Suite("Sandbox building blocks")
struct SandboxUnitTests {
    @Test("latency: a fixed duration, a range, and refusals")
    func latencyParsing() throws {
        #expect(try LatencySpec(parsing: "0ms").isZero)
        let fixed = try LatencySpec(parsing: "250ms")
        #expect(fixed.lower == 0.25 && fixed.upper == 0.25)
        let range = try LatencySpec(parsing: "50ms..300ms")
        #expect(range.lower == 0.05 && range.upper == 0.3)
        #expect(range.seconds(unit: 0.5) == 0.175)
        #expect(throws: LatencySpec.ParseError.self) { try LatencySpec(parsing: "300ms..50ms") }
        #expect(throws: LatencySpec.ParseError.self) { try LatencySpec(parsing: "fast") }
        #expect(throws: LatencySpec.ParseError.self) { try LatencySpec(parsing: "1s..2s..3s") }
    }

    @Test("rate limiter: N per second and client, then throttled until the window slides")
    func rateLimiter() {
        let limiter = RateLimiter(limit: 2)
        #expect(limiter.check(client: "a", now: 100.0) == .allowed)
        #expect(limiter.check(client: "a", now: 100.1) == .allowed)
        #expect(limiter.check(client: "a", now: 100.2) == .throttled(retryAfter: 1))
        #expect(limiter.check(client: "b", now: 100.2) == .allowed)
        #expect(limiter.check(client: "a", now: 101.05) == .allowed)
        #expect(RateLimiter(limit: 0).check(client: "a") == .allowed)
    }

    @Test("JSON keeps member order, round-trips, and reports errors like Python")
    func json() throws {
        let text = #"{"z":1,"a":[true,null,2.5,"x\"y\u00e9"],"m":{}}"#
        let value = try JSONValue.parse(Data(text.utf8))
        #expect(value.description == #"{"z":1,"a":[true,null,2.5,"x\"yé"],"m":{}}"#)
        #expect(try JSONValue.parse(value.serialized()) == value)
        do {
            _ = try JSONValue.parse(Data("{\"a\": ".utf8))
            Issue.record("parsed a truncated document")
        } catch {
            #expect(error.description == "Expecting value: line 1 column 7 (char 6)")
        }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data("{} x".utf8)) }
    }

    @Test("seeded random sources repeat; unseeded ones differ")
    func random() {
        let a = SandboxRandom(seed: 5)
        let b = SandboxRandom(seed: 5)
        #expect((0..<8).map { _ in a.next() } == (0..<8).map { _ in b.next() })
        #expect(SandboxRandom(seed: nil).next() != SandboxRandom(seed: nil).next())
        let u = SandboxRandom(seed: 1).unit()
        #expect(u >= 0 && u < 1)
    }

    @Test("fault decisions: drop before throttle before server errors")
    func faultOrder() {
        let counters = SandboxCounters()
        let dropping = FaultInjector(options: SandboxOptions(stateDirectory: "/nonexistent", failRate: 1, rateLimit: 1, dropRate: 1),
                                     random: SandboxRandom(seed: 1), counters: counters)
        #expect(dropping.decide(client: "c").action == .drop)
        let failing = FaultInjector(options: SandboxOptions(stateDirectory: "/nonexistent", failRate: 1, rateLimit: 1),
                                    random: SandboxRandom(seed: 1), counters: counters)
        if case .serverError(let status) = failing.decide(client: "c").action {
            #expect([500, 502, 503].contains(status))
        } else {
            Issue.record("expected a server error")
        }
        #expect(failing.decide(client: "c").action == .throttle(retryAfter: 1))
        #expect(counters.snapshot.dropped == 1 && counters.snapshot.faults5xx == 1 && counters.snapshot.faults429 == 1)
    }
}
