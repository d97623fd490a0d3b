import EvidenceCore
import EvidenceMedia
import EvidenceProcess
import Foundation

/// How a stored copy is probed for media facts: given its path and its original name.
public typealias MediaProber = @Sendable (_ path: String, _ name: String?) -> MediaInfo?

/// The media probe in a child process: libavformat parses untrusted files, and the process that
/// does it holds no credential and has limits on memory, CPU time and files, so a hostile file
/// can crash or hang only that child.
///
/// `executable` is run as `executable __probe [--name NAME] PATH` (the `evidence` binary itself)
/// and prints the `MediaInfo` as JSON (`null`: not media). A child that crashes, is killed or
/// outlives `timeout` gives a `MediaInfo` whose `probeError` says so: the file stays stored and
/// recorded, only its media facts are missing.
public enum ChildMediaProbe {
    public static func prober(executable: String, timeout: Double = 60) -> MediaProber {
        { path, name in probe(path: path, name: name, executable: executable, timeout: timeout) }
    }

    static func probe(path: String, name: String?, executable: String, timeout: Double) -> MediaInfo? {
        // Documents and data are not media: no child is started for them (a burst of small
        // files would otherwise pay a process start each).
        guard MediaProbe.mightBeMedia(path: path, name: name) else { return nil }
        let arguments = ["__probe"] + (name.map { ["--name", $0] } ?? []) + [path]
        let result: ChildProcess.Result
        do {
            // Only what the probe needs of the environment: no variable that may name a secret.
            result = try ChildProcess.run(executable, arguments, environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"],
                                          separateStandardError: true, timeout: timeout)
        } catch {
            return MediaInfo(probeError: "the media probe could not be started: \(error)")
        }
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
            return MediaInfo(probeError: "the media probe failed (exit \(code)): "
                             + String(result.standardError.trimmingCharacters(in: .whitespacesAndNewlines).prefix(200)))
        }
    }
}
