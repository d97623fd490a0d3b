import Foundation

/// A seedable, thread-safe random source (SplitMix64), so that a sandbox started with
/// `--seed N` makes the same fault decisions and identifiers for the same request sequence.
public final class SandboxRandom: @unchecked Sendable {
    private let lock = NSLock()
    private var state: UInt64

    /// - Parameter seed: fixed seed for reproducible runs; nil draws one from the system.
    public init(seed: UInt64?) {
        var system = SystemRandomNumberGenerator()
        self.state = seed ?? system.next()
    }

    public func next() -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public func unit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Uniform in `range` (upper bound exclusive), without modulo bias worth caring about here.
    public func int(in range: Range<Int>) -> Int {
        precondition(!range.isEmpty)
        return range.lowerBound + Int(next() % UInt64(range.count))
    }

    public func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
    }

    /// Lowercase letters and digits, as service slugs look.
    public func slug(length: Int = 12) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<length).map { _ in alphabet[int(in: 0..<alphabet.count)] })
    }
}
