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
/// (`MediaPrefilter`: text, documents, archives, zeros), and hands everything else to
/// `executable __probe --fd 3 --name NAME` (the `evidence` binary itself) with the file as
/// descriptor 3. The child decides by content and prints the `MediaInfo` as JSON (`null`: not
/// media). A child that crashes, is killed or outlives `timeout` gives a `MediaInfo` whose
/// `probeError` says so: the file stays stored and recorded, only its media facts are missing.
public enum ChildMediaProbe {
    static let logger = Logger(label: "evidence.probe")

    public static func prober(executable: String, timeout: Double = 60) -> MediaProber {
        { path, name in probe(path: path, name: name, executable: executable, timeout: timeout) }
    }

    static func probe(path: String, name: String?, executable: String, timeout: Double) -> MediaInfo? {
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
        // Documents and data are not media: no child is started for them (a burst of small
        // files would otherwise pay a process start each).
        guard MediaPrefilter.verdict(descriptor: fd, name: name) == .ask else { return nil }
        let result: ChildProcess.Result
        do {
            // Only what the probe needs of the environment: no variable that may name a secret.
            result = try ChildProcess.run(executable, ["__probe", "--fd", "3", "--name", name],
                                          environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"],
                                          separateStandardError: true, timeout: timeout, descriptors: [fd])
        } catch {
            return MediaInfo(probeError: "the media probe could not be started: \(error)")
        }
        noteSandbox(result.standardError)
        if result.timedOut {
            return MediaInfo(probeError: "the media probe took longer than \(Int(timeout)) s and was stopped; not probed")
        }
        switch result.termination {
        case .exited(0):
            let text = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
            if text == "null" { return nil }
            guard let info = try? JSONDecoder().decode(MediaInfo.self, from: Data(text.utf8)) else {
                return MediaInfo(probeError: "the media probe answered something unreadable; not probed")
            }
            return info
        case .signaled(let signal):
            return MediaInfo(probeError: "the media probe crashed on this file (signal \(signal)); not probed")
        case .exited(let code):
            let errors = result.standardError.split(separator: "\n").filter { !$0.hasPrefix("sandbox: ") }.joined(separator: "\n")
            return MediaInfo(probeError: "the media probe failed (exit \(code)): "
                             + String(errors.trimmingCharacters(in: .whitespacesAndNewlines).prefix(200)))
        }
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
