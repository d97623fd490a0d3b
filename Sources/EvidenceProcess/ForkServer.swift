import CEvidenceSys
import Foundation
import Glibc

/// A fork server: one process, started once, that forks a fresh child for every file it is
/// handed. It is how the media probe keeps a process per hostile file without paying a process
/// start per file: starting `evidence __probe` loads the binary and libavformat's ~130 libraries
/// (about 120 ms of a debug build's CPU, half of it in the dynamic loader), where a fork of a
/// process that has them loaded costs well under a millisecond.
///
/// The server loads what its children need, confines itself (`ProbeSandbox`), then waits on its
/// socket (descriptor 3, `SOCK_SEQPACKET`). A request is one message: the file's name, with the
/// file itself attached as a descriptor (SCM_RIGHTS). For each, the server forks; the child
/// closes the socket before anything else (so no file it parses can speak for another file),
/// takes its own CPU limit, runs `handle(descriptor, name)`, writes what it returns to its
/// standard output (a pipe to the server) and exits. The server collects that output and how
/// the child ended (exit status, signal, or killed at `timeout`) and answers with one `Reply`.
/// One request at a time per server: a caller that wants several at once starts several.
///
/// The server never parses a file itself, so a hostile file can crash or hang only its own
/// child. It ends when its socket is closed (its parent has gone or shut it down).
public enum ForkServer {
    /// The answer to one request.
    public struct Reply: Codable, Sendable, Equatable {
        /// What the child wrote to its standard output (at most `outputLimit` bytes kept).
        public var output: String
        /// The last few KiB the child wrote to its standard error (libavformat's messages).
        public var errors: String
        /// The child's exit status, when it exited.
        public var exitCode: Int32?
        /// The signal that ended it, when one did (SIGKILL too after a timeout).
        public var signal: Int32?
        /// Killed because it outlived the server's timeout.
        public var timedOut: Bool

        public init(output: String, errors: String, exitCode: Int32?, signal: Int32?, timedOut: Bool) {
            self.output = output
            self.errors = errors
            self.exitCode = exitCode
            self.signal = signal
            self.timedOut = timedOut
        }
    }

    /// Why a request got no reply.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The server could not be started, or did not say it was ready.
        case notStarted(String)
        /// The server closed the socket or died (it is gone: start another).
        case gone(String)
        /// No reply within the caller's time (the server is killed: start another).
        case noReply(seconds: Double)

