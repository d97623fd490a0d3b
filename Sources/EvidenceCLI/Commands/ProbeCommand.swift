import ArgumentParser
import EvidenceCore
import EvidenceMedia
import EvidenceProcess
import Foundation
import Glibc

/// `evidence __probe [--name NAME] (--fd N | PATH)`: the media probe as a child process of `run`
/// and `ingest` (`ChildMediaProbe`). Not for people: it is how libavformat is kept away from the
/// process that holds the credentials. It decides whether the file is media by its content, and
/// confines itself (`ProbeSandbox`: limits, no network, not root, no open/socket/exec) before it
/// parses a byte. The file comes as an inherited descriptor (`--fd 3`, opened by the parent
/// without following links); with PATH the child opens it itself, before it confines itself.
///
/// Standard output: the `MediaInfo` as JSON, or `null` (not media). Standard error, first line:
/// `sandbox: confined: …` or `sandbox: NOT confined: …`, which the parent logs when the file was
/// parsed without the seccomp filter.
struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "__probe",
        abstract: "Internal: probe one stored file's media facts in a confined child process; prints JSON.",
        shouldDisplay: false
    )

    @Option(help: "The file's original name (its extension tells whether it should be media).")
    var name: String?

    @Option(help: "An inherited descriptor open on the file to probe, instead of PATH.")
    var fd: Int32?

    @Argument(help: "The file to probe, when no --fd is given.")
    var path: String?

    func validate() throws {
        guard (fd == nil) != (path == nil) else { throw ValidationError("__probe: give either --fd N or PATH, not both or neither") }
        if let fd, fd < 3 { throw ValidationError("__probe: --fd \(fd) is a standard stream; the file comes as 3 or above") }
    }

    /// This very binary (the child is the same `evidence`, whatever PATH says).
    /// The `evidence` binary the media probe child runs: this process's own, or for a command
    /// run in-process by the tests (`EvidenceCLI.run`), the one they name.
    static var executable: String {
        if let given = evidenceExecutable { return given }
        return (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    @TaskLocal static var evidenceExecutable: String?

    func run() throws {
        // Everything that opens a file happens before the sandbox, which forbids opening: loading
        // libavformat and its ~130 libraries (dlopen), the file itself, and a first JSON encoding.
        MediaProbe.load()
        let descriptor: Int32
        if let fd {
            descriptor = fd
        } else {
            descriptor = open(path!, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw CLIError.config("__probe: cannot open \(path!): \(String(cString: strerror(errno)))")
            }
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw CLIError.config("__probe: \(fd.map { "descriptor \($0)" } ?? path!) is not an open regular file")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        _ = try? encoder.encode(MediaInfo(container: "warm-up", streams: [MediaInfo.Stream(index: 0, type: "video")],
                                          creationTime: Date()))

        let report = ProbeSandbox.enter()
        Output.writeError(Data("sandbox: \(report)\n".utf8))

        let info = MediaProbe.probe(descriptor: descriptor, name: name ?? path ?? "")
        let data = (try? info.map { try encoder.encode($0) } ?? Data("null".utf8)) ?? Data("null".utf8)
        Output.writeOutput(data)
    }
}
