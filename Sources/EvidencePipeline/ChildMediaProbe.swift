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
        // Documents and data are not media: they are never handed to the probe.
        guard MediaPrefilter.verdict(descriptor: fd, name: name) == .ask else { return nil }
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

/// The probe servers of one prober: each serves one file at a time, so as many run as files are
/// probed at once (the ingest's readers), each started on first need and kept for the next file.
/// One that failed is shut down, and the next file starts another. They end with this object
/// (their sockets close) or with this process (the kernel closes the sockets).
final class ProbeServers: Sendable {
    let executable: String
    let timeout: Double
    private let idle = Mutex<[ForkServer.Connection]>([])
    private let startedCount = Atomic<Int>(0)

    init(executable: String, timeout: Double) {
        self.executable = executable
        self.timeout = timeout
    }

    deinit {
        for connection in idle.withLock({ list in defer { list = [] }; return list }) { connection.shutDown() }
    }

    /// Servers started so far (one for a whole burst when files come one at a time).
    var started: Int { startedCount.load(ordering: .relaxed) }

    /// Probes the file open as `descriptor` in a child of an idle server, or of a new one. A
    /// server found gone (one left idle that died) is replaced once.
    func request(descriptor: Int32, name: String) -> Result<ForkServer.Reply, ForkServer.Failure> {
        var attempt = 0
        while true {
            attempt += 1
            let connection: ForkServer.Connection
            if let waiting = idle.withLock({ $0.popLast() }) {
                connection = waiting
            } else {
                do {
                    // Only what the probe needs of the environment: no variable that may name a secret.
                    connection = try ForkServer.Connection(
                        executable: executable, arguments: ["__probe", "--serve", "--timeout", "\(timeout)"],
                        environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"], readyTimeout: 60)
                } catch {
                    return .failure(error)
                }
                startedCount.add(1, ordering: .relaxed)
                ChildMediaProbe.noteSandbox(connection.announcement)
            }
            // The server kills a child at `timeout`; the margin is for the server's own answer.
            let result = connection.request(descriptor: descriptor, name: name, timeout: timeout + 15)
            switch result {
            case .success:
                idle.withLock { $0.append(connection) }
                return result
            case .failure(.gone) where attempt == 1:
                connection.shutDown()
            case .failure:
                connection.shutDown()
                return result
            }
        }
    }
}