        public var description: String {
            switch self {
            case .notStarted(let why): return "could not be started: \(why)"
            case .gone(let why): return "stopped answering (\(why))"
            case .noReply(let seconds): return "gave no answer within \(Int(seconds)) s"
            }
        }
    }

    /// Longest name a request may carry; longest child output kept.
    public static let nameLimit = 4096
    public static let outputLimit = 128 * 1024
    static let errorsKept = 4096
    /// A reply message: the output, escaped in JSON at worst six bytes a byte, and the rest.
    static let replyLimit = 6 * outputLimit + 6 * errorsKept + 1024

    // MARK: The server

    /// Serves requests on `socket` until it is closed; returns the exit status for the server.
    /// - Parameters:
    ///   - announce: sent first, as one message, once the server is ready (the sandbox report).
    ///   - timeout: wall-clock seconds a child may take; it is killed (SIGKILL) after that.
    ///   - childCPUSeconds: the CPU limit each child sets for itself.
    ///   - handle: runs in the child, with the file's descriptor and name; what it returns is the
    ///     child's output.
    public static func serve(socket: Int32, announce: String, timeout: Double, childCPUSeconds: rlim_t,
                             handle: (Int32, String) -> Data) -> Int32 {
        guard send(socket, Data(announce.utf8), descriptor: -1) else { return 1 }
        var name = [UInt8](repeating: 0, count: nameLimit)
        while true {
            var fd: Int32 = -1
            let n = name.withUnsafeMutableBytes { evidence_recv_with_fd(socket, $0.baseAddress, $0.count, &fd) }
            if n == 0 { return 0 }                       // the parent closed the socket: done
            if n < 0 { return errno == EMSGSIZE ? 3 : 2 }
            guard fd >= 0 else { return 3 }              // a request without a file: not ours
            let reply = serveOne(socket: socket, descriptor: fd, name: String(decoding: name[0..<n], as: UTF8.self),
                                 timeout: timeout, childCPUSeconds: childCPUSeconds, handle: handle)
            close(fd)
            guard let data = try? JSONEncoder().encode(reply), send(socket, data, descriptor: -1) else { return 2 }
        }
    }

    /// A server that answers each request itself, on this thread, without a fork: for a question
    /// whose every answer is harmless to the caller whatever the server has become (the media
    /// probe's sniff, "could these first bytes be media?", whose worst lie leaves a file's media
    /// facts unknown). A request is the message's bytes alone: one that carries a descriptor
    /// ends the server (exit 3), which reaches no file. The reply is what `handle` returns
    /// (never empty: an empty message reads as the socket closing). Ends when the socket closes,
    /// or after `maxRequests` answers (exit 0: the caller's pool starts a fresh one).
    public static func answer(socket: Int32, announce: String, requestLimit: Int, maxRequests: Int = .max, handle: (Data) -> Data) -> Int32 {
        guard send(socket, Data(announce.utf8), descriptor: -1) else { return 1 }
        var request = [UInt8](repeating: 0, count: requestLimit)
        for _ in 0..<maxRequests {
            var fd: Int32 = -1
            let n = request.withUnsafeMutableBytes { evidence_recv_with_fd(socket, $0.baseAddress, $0.count, &fd) }
            if n == 0 { return 0 }
            if n < 0 { return errno == EMSGSIZE ? 3 : 2 }
            if fd >= 0 { close(fd); return 3 }
            let reply = handle(Data(request[0..<n]))
            guard send(socket, reply.isEmpty ? Data([0]) : reply, descriptor: -1) else { return 2 }
        }
        return 0
    }

    /// `answer` in a forked child of the calling thread: one thread, the one that confined itself
    /// (a namespace and a user change hold for that thread only), with a CPU limit of its own and
    /// dying with this process, which waits for it and returns how it ended (its exit status, or
    /// 128 + the signal). What a hostile request does to the child lasts at most `maxRequests`
    /// answers or `cpuSeconds` of CPU.
    public static func answerInChild(socket: Int32, announce: String, requestLimit: Int, cpuSeconds: rlim_t, maxRequests: Int,
                                     handle: (Data) -> Data) -> Int32 {
        let pid = evidence_fork()
        if pid == 0 {
            _ = evidence_die_with_parent()
            var cpu = rlimit(rlim_cur: cpuSeconds, rlim_max: cpuSeconds)
            _ = setrlimit(Int32(RLIMIT_CPU.rawValue), &cpu)
            evidence_exit_now(answer(socket: socket, announce: announce, requestLimit: requestLimit, maxRequests: maxRequests, handle: handle))
        }
        guard pid > 0 else { return 1 }
        // The child alone holds the socket now: when it ends, the caller sees the socket close.
        close(socket)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// One file in a forked child, as the server does it, without a server: for a process that
    /// probes a single file (`evidence __probe --fd 3`). The parse still happens in a process
    /// of its own with one thread, the one that confined itself (a namespace and a user change
    /// hold for the calling thread: the process's other threads keep theirs).
    public static func runOne(descriptor: Int32, name: String, timeout: Double, childCPUSeconds: rlim_t,
                              outputLimit: Int = ForkServer.outputLimit, handle: (Int32, String) -> Data) -> Reply {
        serveOne(socket: -1, descriptor: descriptor, name: name, timeout: timeout, childCPUSeconds: childCPUSeconds,
                 outputLimit: outputLimit, handle: handle)
    }

    static func serveOne(socket: Int32, descriptor fd: Int32, name: String, timeout: Double, childCPUSeconds: rlim_t,
                         outputLimit: Int = ForkServer.outputLimit, handle: (Int32, String) -> Data) -> Reply {
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        guard evidence_pipe_cloexec(&out) == 0 else { return failed("no pipe for the child: \(lastError())") }
        guard evidence_pipe_cloexec(&err) == 0 else {
            close(out[0]); close(out[1])
            return failed("no pipe for the child: \(lastError())")
        }
        let pid = evidence_fork()
        if pid == 0 {
            // The child: nothing of another request may reach it, and it reaches only its file
            // and its two pipes.
            if socket >= 0 { close(socket) }
            close(out[0]); close(err[0])
            _ = evidence_die_with_parent()
            guard dup2(out[1], 1) == 1, dup2(err[1], 2) == 2 else { evidence_exit_now(125) }
            var cpu = rlimit(rlim_cur: childCPUSeconds, rlim_max: childCPUSeconds)
            _ = setrlimit(Int32(RLIMIT_CPU.rawValue), &cpu)
            let output = handle(fd, name)
            let written = output.withUnsafeBytes { writeAll(1, $0) }
            evidence_exit_now(written ? 0 : 124)
        }
        close(out[1]); close(err[1])
        guard pid > 0 else {
            close(out[0]); close(err[0])
            return failed("fork: \(lastError())")
        }
        var output = Data(), errors = Data()
        var timedOut = false
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        var open = [out[0], err[0]]
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while !open.isEmpty {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let left = deadline - ContinuousClock.now
            var wait: Int32 = 200
            if left <= .zero {
                // Killed; what still holds a pipe then (nothing should) is not waited for long.
                if !timedOut { timedOut = true; kill(pid, SIGKILL) }
                if left < .seconds(-5) { break }
            } else {
                wait = Int32(min(1000, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            }
            let ready = poll(&fds, nfds_t(fds.count), wait)
            if ready < 0 && errno == EINTR { continue }
            for entry in fds where entry.revents != 0 {
                let n = chunk.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    if entry.fd == out[0] {
                        if output.count <= outputLimit { output.append(contentsOf: chunk[0..<n]) }
                    } else {
                        errors.append(contentsOf: chunk[0..<n])
                        if errors.count > 2 * errorsKept { errors = errors.suffix(errorsKept) }
                    }
                } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                    close(entry.fd)
                    open.removeAll { $0 == entry.fd }
                }
            }
        }
        for fd in open { close(fd) }
        var status: Int32 = 0
        if timedOut { kill(pid, SIGKILL) }
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signalled = status & 0x7f != 0 && status & 0x7f != 0x7f
        // Output past the limit is cut: the caller's decoder refuses it, as it should.
        let kept = output.count > outputLimit ? output.prefix(outputLimit) : output
        return Reply(output: String(decoding: kept, as: UTF8.self), errors: String(decoding: errors.suffix(errorsKept), as: UTF8.self),
                     exitCode: signalled ? nil : (status >> 8) & 0xff, signal: signalled ? status & 0x7f : nil,
                     timedOut: timedOut)
    }

    /// A request the server could not even start a child for (reported as exit 126).
    static func failed(_ why: String) -> Reply {
        Reply(output: "", errors: why, exitCode: 126, signal: nil, timedOut: false)
    }

    // MARK: The client

    /// One server, started by this process and talked to over a socket. One request at a time:
    /// the caller owns the connection while it waits (a pool hands connections out).
    public final class Connection: Sendable {
        /// The server process (nil for a server this process serves itself, in tests).
        public let process: ChildProcess?
        let socket: Int32
        /// The server's first message (the probe's sandbox report).
        public let announcement: String

        /// Starts `executable arguments` with the server's end of a new socket as descriptor 3,
        /// and waits up to `readyTimeout` for its announcement.
        public init(executable: String, arguments: [String], environment: [String: String], readyTimeout: Double) throws(Failure) {
            var ends: [Int32] = [-1, -1]
            guard evidence_socketpair_seqpacket(&ends) == 0 else { throw .notStarted("socketpair: \(lastError())") }
            let child: ChildProcess
            do {
                // Its standard error goes nowhere: each child's is collected by the server.
                child = try ChildProcess(executable, arguments, environment: environment, stdout: .null, stderr: .null,
                                         descriptors: [ends[1]])
            } catch {
                close(ends[0]); close(ends[1])
                throw .notStarted("\(error)")
            }
            close(ends[1])
            process = child
            socket = ends[0]
            switch Self.receive(socket, limit: 4096, timeout: readyTimeout) {
            case .success(let data):
                announcement = String(decoding: data, as: UTF8.self)
            case .failure(let failure):
                close(socket)
                child.signal(SIGKILL)
                let ended = child.wait()
                throw .notStarted("\(failure) (\(ended))")
            }
        }

        /// A connection to a server this process runs itself (`serve` on a thread of its own, in
        /// tests), given the client's end of its socket.
        public init(socket: Int32, readyTimeout: Double) throws(Failure) {
            process = nil
            self.socket = socket
            switch Self.receive(socket, limit: 4096, timeout: readyTimeout) {
            case .success(let data): announcement = String(decoding: data, as: UTF8.self)
            case .failure(let failure): throw failure
            }
        }

        /// Hands the server `descriptor` under `name` and waits up to `timeout` for its reply. After
        /// a failure the connection is useless: `shutDown()` it.
        public func request(descriptor: Int32, name: String, timeout: Double) -> Result<Reply, Failure> {
            // An empty message would read as the socket closing: a nameless file is "-".
            let bytes = Data((name.isEmpty ? "-" : name).utf8.prefix(nameLimit))
            guard ForkServer.send(socket, bytes, descriptor: descriptor) else { return .failure(.gone("send: \(lastError())")) }
            switch Self.receive(socket, limit: replyLimit, timeout: timeout) {
            case .failure(let failure): return .failure(failure)
            case .success(let data):
                guard let reply = try? JSONDecoder().decode(Reply.self, from: data) else {
                    return .failure(.gone("an unreadable reply"))
                }
                return .success(reply)
            }
        }

        /// Sends `message` (no descriptor) to a server that answers in place (`answer`) and waits
        /// up to `timeout` for its reply, of at most `replyLimit` bytes. After a failure the
        /// connection is useless: `shutDown()` it.
        public func ask(_ message: Data, timeout: Double, replyLimit: Int = 64) -> Result<Data, Failure> {
            guard !message.isEmpty else { return .failure(.gone("an empty request")) }
            guard ForkServer.send(socket, message, descriptor: -1) else { return .failure(.gone("send: \(lastError())")) }
            return Self.receive(socket, limit: replyLimit, timeout: timeout)
        }

        /// Closes the socket (the server exits when it sees that) and reaps the server, killing it
        /// when it has not gone within a few seconds.
        public func shutDown() {
            close(socket)
            guard let process else { return }
            if process.wait(seconds: 5) == nil {
                process.signal(SIGKILL)
                _ = process.wait()
            }
        }

        static func receive(_ socket: Int32, limit: Int, timeout: Double) -> Result<Data, Failure> {
            var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
            while true {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return .failure(.noReply(seconds: timeout)) }
                let ms = Int32(min(1000, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
                let ready = poll(&entry, 1, ms)
                if ready < 0 && errno == EINTR { continue }
                if ready < 0 { return .failure(.gone("poll: \(lastError())")) }
                if ready > 0 { break }
            }
            // The message's length first (SOCK_SEQPACKET: MSG_TRUNC gives the whole length), so the
            // buffer is as large as the reply, not as large as a reply may be.
            let size = recv(socket, nil, 0, Int32(MSG_PEEK | MSG_TRUNC))
            if size < 0 { return .failure(.gone("receive: \(lastError())")) }
            var buffer = [UInt8](repeating: 0, count: max(1, min(size, limit)))
            var fd: Int32 = -1
            let n = buffer.withUnsafeMutableBytes { evidence_recv_with_fd(socket, $0.baseAddress, $0.count, &fd) }
            if fd >= 0 { close(fd) }   // a server never sends descriptors
            if n == 0 { return .failure(.gone("the server closed its socket")) }
            if n < 0 { return .failure(.gone("receive: \(lastError())")) }
            return .success(Data(buffer[0..<n]))
        }
    }

    // MARK: Helpers

    static func send(_ socket: Int32, _ data: Data, descriptor: Int32) -> Bool {
        data.withUnsafeBytes { evidence_send_with_fd(socket, $0.baseAddress, $0.count, descriptor) == $0.count }
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }

    static func lastError() -> String { String(cString: strerror(errno)) }
}
