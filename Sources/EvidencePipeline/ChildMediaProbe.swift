import EvidenceCore
import EvidenceMedia
import EvidenceProcess
import Foundation
import Logging
import Synchronization

/// How a stored copy is probed for media facts: given its path and its original name.
public typealias MediaProber = @Sendable (_ path: String, _ name: String?) -> MediaInfo?

/// The media probe in a child process: libavformat parses untrusted files, and the process that
/// does it holds no credential, has limits on memory, CPU time and files, and confines itself
/// before it reads a byte (`ProbeSandbox`: no network, not root, no open, socket or exec), so a
/// hostile file can crash or hang only that child, and a child taken over reaches neither the
/// network nor the secret files.
///
/// This process (`evidence run`, which holds every credential) never loads libavformat: it opens
/// the file (read-only, no link followed), rules out what certainly is not media in pure Swift
/// (`MediaPrefilter`: text, documents, archives, zeros), and hands everything else to a probe
/// server, `executable __probe --serve` (the `evidence` binary itself, `ForkServer`): started
/// once, it has libavformat loaded and is confined, and forks a fresh child for each file, which
/// decides by content and answers the `MediaInfo` as JSON (`null`: not media). So each file
/// still has a process of its own, but no file pays a process start (120 ms of CPU each in a
/// debug build, most of a 1,000-file burst's time). A child that crashes, is killed or outlives
/// `timeout` gives a `MediaInfo` whose `probeError` says so: the file stays stored and
/// recorded, only its media facts are missing.
public enum ChildMediaProbe {
    static let logger = Logger(label: "evidence.probe")

    public static func prober(executable: String, timeout: Double = 60) -> MediaProber {
        let servers = ProbeServers(executable: executable, timeout: timeout)
        return { path, name in probe(path: path, name: name, servers: servers) }
    }

    static func probe(path: String, name: String?, servers: ProbeServers) -> MediaInfo? {
        let name = name ?? (path as NSString).lastPathComponent
        let expectMedia = MediaProbe.expectsMedia(name)
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            return expectMedia ? MediaInfo(probeError: "cannot open \(path) for the media probe: \(reason); not probed") : nil
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            return expectMedia ? MediaInfo(probeError: "\(path) is not a regular file; not probed") : nil
        }
        if !expectMedia {
            // Documents and data are not media: they are never handed to the probe. What the
            // prefilter cannot rule out goes to the sniff server (libavformat's format probe
            // over the first bytes, in a confined process that lives on): "no" settles it with
            // no fork; "yes", or no answer, hands the file to a child of its own, which decides.
            switch MediaPrefilter.firstBytes(descriptor: fd) {
            case .failure: return nil   // unreadable here is unreadable in the child too (the store read it already)
            case .success(let first):
                guard MediaPrefilter.verdict(firstBytes: first.bytes, whole: first.whole) == .ask else { return nil }
                if servers.sniff(name: name, firstBytes: first.bytes) == false { return nil }
            }
        }
        switch servers.request(descriptor: fd, name: name) {
        case .success(let reply):
            return interpret(reply, timeout: servers.timeout)
        case .failure(.notStarted(let why)):
            return MediaInfo(probeError: "the media probe could not be started: \(why)")
        case .failure(.noReply):
            return MediaInfo(probeError: "the media probe took longer than \(Int(servers.timeout)) s and was stopped; not probed")
        case .failure(let failure):
            return MediaInfo(probeError: "the media probe \(failure); not probed")
        }
    }

    /// What one child's end says about the file.
    static func interpret(_ reply: ForkServer.Reply, timeout: Double) -> MediaInfo? {
        if reply.timedOut {
            return MediaInfo(probeError: "the media probe took longer than \(Int(timeout)) s and was stopped; not probed")
        }
        if let signal = reply.signal {
            return MediaInfo(probeError: "the media probe crashed on this file (signal \(signal)); not probed")
        }
        guard reply.exitCode == 0 else {
            return MediaInfo(probeError: "the media probe failed (exit \(reply.exitCode ?? -1)): "
                             + String(reply.errors.trimmingCharacters(in: .whitespacesAndNewlines).suffix(200)))
        }
        let text = reply.output.trimmingCharacters(in: .whitespacesAndNewlines)
        if text == "null" { return nil }
        guard let info = try? JSONDecoder().decode(MediaInfo.self, from: Data(text.utf8)) else {
            return MediaInfo(probeError: "the media probe answered something unreadable; not probed")
        }
        return info
    }

    /// What the child said of its sandbox (`sandbox: confined: …` / `sandbox: NOT confined: …`).
    /// A file parsed without the seccomp filter is a warning, once per process and reason (every
    /// file would say the same); a confined probe that could not do all it tries (no network
    /// namespace when not root) is debug.
    static func noteSandbox(_ standardError: String) {
        guard let line = standardError.split(separator: "\n").first(where: { $0.hasPrefix("sandbox: ") }) else { return }
        let report = String(line.dropFirst("sandbox: ".count))
        if report.hasPrefix("NOT confined") {
            if warned.insert(report) {
                logger.warning("the media probe parses files UNSANDBOXED (no seccomp filter): \(report)")
            }
        } else {
            logger.debug("media probe sandbox: \(report)")
        }
    }

    static let warned = OnceSet()

    /// Strings already seen, across threads.
    final class OnceSet: Sendable {
        private let seen = Mutex<Set<String>>([])

        /// True the first time `value` is given.
        func insert(_ value: String) -> Bool { seen.withLock { $0.insert(value).inserted } }
    }
}

