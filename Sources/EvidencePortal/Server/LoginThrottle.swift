import Foundation
import Synchronization

/// Stops password guessing at the portal, per client address and per user name.
///
/// After `policy.failures` failed sign-ins within `policy.window`, a client address (an IPv6
/// client by its /64, which one host usually has whole) or a user name (from any address) is
/// blocked for `policy.firstBlock`; each further block of the same key lasts twice the one
/// before, up to `policy.longestBlock`. While a key is blocked, every sign-in that involves it is
/// refused before the credentials are looked at, so the right password is refused too: a guess
/// that happens to be right must not be told apart by its answer. A successful sign-in (only
/// possible while neither key is blocked) forgets both keys. Every user name tried is tracked,
/// not only the configured one, so that which name is real cannot be learnt from the blocks.
///
/// Memory is bounded: at most `policy.maxEntries` keys; a key with no failure for
/// `policy.forgetAfter` and no block running is dropped; when the table is full, the unblocked
/// key idle longest goes first (else the block ending soonest).
///
/// Time comes from `now`, so expiry and back-off are tested without sleeping.
public final class LoginThrottle: Sendable {
    public struct Policy: Sendable, Equatable {
        public var failures: Int
        public var window: Duration
        public var firstBlock: Duration
        public var longestBlock: Duration
        public var forgetAfter: Duration
        public var maxEntries: Int

        public init(failures: Int = 5, window: Duration = .seconds(600), firstBlock: Duration = .seconds(60),
                    longestBlock: Duration = .seconds(3600), forgetAfter: Duration = .seconds(86_400), maxEntries: Int = 10_000) {
            self.failures = failures; self.window = window; self.firstBlock = firstBlock
            self.longestBlock = longestBlock; self.forgetAfter = forgetAfter; self.maxEntries = maxEntries
        }
    }

    /// What a sign-in is counted against.
    public enum Key: Hashable, Sendable, CustomStringConvertible {
        case address(String)
        case user(String)
        public var description: String {
            switch self {
            case .address(let a): return "address \(a)"
            // What was typed as a user name is sometimes a password: never logged.
            case .user: return "a user name (not logged)"
            }
        }
    }

    /// The outcome of one sign-in.
    public enum Attempt: Sendable {
        /// The credentials were right: the keys start afresh.
        case allowed
        /// Wrong credentials, counted; `blocked` lists the blocks this failure started (for the log).
        case denied(blocked: [(key: Key, length: Duration)])
        /// Refused unchecked: `retryAfter` whole seconds until the longest block involved ends.
        case throttled(retryAfter: Int, key: Key)
    }

    struct Entry {
        var failures: [ContinuousClock.Instant] = []
        var blockedUntil: ContinuousClock.Instant?
        var blocks = 0
        var lastFailure: ContinuousClock.Instant
    }

    public let policy: Policy
    private let now: @Sendable () -> ContinuousClock.Instant
    private let table = Mutex<[Key: Entry]>([:])

    public init(policy: Policy = Policy(), now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.policy = policy
        self.now = now
    }

    /// One sign-in with `keys` (client address, user name): refused unchecked while any key is
    /// blocked, else `verify` decides, and a failure is counted against every key. Checked and
    /// counted under one lock, so concurrent guesses cannot all pass the check before the first
    /// failures are counted: exactly `policy.failures` wrong answers, then 429s.
    public func attempt(_ keys: [Key], verify: () -> Bool) -> Attempt {
        let t = now()
        return table.withLock { table -> Attempt in
            var worst: (Duration, Key)?
            for key in keys {
                guard let until = table[key]?.blockedUntil, until > t else { continue }
                if worst == nil || until - t > worst!.0 { worst = (until - t, key) }
            }
            if let (left, key) = worst { return .throttled(retryAfter: Self.wholeSeconds(left), key: key) }
            if verify() {
                for key in keys { table[key] = nil }
                return .allowed
            }
            var started: [(key: Key, length: Duration)] = []
            for key in keys {
                if table[key] == nil { makeRoom(&table, at: t) }
                var e = table[key] ?? Entry(lastFailure: t)
                e.failures.removeAll { t - $0 > policy.window }
                e.failures.append(t)
                e.lastFailure = t
                if e.failures.count >= policy.failures {
                    let length = blockLength(after: e.blocks)
                    e.blockedUntil = t + length
                    e.blocks += 1
                    e.failures.removeAll()
                    started.append((key, length))
                }
                table[key] = e
            }
            return .denied(blocked: started)
        }
    }

    /// Keys held now (for tests of the bound).
    public var count: Int { table.withLock { $0.count } }

    /// `firstBlock` doubled per earlier block, at most `longestBlock`.
    func blockLength(after blocks: Int) -> Duration {
        var length = policy.firstBlock
        for _ in 0..<min(blocks, 32) where length < policy.longestBlock { length = length * 2 }
        return min(length, policy.longestBlock)
    }

    /// Drops forgotten keys; when still full, the unblocked key idle longest, else the block
    /// ending soonest.
    private func makeRoom(_ table: inout [Key: Entry], at t: ContinuousClock.Instant) {
        guard table.count >= policy.maxEntries else { return }
        table = table.filter { _, e in (e.blockedUntil.map { $0 > t } ?? false) || t - e.lastFailure <= policy.forgetAfter }
        while table.count >= policy.maxEntries {
            let unblocked = table.filter { $0.value.blockedUntil.map { $0 <= t } ?? true }
            let victim = unblocked.min { $0.value.lastFailure < $1.value.lastFailure }?.key
                ?? table.min { ($0.value.blockedUntil ?? t) < ($1.value.blockedUntil ?? t) }?.key
            guard let victim else { return }
            table[victim] = nil
        }
    }

    static func wholeSeconds(_ d: Duration) -> Int {
        let (s, atto) = d.components
        return Int(s) + (atto > 0 ? 1 : 0)
    }

    /// The key of a client address: an IPv4 address as is (also when IPv4-mapped), an IPv6
    /// address by its /64 prefix; `unknown` when the connection has none (a test channel).
    public static func addressKey(_ ip: String?) -> Key {
        guard let ip else { return .address("unknown") }
        if ip.hasPrefix("::ffff:"), ip.contains(".") { return .address(String(ip.dropFirst(7))) }
        guard ip.contains(":") else { return .address(ip) }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, ip, &bytes) == 1 else { return .address(ip) }
        let prefix = stride(from: 0, to: 8, by: 2).map { String(format: "%x", Int(bytes[$0]) << 8 | Int(bytes[$0 + 1])) }
        return .address(prefix.joined(separator: ":") + "::/64")
    }
}
