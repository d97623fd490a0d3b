import EvidenceCatalog
import EvidenceCore
@testable import EvidencePipeline
import EvidenceMedia
import EvidenceProcess
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// The media probe runs in a child: whatever that child does to itself, the parent gets a
/// `MediaInfo` with a clear reason, never a crash or a hang. What each end of a child means
/// (`interpret`); what the parent decides before any child (`MediaPrefilter`, no link followed).
/// The fork server's own mechanics are `ForkServerTests`.
@Suite("Media probe in a child process")
struct ChildMediaProbeTests {
    let dir = TempDirectory("probe-child")

    /// A stand-in for `evidence` that leaves a mark when it is started at all.
    func marking(_ mark: String) -> String {
        let path = dir.write("probe-\(UUID().uuidString.prefix(8)).sh", "#!/bin/sh\ntouch '\(mark)'\nexit 3\n")
        chmod(path, 0o755)
        return path
    }

    func reply(output: String = "", errors: String = "", exit: Int32? = 0, signal: Int32? = nil, timedOut: Bool = false) -> ForkServer.Reply {
        ForkServer.Reply(output: output, errors: errors, exitCode: exit, signal: signal, timedOut: timedOut)
    }

    @Test func aChildThatCrashesIsReportedAndTheParentGoesOn() {
        let info = ChildMediaProbe.interpret(reply(exit: nil, signal: 11), timeout: 10)
        #expect(info?.probeError?.contains("crashed on this file (signal 11)") == true, "\(String(describing: info))")
    }

    @Test func aChildThatHangsIsStoppedAtItsTimeout() {
        let info = ChildMediaProbe.interpret(reply(exit: nil, signal: SIGKILL, timedOut: true), timeout: 1)
        #expect(info?.probeError?.contains("took longer than 1 s") == true, "\(String(describing: info))")
    }

