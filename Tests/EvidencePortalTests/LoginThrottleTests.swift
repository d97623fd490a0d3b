import EvidenceProcess
@testable import EvidencePortal
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// A clock the test moves: blocks expire without sleeping.
final class TestClock: Sendable {
    let start = ContinuousClock.now
    private let offset = Mutex<Duration>(.zero)
    func advance(_ d: Duration) { offset.withLock { $0 += d } }
    var now: @Sendable () -> ContinuousClock.Instant { { [self] in start + offset.withLock { $0 } } }
}

/// Issue 28 point 7: passwords guessed at ~10/s over 50 connections. Failed sign-ins are now
/// counted per client address and per user name; past the limit every sign-in involving either
/// is answered 429 with Retry-After, the right password included, for a block that doubles.
@Suite("Portal sign-in throttling")
struct LoginThrottleTests {
    static let address = LoginThrottle.Key.address("192.0.2.7")
    static let user = LoginThrottle.Key.user("auditor")

    func fail(_ t: LoginThrottle, _ keys: [LoginThrottle.Key]) -> LoginThrottle.Attempt { t.attempt(keys) { false } }

    func retryAfter(_ a: LoginThrottle.Attempt) -> Int? {
        if case .throttled(let seconds, _) = a { return seconds }
        return nil
    }

    @Test("five failures in the window, then a block that doubles each time, up to the longest; the right password is refused while blocked")
    func blocksGrow() {
        let clock = TestClock()
        let t = LoginThrottle(policy: .init(failures: 5, window: .seconds(600), firstBlock: .seconds(60), longestBlock: .seconds(200)), now: clock.now)
        for round in 0..<4 {
            for i in 1...5 {
                guard case .denied(let blocked) = fail(t, [Self.address, Self.user]) else { Issue.record("round \(round) failure \(i) was not counted"); return }
                #expect(blocked.isEmpty == (i < 5), "round \(round) failure \(i)")
            }
            let expected = [60, 120, 200, 200][round]
            #expect(retryAfter(t.attempt([Self.address]) { true }) == expected, "round \(round): right password while blocked")
            #expect(retryAfter(t.attempt([.address("198.51.100.1"), Self.user]) { true }) == expected, "the user is blocked from any address")
            clock.advance(.seconds(expected - 1))
            #expect(retryAfter(t.attempt([Self.address]) { true }) == 1)
            clock.advance(.seconds(1))
        }
        guard case .allowed = t.attempt([Self.address, Self.user], verify: { true }) else { Issue.record("not allowed after the block"); return }
    }

    @Test("a success forgets the failures; failures older than the window do not count")
    func successAndWindowReset() {
        let clock = TestClock()
        let t = LoginThrottle(policy: .init(failures: 5, window: .seconds(60)), now: clock.now)
        for _ in 0..<4 { _ = fail(t, [Self.address]) }
        _ = t.attempt([Self.address]) { true }
        for _ in 0..<4 { _ = fail(t, [Self.address]) }
        clock.advance(.seconds(61))
        for _ in 0..<4 { _ = fail(t, [Self.address]) }
        guard case .denied(let blocked) = fail(t, [Self.address]) else { Issue.record("blocked too early"); return }
        #expect(blocked.count == 1, "the fifth failure within one window blocks")
        #expect(retryAfter(t.attempt([Self.address]) { true }) != nil)
    }

    @Test("the table is bounded; a running block outlives idle keys when room is made")
    func bounded() {
        let clock = TestClock()
        let t = LoginThrottle(policy: .init(failures: 2, maxEntries: 50), now: clock.now)
        _ = fail(t, [Self.user]); _ = fail(t, [Self.user])
        for i in 0..<1000 {
            _ = fail(t, [.address("10.0.\(i / 256).\(i % 256)")])
            clock.advance(.milliseconds(10))
        }
        #expect(t.count <= 50)
        #expect(retryAfter(t.attempt([Self.user]) { true }) != nil, "the blocked user was evicted")
    }

