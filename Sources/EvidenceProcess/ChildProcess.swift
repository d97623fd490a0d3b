import CEvidenceSys
import Foundation
import Glibc
import Synchronization

/// A child process started with `posix_spawn`: the one place this project starts processes.
///
/// Foundation's `Process` is not used anywhere: in Swift 6.3.1 its `run()` reads each
/// `/proc/self/fd` entry's whole 256-byte `d_name` and crashes at random when an entry sits at
/// the end of glibc's buffer (swift-corelibs-foundation pull request 5472, merged after 6.3.1).
///
/// The child gets:
/// - only descriptors 0, 1 and 2, and those passed on purpose (`descriptors`, which become 3, 4, …);
///   every other descriptor is closed in the child, whether or not it was opened close-on-exec,
///   so a test process with a thousand open sockets leaks none;
/// - an empty signal mask and default dispositions for the signals a service handles (threads
///   of a Swift process block signals, and a child would inherit that and ignore SIGTERM);
/// - standard input from `/dev/null` unless told otherwise.
///
/// Waiting never uses the cooperative thread pool: `wait()` blocks the calling thread and
/// `exit()` waits on a thread of its own. The child is reaped exactly once, whichever of
/// `wait`, `exit`, `isRunning` or `run` sees it end first; the others read the recorded result.
public final class ChildProcess: Sendable {
    /// Where a standard stream of the child goes.
    public enum Output: Sendable {
        /// The parent's own stream.
        case inherit
        /// `/dev/null`.
        case null
        /// A file, created 0600 if missing; appended to, or truncated when `append` is false.
        case file(String, append: Bool = true)
        /// A pipe the parent reads: `stdoutPipe` / `stderrPipe` (use `run` to collect it).
        case pipe
        /// Standard error only: wherever standard output goes.
        case stdout
    }

