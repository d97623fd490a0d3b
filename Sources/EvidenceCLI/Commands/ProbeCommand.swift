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
///
/// `evidence __probe --serve` is how `run` and `ingest` use it: a fork server (`ForkServer`) on
/// descriptor 3 that loads libavformat and confines itself once, then forks a fresh child for
/// each file it is handed, so each file still has a process of its own, without a process start.
/// Its first message is the sandbox report.
///
/// `evidence __probe --sniff` answers, on descriptor 3 and in its own (confined) process, whether
/// a file's first bytes could be media: libavformat's format probe over them, without a fork.
/// `run` and `ingest` ask it about files whose name is not a media one before they fork a probe
/// child for them: random data and unknown formats cost no process. It is handed bytes, never a
/// file, and all it says is 1 or 0: a sniff server that a hostile file took over can leave later
/// files' media facts unknown (a 0), never make up facts, which only a file's own child gives.
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

    @Flag(help: "Serve files handed over descriptor 3 (a Unix socket), one forked child each.")
    var serve = false

    @Flag(help: "Answer over descriptor 3 whether the first bytes of a file (sent as NAME, a zero byte, the bytes) could be media: 1 or 0, in this process.")
    var sniff = false

    @Flag(help: "Decode the first picture instead, scaled to at most 480×360; prints {frame: {width, height, rgb}} or {error}.")
    var poster = false

    @Option(help: "With --serve: seconds a child may take before it is killed.")
    var timeout: Double = 60

    func validate() throws {
        if sniff {
            guard !serve, fd == nil, path == nil else { throw ValidationError("__probe --sniff takes its bytes over descriptor 3, with no other mode, --fd or PATH") }
            return
        }
        if serve {
            guard fd == nil, path == nil else { throw ValidationError("__probe --serve takes its files over descriptor 3, not --fd or PATH") }
            guard timeout > 0 else { throw ValidationError("__probe --timeout must be above 0 seconds") }
            return
        }
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
        if poster { MediaProbe.loadDecoder() }
        if serve { Glibc.exit(Self.serve(timeout: timeout)) }
        if sniff { Glibc.exit(Self.sniff()) }
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

        // The parse happens in a forked child of the thread that confined itself, as the server's
        // do: the namespace and the user change are that thread's, not the process's other threads'.
        let cpu = ProbeSandbox.cpuSeconds
        // A poster frame is at most 480×360 RGB, base64 in JSON: about 700 KB.
        let reply = ForkServer.runOne(descriptor: descriptor, name: name ?? path ?? "", timeout: Double(cpu) * 2,
                                      childCPUSeconds: cpu, outputLimit: poster ? 1 << 20 : ForkServer.outputLimit) { [poster] fd, name in
            guard poster else { return Self.encode(MediaProbe.probe(descriptor: fd, name: name), encoder) }
            let reply: PosterReply
            switch MediaProbe.poster(descriptor: fd) {
            case .success(let frame): reply = PosterReply(frame: frame, error: nil)
            case .failure(let e): reply = PosterReply(frame: nil, error: e.message)
            }
            return (try? encoder.encode(reply)) ?? Data("{\"error\":\"encoding\"}".utf8)
        }
        Output.writeError(Data(reply.errors.utf8))
        Output.writeOutput(Data(reply.output.utf8))
        if let signal = reply.signal { throw ExitCode(128 + signal) }
        if let code = reply.exitCode, code != 0 { throw ExitCode(code) }
    }

    /// The sniff server: libavformat is loaded (`run`), the sandbox goes on, then the requests are
    /// answered by one forked child of this thread (the one that confined itself), single-threaded,
    /// with 60 s of CPU and 10,000 answers at most before the parent's pool starts a fresh one.
    static func sniff() -> Int32 {
        let report = ProbeSandbox.enter(limitCPU: false)
        return ForkServer.answerInChild(socket: 3, announce: "sandbox: \(report)", requestLimit: ForkServer.nameLimit + 1 + MediaPrefilter.window,
                                        cpuSeconds: 60, maxRequests: 10_000) { request in
            let bytes = [UInt8](request)
            guard let zero = bytes.firstIndex(of: 0) else { return Data("0".utf8) }
            let name = String(decoding: bytes[..<zero], as: UTF8.self)
            return Data((MediaProbe.confidentSignature(firstBytes: bytes[(zero + 1)...], name: name) ? "1" : "0").utf8)
        }
    }

    static func encode(_ info: MediaInfo?, _ encoder: JSONEncoder) -> Data {
        (try? info.map { try encoder.encode($0) } ?? Data("null".utf8)) ?? Data("null".utf8)
    }

    /// The fork server: libavformat is loaded (`run`); a first encoding warms the encoder, the
    /// sandbox goes on (no CPU limit for the server itself: each child takes its own), then each
    /// file handed over is probed in a child of its own.
    static func serve(timeout: Double) -> Int32 {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        _ = encode(MediaInfo(container: "warm-up", streams: [MediaInfo.Stream(index: 0, type: "video")], creationTime: Date()), encoder)
        let report = ProbeSandbox.enter(limitCPU: false)
        // The server loop runs on this thread, the one that confined itself, and every child is a
        // fork of it: one thread, in the empty namespace, as nobody.
        return ForkServer.serve(socket: 3, announce: "sandbox: \(report)", timeout: timeout, childCPUSeconds: ProbeSandbox.cpuSeconds) { fd, name in
            encode(MediaProbe.probe(descriptor: fd, name: name), encoder)
        }
    }
}
