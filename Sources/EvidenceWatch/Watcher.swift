import Foundation
import Glibc
import Logging
import Synchronization

/// Detects files dropped into watched folders once they are completely written.
///
/// Each call to `events()` starts one independent watch loop (its own inotify instance) on a
/// dedicated thread; the loop stops when the stream's consumer goes away (task cancelled or
/// iteration abandoned).
public final class Watcher: Sendable {
    /// Names never taken: partial downloads, editor and office temp files, dotfiles.
    public static let defaultIgnores: [String] = ["*.part", "*.tmp", ".~*", ".*", "*.crdownload", "*~"]

    let specs: [WatchSpec]
    let logger: Logger
    let ignores: [String]
    private let registry = LoopRegistry()

    public init(specs: [WatchSpec], logger: Logger, defaultIgnores: [String] = Watcher.defaultIgnores) {
        self.specs = specs
        self.logger = logger
        self.ignores = defaultIgnores
    }

    /// Initial full scan of every root (catch-up after downtime: every existing file is
    /// reported once it is settled), then inotify events until the consuming task is cancelled.
    /// The stream finishes with an error only for setup problems (`WatchError`: root missing or
    /// not a directory, inotify unavailable, watch limit reached during the initial scan).
    public func events() -> AsyncThrowingStream<WatchEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream<WatchEvent, any Error>.makeStream()
        let control: LoopControl
        do {
            control = try LoopControl()
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        registry.add(control)
        continuation.onTermination = { _ in control.requestStop() }

        let specs = self.specs
        let logger = self.logger
        let ignores = self.ignores
        let registry = self.registry
        let thread = Thread {
            let loop = WatchLoop(
                specs: specs, ignores: ignores, logger: logger,
                continuation: continuation, control: control)
            loop.run()
            registry.remove(control)
        }
        thread.name = "evidence-watch"
        thread.start()
        return stream
    }

    /// Stops every running loop of this watcher: each stream finishes (no error). A reload
    /// replaces the watcher with one for the new rules and stops this one.
    public func stop() {
        for c in registry.all() { c.requestStop() }
    }

    /// Test hook: behave as if the kernel had reported IN_Q_OVERFLOW, in every running loop of
    /// this watcher (full rescan of all roots, `.rescanned` per rule).
    public func injectOverflow() {
        let controls = registry.all()
        if controls.isEmpty {
            logger.debug("injectOverflow: no watch loop running")
        }
        for c in controls { c.requestOverflow() }
    }
}

/// The running loops of one `Watcher` (for `injectOverflow`).
final class LoopRegistry: Sendable {
    private let controls = Mutex<[ObjectIdentifier: LoopControl]>([:])

    func add(_ c: LoopControl) { controls.withLock { $0[ObjectIdentifier(c)] = c } }
    func remove(_ c: LoopControl) { _ = controls.withLock { $0.removeValue(forKey: ObjectIdentifier(c)) } }
    func all() -> [LoopControl] { controls.withLock { Array($0.values) } }
}

/// Cross-thread requests to a watch loop, with a self-pipe that wakes its `poll()` (Glibc's
/// module map does not export `eventfd`). The pipe is closed when the last reference goes (the
/// loop thread and the stream's termination handler both hold one), so a late wake-up never
/// writes to a reused descriptor.
final class LoopControl: Sendable {
    private struct Flags {
        var stop = false
        var overflow = false
    }

    /// Read end, polled by the loop.
    let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let flags = Mutex(Flags())

    init() throws(WatchError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw .systemCall(name: "pipe", errno: errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = fds[0]
        wakeWriteFD = fds[1]
    }

    deinit {
        close(wakeFD)
        close(wakeWriteFD)
    }

    var stopRequested: Bool { flags.withLock { $0.stop } }

    func requestStop() {
        flags.withLock { $0.stop = true }
        wake()
    }

    func requestOverflow() {
        flags.withLock { $0.overflow = true }
        wake()
    }

    /// Returns and clears a pending overflow request.
    func takeOverflowRequest() -> Bool {
        flags.withLock { f in
            defer { f.overflow = false }
            return f.overflow
        }
    }

    func wake() {
        var one: UInt8 = 1
        _ = write(wakeWriteFD, &one, 1)  // a full pipe already means "wake up"
    }

    func drainWake() {
        var buf = [UInt8](repeating: 0, count: 64)
        while read(wakeFD, &buf, buf.count) > 0 {}
    }
}