/// The probe servers of one prober: fork servers (`__probe --serve`), each serving one file at a
/// time, so as many run as files are probed at once (the ingest's readers), and sniff servers
/// (`__probe --sniff`), asked first about files whose name is not a media one. Each is started
/// on first need and kept for the next file; one that failed is shut down, and the next file
/// starts another. They end with this object (their sockets close) or with this process.
final class ProbeServers: Sendable {
    let executable: String
    let timeout: Double
    private let forks: ServerPool
    private let sniffs: ServerPool
    /// A sniff is libavformat's format probe over 8 KiB: milliseconds. One that takes longer is
    /// stuck on hostile bytes; its server is replaced, and the file goes to a child.
    static let sniffTimeout = 10.0

    init(executable: String, timeout: Double) {
        self.executable = executable
        self.timeout = timeout
        forks = ServerPool(executable: executable, arguments: ["__probe", "--serve", "--timeout", "\(timeout)"])
        // A sniff server that cannot start (an older binary) is not tried again for a minute: the
        // files meanwhile go to children, as before there was a sniff.
        sniffs = ServerPool(executable: executable, arguments: ["__probe", "--sniff"], startBackoff: .seconds(60))
    }

    /// Fork servers started so far (one for a whole burst when files come one at a time).
    var started: Int { forks.started }
    /// Sniff servers started so far.
    var sniffersStarted: Int { sniffs.started }

    /// Probes the file open as `descriptor` in a child of an idle fork server, or of a new one.
    func request(descriptor: Int32, name: String) -> Result<ForkServer.Reply, ForkServer.Failure> {
        // The server kills a child at `timeout`; the margin is for the server's own answer.
        forks.use { $0.request(descriptor: descriptor, name: name, timeout: timeout + 15) }
    }

    /// Whether a sniff server says a file's first bytes could be media (libavformat names a
    /// format for them with a score of 50 or more); nil when none answered 1 or 0, and then the
    /// caller asks a child.
    func sniff(name: String, firstBytes: ArraySlice<UInt8>) -> Bool? {
        var message = Data(name.utf8.prefix(ForkServer.nameLimit).filter { $0 != 0 })
        message.append(0)
        message.append(contentsOf: firstBytes.prefix(MediaPrefilter.window))
        let answer = sniffs.use { connection -> Result<Bool, ForkServer.Failure> in
            switch connection.ask(message, timeout: Self.sniffTimeout) {
            case .success(let reply) where reply == Data("1".utf8): return .success(true)
            case .success(let reply) where reply == Data("0".utf8): return .success(false)
            case .success: return .failure(.gone("an answer that is neither 1 nor 0"))
            case .failure(let failure): return .failure(failure)
            }
        }
        switch answer {
        case .success(let couldBe): return couldBe
        case .failure(let failure):
            ChildMediaProbe.logger.debug("the media sniff \(failure); \(name) goes to a probe child of its own")
            return nil
        }
    }
}

/// Servers of one kind (`evidence arguments…`), each used by one caller at a time.
final class ServerPool: Sendable {
    let executable: String
    let arguments: [String]
    /// After a server failed to start, how long none is started again (nil: try every time).
    let startBackoff: Duration?
    private let idle = Mutex<[ForkServer.Connection]>([])
    private let startedCount = Atomic<Int>(0)
    private let startFailed = Mutex<(at: ContinuousClock.Instant, why: ForkServer.Failure)?>(nil)

    init(executable: String, arguments: [String], startBackoff: Duration? = nil) {
        self.executable = executable
        self.arguments = arguments
        self.startBackoff = startBackoff
    }

    deinit {
        for connection in idle.withLock({ list in defer { list = [] }; return list }) { connection.shutDown() }
    }

    var started: Int { startedCount.load(ordering: .relaxed) }

    /// Runs `body` with an idle server, or a new one. An idle server found gone (it died, or ended
    /// after its last answer) is replaced once; a new one that fails is not (the request may be
    /// what failed it), and any failure shuts the server down and is returned.
    func use<T>(_ body: (ForkServer.Connection) -> Result<T, ForkServer.Failure>) -> Result<T, ForkServer.Failure> {
        while true {
            let connection: ForkServer.Connection
            let wasIdle: Bool
            if let waiting = idle.withLock({ $0.popLast() }) {
                connection = waiting
                wasIdle = true
            } else {
                if let startBackoff, let failed = startFailed.withLock({ $0 }), ContinuousClock.now - failed.at < startBackoff {
                    return .failure(failed.why)
                }
                do {
                    // Only what the probe needs of the environment: no variable that may name a secret.
                    connection = try ForkServer.Connection(executable: executable, arguments: arguments,
                                                           environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"], readyTimeout: 60)
                } catch {
                    if startBackoff != nil { startFailed.withLock { $0 = (ContinuousClock.now, error) } }
                    return .failure(error)
                }
                wasIdle = false
                startedCount.add(1, ordering: .relaxed)
                ChildMediaProbe.noteSandbox(connection.announcement)
            }
            let result = body(connection)
            switch result {
            case .success:
                idle.withLock { $0.append(connection) }
                return result
            case .failure(.gone) where wasIdle:
                connection.shutDown()
            case .failure(let failure):
                // A server that gave no answer in time is stuck: killed now, not waited for.
                if case .noReply = failure { connection.process?.signal(SIGKILL) }
                connection.shutDown()
                return result
            }
        }
    }
}