    @Test("an IPv6 client is counted by its /64; an IPv4-mapped address as IPv4")
    func addressKeys() {
        #expect(LoginThrottle.addressKey("2001:db8:1:2:aaaa::1") == LoginThrottle.addressKey("2001:db8:1:2:bbbb::9"))
        #expect(LoginThrottle.addressKey("2001:db8:1:2::1") == .address("2001:db8:1:2::/64"))
        #expect(LoginThrottle.addressKey("2001:db8:1:3::1") != LoginThrottle.addressKey("2001:db8:1:2::1"))
        #expect(LoginThrottle.addressKey("::ffff:192.0.2.1") == .address("192.0.2.1"))
        #expect(LoginThrottle.addressKey(nil) == .address("unknown"))
    }

    /// curl, from `source` (a loopback address), every URL on its own connection at once; the status of each.
    /// Run off the cooperative pool (`runDetached`): the portal answers on that pool, and a test
    /// blocking it would starve the server it is waiting for.
    static func curl(_ urls: [String], user: String? = nil, bearer: String? = nil, source: String = "127.0.0.1", headers: Bool = false) async throws -> String {
        var args = ["-s", "--interface", source, "--parallel", "--parallel-immediate", "--parallel-max", "50"]
        if let user { args += ["-u", user] }
        if let bearer { args += ["-H", "Authorization: Bearer \(bearer)"] }
        if headers { args += ["-i"] } else { args += ["-w", "%{http_code}\n"] }
        for url in urls { args += [url, "-o", headers ? "-" : "/dev/null"] }
        let r = try await ChildProcess.runDetached("/usr/bin/curl", args, separateStandardError: true, timeout: 60)
        return r.output
    }

    static func codes(_ output: String) -> [String: Int] {
        output.split(separator: "\n").reduce(into: [:]) { $0[String($1), default: 0] += 1 }
    }

    @Test("over HTTP, 20 wrong passwords on 20 connections at once: exactly 5 answered 401, the rest 429 with Retry-After; other users and addresses are unaffected")
    func hammered() async throws {
        let f = try PortalFixture()
        let clock = TestClock()
        let app = try f.app(throttle: LoginThrottle(now: clock.now))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let url = "http://127.0.0.1:\(port)/"
            let right = "\(PortalFixture.user):\(PortalFixture.password)"
            let burst = Self.codes(try await Self.curl(Array(repeating: url, count: 20), user: "\(PortalFixture.user):guess"))
            #expect(burst == ["401": 5, "429": 15], "\(burst)")

            // The right password, from the same address: refused, with a Retry-After and a clear page.
            let answer = try await Self.curl([url], user: right, headers: true)
            #expect(answer.hasPrefix("HTTP/1.1 429"), "\(answer.prefix(200))")
            let retry = answer.split(separator: "\r\n").first { $0.lowercased().hasPrefix("retry-after:") }
            #expect(retry.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } == 60, "\(String(describing: retry))")
            #expect(answer.contains("Too many failed sign-ins") && answer.contains("even with the right password"))

            // Another address: the token (no user name) is fine; another user's wrong password is a plain 401;
            // the blocked user is refused from there too.
            #expect(Self.codes(try await Self.curl([url], bearer: PortalFixture.token, source: "127.0.0.2")) == ["200": 1])
            #expect(Self.codes(try await Self.curl([url], user: "someone:else", source: "127.0.0.2")) == ["401": 1])
            #expect(Self.codes(try await Self.curl([url], user: right, source: "127.0.0.2")) == ["429": 1])

            // Once the block has passed (no sleeping: the clock is moved), the right password works again.
            clock.advance(.seconds(60))
            #expect(Self.codes(try await Self.curl([url], user: right)) == ["200": 1])
        }
    }

    @Test("over HTTP, guessed tokens block that address only: the user signs in from another address")
    func addressOnly() async throws {
        let f = try PortalFixture()
        let app = try f.app(throttle: LoginThrottle(now: TestClock().now))
        try await app.test(.live) { client in
            let url = "http://127.0.0.1:\(try #require(client.port))/"
            #expect(Self.codes(try await Self.curl(Array(repeating: url, count: 8), bearer: "guessed-token")) == ["401": 5, "429": 3])
            #expect(Self.codes(try await Self.curl([url], bearer: PortalFixture.token)) == ["429": 1])
            #expect(Self.codes(try await Self.curl([url], user: "\(PortalFixture.user):\(PortalFixture.password)", source: "127.0.0.3")) == ["200": 1])
        }
    }
}