    /// Where standard input comes from.
    public enum Input: Sendable {
        case null
        case inherit
        case file(String)
        /// A pipe the parent writes: `stdinPipe`.
        case pipe
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        /// The exit code, or 128 + the signal's number as a shell reports it.
        public var status: Int32 {
            switch self {
            case .exited(let code): return code
            case .signaled(let signal): return 128 + signal
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): return "exited with \(code)"
            case .signaled(let signal): return "killed by signal \(signal)"
            }
        }
    }

    /// What `run` collected.
    public struct Result: Sendable {
        public let termination: Termination
        /// Standard output (with standard error interleaved, unless `separateStandardError`).
        public let output: String
        /// Standard error when collected separately; empty otherwise.
        public let standardError: String
        /// True when the child was killed because it outlived `timeout`.
        public let timedOut: Bool

        public var status: Int32 { termination.status }
        public var succeeded: Bool { termination == .exited(0) }
    }

    public enum SpawnError: Error, CustomStringConvertible {
        case spawn(executable: String, errno: Int32)
        case pipe(errno: Int32)
        case descriptor(fd: Int32, errno: Int32)

        public var description: String {
            switch self {
            case let .spawn(executable, code): return "cannot start \(executable): \(String(cString: strerror(code)))"
            case let .pipe(code): return "cannot make a pipe: \(String(cString: strerror(code)))"
            case let .descriptor(fd, code): return "cannot pass descriptor \(fd) on: \(String(cString: strerror(code)))"
            }
        }
    }

    public let pid: pid_t
    /// The executable as it was named (for messages).
    public let executable: String
    /// Write end of the child's standard input when it was `.pipe`: written by `send`, closed
    /// by `closeStdin` (never with `close` directly: a second close would close whatever
    /// descriptor of this process has taken the number since, a database's, say).
    public let stdinPipe: Int32?
    /// Whether `stdinPipe` is still open; held while writing, so a close never lands mid-write.
    private let stdinOpen = Mutex(true)
    /// Read end of the child's standard output when it was `.pipe`; the caller closes it.
    public let stdoutPipe: Int32?
    /// Read end of the child's standard error when it was `.pipe`; the caller closes it.
    public let stderrPipe: Int32?

    /// How the child ended, once it has been reaped (exactly once, by whichever caller saw it end).
    private let recorded = Mutex<Termination?>(nil)

    /// Starts `executable` (a path, or a name looked up on `PATH`) with `arguments`.
    ///
    /// - Parameters:
    ///   - environment: the child's whole environment; nil passes this process's on.
    ///   - directory: the child's working directory; nil keeps this process's.
    ///   - newProcessGroup: put the child in a process group of its own (its pid), so
    ///     `signalGroup` reaches its children too.
    ///   - descriptors: open descriptors of this process the child gets as 3, 4, … in this order
    ///     (the media probe's file: the child reads it without opening anything). They stay open
    ///     here; the caller closes them.
    public init(_ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
                directory: String? = nil, stdin: Input = .null, stdout: Output = .inherit,
                stderr: Output = .inherit, newProcessGroup: Bool = false, descriptors: [Int32] = []) throws(SpawnError) {
        self.executable = executable
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newProcessGroup {
            flags |= POSIX_SPAWN_SETPGROUP
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }

        // Pipe ends the parent keeps; the child's ends are closed here after the spawn.
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        func makePipe() throws(SpawnError) -> (read: Int32, write: Int32) {
            var fds: [Int32] = [-1, -1]
            guard evidence_pipe_cloexec(&fds) == 0 else { throw .pipe(errno: errno) }
            return (fds[0], fds[1])
        }
        func closeAll() {
            for fd in parentEnds + childEnds { close(fd) }
        }

        var inWrite: Int32?
        switch stdin {
        case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .inherit: break
        case .file(let path): posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
        case .pipe:
            let ends = try makePipe()
            parentEnds.append(ends.write)
            childEnds.append(ends.read)
            posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
            inWrite = ends.write
        }

        var outRead: Int32?
        var errRead: Int32?
        for (fd, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch output {
            case .inherit:
                break
            case .null:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            case .file(let path, let append):
                posix_spawn_file_actions_addopen(&actions, fd, path,
                                                 O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0o600)
            case .pipe:
                let ends: (read: Int32, write: Int32)
                do { ends = try makePipe() } catch { closeAll(); throw error }
                parentEnds.append(ends.read)
                childEnds.append(ends.write)
                posix_spawn_file_actions_adddup2(&actions, ends.write, fd)
                if fd == 1 { outRead = ends.read } else { errRead = ends.read }
            case .stdout:
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
            }
        }
        // Passed descriptors: first copied above the range they go to (close-on-exec, closed here
        // after the spawn), so that no dup2 overwrites a source still to be moved, and each dup2
        // has a different source and target (which clears close-on-exec on the target).
        let firstFree = 3 + Int32(descriptors.count)
        for (index, fd) in descriptors.enumerated() {
            let copy = fcntl(fd, F_DUPFD_CLOEXEC, firstFree)
            guard copy >= 0 else {
                let code = errno
                closeAll()
                throw .descriptor(fd: fd, errno: code)
            }
            childEnds.append(copy)
            posix_spawn_file_actions_adddup2(&actions, copy, 3 + Int32(index))
        }
        if let directory { evidence_spawn_addchdir(&actions, directory) }
        // Nothing but 0, 1, 2 and the passed descriptors reaches the child.
        evidence_spawn_addclosefrom(&actions, firstFree)

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envStrings = environment.map { env in env.map { "\($0.key)=\($0.value)" } }
        let envp: [UnsafeMutablePointer<CChar>?]? = envStrings.map { $0.map { strdup($0) } + [nil] }
        defer { envp?.forEach { free($0) } }

        var child: pid_t = 0
        let result: Int32 = argv.withUnsafeBufferPointer { args in
            let argvPointer = UnsafeMutablePointer(mutating: args.baseAddress!)
            if let envp {
                return envp.withUnsafeBufferPointer { env in
                    let envPointer = UnsafeMutablePointer(mutating: env.baseAddress!)
                    return executable.contains("/")
                        ? posix_spawn(&child, executable, &actions, &attributes, argvPointer, envPointer)
                        : posix_spawnp(&child, executable, &actions, &attributes, argvPointer, envPointer)
                }
            }
            return executable.contains("/")
                ? posix_spawn(&child, executable, &actions, &attributes, argvPointer, environ)
                : posix_spawnp(&child, executable, &actions, &attributes, argvPointer, environ)
        }
        for fd in childEnds { close(fd) }
        guard result == 0 else {
            for fd in parentEnds { close(fd) }
            throw .spawn(executable: executable, errno: result)
        }
        pid = child
        stdinPipe = inWrite
        stdoutPipe = outRead
        stderrPipe = errRead
    }

    /// This process's environment with `overrides` set and `removing` taken out.
    public static func environment(_ overrides: [String: String] = [:], removing: [String] = []) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in removing { env.removeValue(forKey: key) }
        env.merge(overrides) { _, new in new }
        return env
    }

    /// Writes `text` to the child's standard input (`stdin: .pipe`); false when it is closed.
    @discardableResult
    public func send(_ text: String) -> Bool {
        guard let fd = stdinPipe else { return false }
        return stdinOpen.withLock { open in
            guard open else { return false }
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n < 0 { if errno == EINTR { continue }; return false }
                bytes = bytes.dropFirst(n)
            }
            return true
        }
    }

    /// Closes the child's standard input (it reads end of file), once: later calls do nothing.
    public func closeStdin() {
        guard let fd = stdinPipe else { return }
        stdinOpen.withLock { open in
            if open { _ = Glibc.close(fd); open = false }
        }
    }

    /// Sends `signal` to the child, unless it has already been reaped (its pid may be reused).
    public func signal(_ signal: Int32) {
        recorded.withLock { if $0 == nil { _ = kill(pid, signal) } }
    }

    /// Sends `signal` to the child's process group (started with `newProcessGroup`).
    public func signalGroup(_ signal: Int32) {
        recorded.withLock { if $0 == nil { _ = kill(-pid, signal) } }
    }

    /// False once the child has ended (it is reaped then).
    public var isRunning: Bool { reapIfEnded() == nil }

    /// How the child ended, or nil while it runs. Does not block.
    public var termination: Termination? { reapIfEnded() }

    /// Blocks the calling thread until the child ends.
    @discardableResult
    public func wait() -> Termination {
        while true {
            if let done = reapIfEnded() { return done }
            // Wait without reaping, so a concurrent `isRunning` can never lose the status.
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == ECHILD {
                // Reaped by something other than this object: the status is lost.
                return recorded.withLock { $0 } ?? .exited(-1)
            }
        }
    }

    /// Waits for the child to end on a thread of its own, never on the cooperative pool.
    @discardableResult
    public func exit() async -> Termination {
        if let done = reapIfEnded() { return done }
        return await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: self.wait()) }
            thread.name = "wait \(pid)"
            thread.start()
        }
    }

    /// Waits up to `seconds` for the child to end; nil when it is still running then.
    public func wait(seconds: Double) -> Termination? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        var pause: UInt32 = 1_000
        while true {
            if let done = reapIfEnded() { return done }
            if Date() >= deadline { return nil }
            usleep(pause)
            pause = min(pause * 2, 50_000)
        }
    }

    /// SIGTERM, then SIGKILL if the child is still there after `grace` seconds; waits for it.
    @discardableResult
    public func terminate(grace: Double = 10) -> Termination {
        signal(SIGTERM)
        if let done = wait(seconds: grace) { return done }
        signal(SIGKILL)
        return wait()
    }

    private func reapIfEnded() -> Termination? {
        recorded.withLock { recorded in
            if let recorded { return recorded }
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            guard r == pid else { return nil }
            let low = status & 0x7f
            recorded = low == 0 ? .exited((status >> 8) & 0xff) : .signaled(low)
            return recorded
        }
    }
}

