import Foundation

/// What every emulated archive provider shares with the rest of the sandbox: its own state
/// folder, the counters (uploads per remote path), the seeded random source, the clock, and
/// the test controls (expire every access token, corrupt the next stored upload).
///
/// Sandbox credentials are fixed and public (see each emulator's doc comment); they exist so
/// `make demo` and the tests run with no account.
public struct ProviderEnvironment: Sendable {
    /// `<state>/<provider>/`: files, metadata and sessions, persisted so a restarted sandbox
    /// on the same folder still has them.
    public let stateDirectory: String
    public let counters: SandboxCounters
    public let random: SandboxRandom
    public let clock: @Sendable () -> Date
    /// Seconds an access token stays valid.
    public let tokenLifetime: Double
    public let control: ProviderControl

    public init(stateDirectory: String, counters: SandboxCounters, random: SandboxRandom,
                clock: @escaping @Sendable () -> Date, tokenLifetime: Double, control: ProviderControl) {
        self.stateDirectory = stateDirectory
        self.counters = counters
        self.random = random
        self.clock = clock
        self.tokenLifetime = tokenLifetime
        self.control = control
    }
}

/// Test switches shared by the provider emulations, driven by `/_sandbox/` control routes:
/// - `POST /_sandbox/expire-tokens` bumps `tokenGeneration`: every access token issued before
///   is answered 401 as expired (refresh tokens stay valid), so clients must refresh once.
/// - `POST /_sandbox/corrupt-next-upload?provider=NAME` makes that provider flip one byte of
///   the next file it stores (after receiving it, before computing its own hash), as a
///   corruption in transit would look to a client that verifies by the provider's hash.
/// - `POST /_sandbox/advance-clock?seconds=N` moves the providers' clock forward: codes and
///   tokens issued before expire as they would after that long (e.g. a login code pasted late).
public final class ProviderControl: @unchecked Sendable {
    private let lock = NSLock()
    private var generation = 0
    private var corrupt: Set<String> = []
    private var offset: TimeInterval = 0

    public init() {}

    public var tokenGeneration: Int {
        lock.lock(); defer { lock.unlock() }
        return generation
    }

    public func expireTokens() {
        lock.lock(); generation += 1; lock.unlock()
    }

    /// Seconds added to the sandbox clock for the provider emulations.
    public var clockOffset: TimeInterval {
        lock.lock(); defer { lock.unlock() }
        return offset
    }

    public func advanceClock(by seconds: TimeInterval) {
        lock.lock(); offset += seconds; lock.unlock()
    }

    public func corruptNextUpload(provider: String) {
        lock.lock(); corrupt.insert(provider); lock.unlock()
    }

    /// True once after `corruptNextUpload(provider:)`: the caller corrupts this upload.
    public func takeCorruption(provider: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return corrupt.remove(provider) != nil
    }

    public func reset() {
        lock.lock(); corrupt = []; lock.unlock()
    }
}