    @Test func whatTheChildPrintsIsTheAnswer() {
        #expect(ChildMediaProbe.interpret(reply(output: "null\n"), timeout: 10) == nil)
        let info = ChildMediaProbe.interpret(reply(output: #"{"container":"mov","streams":[]}"#), timeout: 10)
        #expect(info?.container == "mov")
        let garbage = ChildMediaProbe.interpret(reply(output: "not json"), timeout: 10)
        #expect(garbage?.probeError?.contains("unreadable") == true)
        let failed = ChildMediaProbe.interpret(reply(errors: "av: cannot allocate", exit: 2), timeout: 10)
        #expect(failed?.probeError == "the media probe failed (exit 2): av: cannot allocate")
    }

    @Test func noChildIsStartedForAFileThatIsNotMedia() {
        let mark = dir.file("started")
        let servers = ProbeServers(executable: marking(mark), timeout: 10)
        let report = dir.write("report.txt", "Incident report\nNothing to see.\n")
        #expect(ChildMediaProbe.probe(path: report, name: "report.txt", servers: servers) == nil)
        #expect(servers.started == 0 && !FileManager.default.fileExists(atPath: mark))
    }

    @Test("a probe server that cannot start gives the file a probe error; the file is still recorded by its caller")
    func aServerThatCannotStart() {
        let mark = dir.file("started")
        let servers = ProbeServers(executable: marking(mark), timeout: 10)
        let clip = dir.write("x.mp4", "not really a clip")
        let info = ChildMediaProbe.probe(path: clip, name: "x.mp4", servers: servers)
        #expect(info?.probeError?.hasPrefix("the media probe could not be started: ") == true, "\(String(describing: info))")
        #expect(FileManager.default.fileExists(atPath: mark))
        let missing = ProbeServers(executable: dir.file("no-such-evidence"), timeout: 10)
        #expect(ChildMediaProbe.probe(path: clip, name: "x.mp4", servers: missing)?.probeError?.contains("could not be started") == true)
    }

    @Test("the parent does not follow a link to the file (the store's copies are never links)")
    func aLinkIsNotFollowed() {
        let target = dir.write("secret.mp4", "x")
        let link = dir.file("link.mp4")
        symlink(target, link)
        let servers = ProbeServers(executable: marking(dir.file("started")), timeout: 10)
        let info = ChildMediaProbe.probe(path: link, name: "link.mp4", servers: servers)
        #expect(info?.probeError?.contains("cannot open") == true, "\(String(describing: info))")
        #expect(servers.started == 0)
    }
}

/// The real child, `evidence __probe`, started the way `evidence run` starts it.
@Suite("Media probe: the real child decides")
struct RealChildMediaProbeTests {
    let dir = TempDirectory("probe-real")

    @Test("media facts of a real MP4 come from the child, also under a name that is not a media one; one server for every file")
    func mediaFactsFromTheChild() throws {
        let servers = ProbeServers(executable: evidenceBinary, timeout: 60)
        let mp4 = try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/bodycam-2024-05-01.mp4"))
        for name in ["bodycam.mp4", "upload.bin"] {
            let path = dir.write(name, mp4)
            let info = try #require(ChildMediaProbe.probe(path: path, name: name, servers: servers))
            #expect(info.probeError == nil, "\(name): \(info)")
            #expect(info.container?.contains("mp4") == true)
            #expect(info.streams.map(\.codec) == ["h264", "aac"])
            #expect(info.creationTime == Timestamp.parseLenient("2024-05-01T09:30:00Z"))
            #expect(abs((info.durationSeconds ?? 0) - 2.0) < 0.1)
        }
        let wav = dir.write("interview.take", try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/interview.wav")))
        #expect(ChildMediaProbe.probe(path: wav, name: nil, servers: servers)?.container == "wav")
        #expect(servers.started == 1, "files probed one after another share one server")
        #expect(servers.sniffersStarted == 1, "the names that are not media ones were sniffed first, by one server")
    }

    @Test("the confined child reports the same facts as an unconfined probe, for every sample")
    func sameFactsAsInProcess() throws {
        let servers = ProbeServers(executable: evidenceBinary, timeout: 60)
        for name in ["bodycam-2024-05-01.mp4", "interview.wav", "scene-photo.jpg", "truncated.mp4"] {
            let path = samplesDirectory + "/" + name
            let child = ChildMediaProbe.probe(path: path, name: name, servers: servers)
            #expect(child != nil && child == MediaProbe.probe(path: path, name: name), "\(name): \(String(describing: child))")
        }
    }

    @Test("evidence __probe --serve confines itself before it is handed a file; its children inherit it")
    func theServerSaysItIsConfined() throws {
        let connection = try ForkServer.Connection(executable: evidenceBinary, arguments: ["__probe", "--serve"],
                                                   environment: [:], readyTimeout: 60)
        defer { connection.shutDown() }
        #expect(connection.announcement.hasPrefix("sandbox: confined: seccomp filter (no open, socket, exec)"), "\(connection.announcement)")
        if getuid() == 0 {
            #expect(connection.announcement.contains("empty network namespace, uid 65534 gid 65534"), "\(connection.announcement)")
        }
        let fd = open(samplesDirectory + "/bodycam-2024-05-01.mp4", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        defer { close(fd) }
        let reply = try connection.request(descriptor: fd, name: "clip.bin", timeout: 60).get()
        #expect(reply.exitCode == 0 && reply.signal == nil && !reply.timedOut, "\(reply)")
        let info = try JSONDecoder().decode(MediaInfo.self, from: Data(reply.output.utf8))
        #expect(info.container?.contains("mp4") == true && info.probeError == nil, "\(reply.output)")
    }

    @Test("evidence __probe --fd 3 confines itself before it parses: seccomp always, namespace and nobody as root")
    func theChildSaysItIsConfined() throws {
        let fd = open(samplesDirectory + "/bodycam-2024-05-01.mp4", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        defer { close(fd) }
        let r = try ChildProcess.run(evidenceBinary, ["__probe", "--fd", "3", "--name", "clip.bin"], environment: [:],
                                     separateStandardError: true, timeout: 60, descriptors: [fd])
        #expect(r.succeeded, "\(r.standardError)")
        let line = r.standardError.split(separator: "\n").first.map(String.init) ?? ""
        #expect(line.hasPrefix("sandbox: confined: seccomp filter (no open, socket, exec)"), "\(line)")
        if getuid() == 0 {
            #expect(line.contains("empty network namespace, uid 65534 gid 65534"), "\(line)")
        }
        let info = try JSONDecoder().decode(MediaInfo.self, from: Data(r.output.utf8))
        #expect(info.container?.contains("mp4") == true && info.probeError == nil, "\(r.output)")
    }

    @Test("binary data without a media extension is settled by the sniff server (libavformat's format probe, confined): not media, and no child forked")
    func binaryDataIsNotMedia() {
        var generator = SystemRandomNumberGenerator()
        let servers = ProbeServers(executable: evidenceBinary, timeout: 60)
        for i in 0..<20 {
            let path = dir.write("readings-\(i).dat", Data((0..<50_000).map { _ in UInt8.random(in: 0...255, using: &generator) }))
            #expect(ChildMediaProbe.probe(path: path, name: "readings-\(i).dat", servers: servers) == nil)
        }
        #expect(servers.started == 0, "no fork server, no child: the sniff said no")
        #expect(servers.sniffersStarted == 1, "one sniff server for every file")
    }

    @Test("evidence __probe --sniff confines itself, says 1 for an MP4's first bytes under any name and 0 for noise, and is ended by a request that carries a descriptor (it is handed bytes, never a file)")
    func theSniffServer() throws {
        let connection = try ForkServer.Connection(executable: evidenceBinary, arguments: ["__probe", "--sniff"],
                                                   environment: [:], readyTimeout: 60)
        defer { connection.shutDown() }
        #expect(connection.announcement.hasPrefix("sandbox: confined: seccomp filter (no open, socket, exec)"), "\(connection.announcement)")
        let mp4 = try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/bodycam-2024-05-01.mp4")).prefix(MediaPrefilter.window)
        var generator = SystemRandomNumberGenerator()
        let noise = Data((0..<MediaPrefilter.window).map { _ in UInt8.random(in: 0...255, using: &generator) })
        func ask(_ name: String, _ bytes: Data) throws -> String {
            String(decoding: try connection.ask(Data(name.utf8) + Data([0]) + bytes, timeout: 30).get(), as: UTF8.self)
        }
        #expect(try ask("upload.bin", mp4) == "1")
        #expect(try ask("readings.dat", noise) == "0")
        #expect(try ask("no-zero-byte", Data()) == "0")
        #expect(try ask("", mp4) == "1")
        // A request with a file attached is not the protocol: the server ends (the socket closes).
        let fd = open(samplesDirectory + "/bodycam-2024-05-01.mp4", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        if case .success(let reply) = connection.request(descriptor: fd, name: "clip.mp4", timeout: 30) {
            Issue.record("a sniff server answered a request that carried a file: \(reply)")
        }
        #expect(connection.process?.wait(seconds: 30) != nil, "the sniff server exited")
    }

    @Test("no sniff answer (the server cannot start) is never taken for 'not media': the file goes to a child, whose failure is the file's probe error")
    func noSniffAnswerAsksAChild() {
        var generator = SystemRandomNumberGenerator()
        let path = dir.write("readings.dat", Data((0..<50_000).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        let servers = ProbeServers(executable: dir.path + "/no-such-evidence", timeout: 10)
        let info = ChildMediaProbe.probe(path: path, name: "readings.dat", servers: servers)
        #expect(info?.probeError?.contains("could not be started") == true, "\(String(describing: info))")
    }

    @Test("ingesting media and documents through the in-process API never loads libavformat into this process")
    func theParentNeverLoadsLibavformat() async {
        // In a fresh process (an exit test): this test process's other suites load libavformat.
        let dir = TempDirectory("probe-maps")
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) { [base = dir.path as String] in
            func fail(_ code: Int32, _ message: String) -> Never {
                FileHandle.standardError.write(Data(("FAIL: " + message + "\n").utf8))
                exit(code)
            }
            func mapsLibavformat() -> Bool {
                // read(2) to the end: /proc files say they are empty to stat, and what reads by size gets nothing.
                let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { fail(15, "cannot open /proc/self/maps") }
                defer { close(fd) }
                var maps = Data(), chunk = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n <= 0 { break }
                    maps.append(contentsOf: chunk[0..<n])
                }
                guard String(decoding: maps, as: UTF8.self).contains("libFoundation") || maps.count > 1000 else {
                    fail(16, "/proc/self/maps read as \(maps.count) bytes")
                }
                return String(decoding: maps, as: UTF8.self).contains("libavformat")
            }
            if mapsLibavformat() { fail(10, "libavformat was mapped before the test began") }
            func write(_ name: String, _ data: Data) -> String {
                let path = base + "/" + name
                guard FileManager.default.createFile(atPath: path, contents: data) else { fail(14, "cannot write \(path)") }
                return path
            }
            let ingestor = Ingestor(home: try EvidenceHome(path: base + "/home"), actor: "test",
                                    prober: ChildMediaProbe.prober(executable: evidenceBinary))
            let mp4 = FileManager.default.contents(atPath: samplesDirectory + "/bodycam-2024-05-01.mp4")!
            var generator = SystemRandomNumberGenerator()
            let files = [
                write("bodycam.mp4", mp4),
                write("renamed.bin", mp4),
                write("readings.dat", Data((0..<50_000).map { _ in UInt8.random(in: 0...255, using: &generator) })),
                write("report.txt", Data("Incident report\n".utf8)),
            ]
            var media: [String: String] = [:]
            for path in files {
                guard case .ingested(let outcome) = ingestor.ingest(path: path) else { fail(11, "not ingested: \(path)") }
                media[(path as NSString).lastPathComponent] = outcome.item.media?.container ?? "none"
            }
            guard media["bodycam.mp4"]?.contains("mp4") == true, media["renamed.bin"]?.contains("mp4") == true,
                  media["readings.dat"] == "none", media["report.txt"] == "none" else { fail(12, "media facts: \(media)") }
            if mapsLibavformat() { fail(13, "libavformat is mapped into the process that ingested") }
            exit(0)
        }
        let errors = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(!errors.contains("FAIL:"), "\(errors)")
    }
}

/// samples/ at the package root.
let samplesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("samples").path

/// The built `evidence` binary, beside the test bundle.
let evidenceBinary: String = {
    if let env = ProcessInfo.processInfo.environment["EVIDENCE_BIN"] { return env }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("evidence").path
}()
