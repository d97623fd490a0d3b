import ArgumentParser
import EvidenceCore
import EvidenceMedia
import EvidenceProcess
import Foundation
import Glibc

/// `evidence __probe [--name NAME] PATH`: the media probe as a child process of `run` and
/// `ingest` (`ChildMediaProbe`). Not for people: it is how libavformat is kept away from the
/// process that holds the credentials. It limits itself before it opens the file.
struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "__probe",
        abstract: "Internal: probe one stored file's media facts in a limited child process; prints JSON.",
        shouldDisplay: false
    )

    @Option(help: "The file's original name (its extension tells whether it should be media).")
    var name: String?

    @Argument(help: "The file to probe.")
    var path: String

    /// 1 GiB of address space, 30 s of CPU, no file written, few descriptors, no core dump.
    static let limits: [(resource: Int32, value: rlim_t)] = [
        (Int32(RLIMIT_AS.rawValue), 1 << 30), (Int32(RLIMIT_CPU.rawValue), 30), (Int32(RLIMIT_FSIZE.rawValue), 0),
        (Int32(RLIMIT_NOFILE.rawValue), 32), (Int32(RLIMIT_CORE.rawValue), 0),
    ]

    /// This very binary (the child is the same `evidence`, whatever PATH says).
    static var executable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    func run() throws {
        // libavformat is loaded on first use (dlopen), which needs address space and descriptors
        // the limits below no longer leave: load it first.
        MediaProbe.load()
        for (resource, value) in Self.limits {
            var limit = rlimit(rlim_cur: value, rlim_max: value)
            guard setrlimit(resource, &limit) == 0 else {
                throw CLIError.config("__probe: cannot set resource limit \(resource): \(String(cString: strerror(errno)))")
            }
        }
        Hardening.disableCoreDumps()
        let info = MediaProbe.probe(path: path, name: name)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? info.map { try encoder.encode($0) } ?? Data("null".utf8)) ?? Data("null".utf8)
        FileHandle.standardOutput.write(data)
    }
}