extension ChildProcess {
    /// Runs `executable` to its end and collects what it printed.
    ///
    /// Standard output and standard error are read together (one `poll` loop, so a chatty
    /// child never blocks on a full pipe). With `timeout`, a child still running then is
    /// killed with SIGKILL and the result says `timedOut`.
    public static func run(_ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
                           directory: String? = nil, stdin: Input = .null, separateStandardError: Bool = false,
                           timeout: Double? = nil, descriptors: [Int32] = []) throws(SpawnError) -> Result {
        // Its own process group: a timeout kills what it started too (a shell's `sleep`, say),
        // which would otherwise hold the pipes open.
        let child = try ChildProcess(executable, arguments, environment: environment, directory: directory, stdin: stdin,
                                     stdout: .pipe, stderr: separateStandardError ? .pipe : .stdout, newProcessGroup: timeout != nil,
                                     descriptors: descriptors)
        let deadline = timeout.map { Date(timeIntervalSinceNow: $0) }
        var timedOut = false
        var buffers: [Int32: Data] = [:]
        var open = [child.stdoutPipe, child.stderrPipe].compactMap { $0 }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while !open.isEmpty {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            var wait: Int32 = -1
            if let deadline {
                let left = deadline.timeIntervalSinceNow
                if left <= 0 {
                    if !timedOut { timedOut = true; child.signalGroup(SIGKILL) }
                    // Whatever still holds the pipes after the kill is not waited for long.
                    if left < -5 { break }
                    wait = 100
                } else {
                    wait = Int32(min(left * 1000 + 1, 1000))
                }
            }
            let ready = poll(&fds, nfds_t(fds.count), wait)
            if ready < 0 && errno == EINTR { continue }
            for entry in fds where entry.revents != 0 {
                let n = chunk.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    buffers[entry.fd, default: Data()].append(contentsOf: chunk[0..<n])
                } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                    close(entry.fd)
                    open.removeAll { $0 == entry.fd }
                }
            }
        }
        for fd in open { close(fd) }
        var termination = deadline.flatMap { child.wait(seconds: max(0, $0.timeIntervalSinceNow)) }
        if termination == nil, deadline != nil { timedOut = true; child.signalGroup(SIGKILL) }
        termination = termination ?? child.wait()
        let output = child.stdoutPipe.flatMap { buffers[$0] } ?? Data()
        let errors = child.stderrPipe.flatMap { buffers[$0] } ?? Data()
        return Result(termination: termination!, output: String(decoding: output, as: UTF8.self),
                      standardError: String(decoding: errors, as: UTF8.self), timedOut: timedOut)
    }

    /// `run` on a thread of its own, for async callers: the cooperative pool (one thread a
    /// core) is never held while the child runs.
    public static func runDetached(_ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
                                   directory: String? = nil, separateStandardError: Bool = false,
                                   timeout: Double? = nil) async throws(SpawnError) -> Result {
        let outcome: Swift.Result<Result, SpawnError> = await withCheckedContinuation { continuation in
            Thread {
                do throws(SpawnError) {
                    continuation.resume(returning: .success(try run(executable, arguments, environment: environment,
                                                                    directory: directory,
                                                                    separateStandardError: separateStandardError,
                                                                    timeout: timeout)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }.start()
        }
        return try outcome.get()
    }
}
