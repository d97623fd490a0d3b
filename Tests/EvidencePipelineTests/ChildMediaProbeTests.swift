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
/// `MediaInfo` with a clear reason, never a crash or a hang.
@Suite("Media probe in a child process")
struct ChildMediaProbeTests {
    /// A stand-in for `evidence __probe` that misbehaves as told.
    let dir = TempDirectory("probe-child")

    func child(_ script: String) -> String {
        let path = dir.write("probe-\(UUID().uuidString.prefix(8)).sh", "#!/bin/sh\n" + script + "\n")
        chmod(path, 0o755)
        return path
    }

    /// A file the parent can open (it hands the child a descriptor, not a path).
    var clip: String { dir.write("x.mp4", "not really a clip") }

    @Test func aChildThatCrashesIsReportedAndTheParentGoesOn() {
        let info = ChildMediaProbe.probe(path: clip, name: "x.mp4", executable: child("kill -SEGV $$"), timeout: 10)
        #expect(info?.probeError?.contains("crashed on this file (signal 11)") == true, "\(String(describing: info))")
    }

    @Test func aChildThatHangsIsStoppedAtItsTimeout() {
        let started = Date()
        // The scenario: a child that hangs (`sleep 30`) far past the probe's 1 s timeout.
        let info = ChildMediaProbe.probe(path: clip, name: "x.mp4", executable: child("sleep 30"), timeout: 1)
        #expect(info?.probeError?.contains("took longer than 1 s") == true, "\(String(describing: info))")
        #expect(Date().timeIntervalSince(started) < 20)
    }

    @Test func whatTheChildPrintsIsTheAnswer() {
        #expect(ChildMediaProbe.probe(path: clip, name: nil, executable: child("echo null"), timeout: 10) == nil)
        let info = ChildMediaProbe.probe(path: clip, name: nil, executable: child(#"echo '{"container":"mov","streams":[]}'"#), timeout: 10)
        #expect(info?.container == "mov")
        let garbage = ChildMediaProbe.probe(path: clip, name: nil, executable: child("echo not json"), timeout: 10)
        #expect(garbage?.probeError?.contains("unreadable") == true)
    }

    @Test func noChildIsStartedForAFileThatIsNotMedia() {
        // The stand-in would fail loudly if it were started.
        let report = dir.write("report.txt", "Incident report\nNothing to see.\n")
        #expect(ChildMediaProbe.probe(path: report, name: "report.txt", executable: child("exit 3"), timeout: 10) == nil)
    }

    @Test("a file the parent cannot rule out goes to the child, as descriptor 3 with its name, never as a path")
    func theChildGetsTheFileAsADescriptor() throws {
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<20_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let data = dir.write("readings.dat", bytes)
        let seen = dir.file("seen")
        let stub = child("printf '%s\\n' \"$@\" > \(seen).args; cat <&3 > \(seen).bytes; echo null")
        #expect(ChildMediaProbe.probe(path: data, name: "readings.dat", executable: stub, timeout: 10) == nil)
        #expect(try String(contentsOfFile: seen + ".args", encoding: .utf8) == "__probe\n--fd\n3\n--name\nreadings.dat\n")
        #expect(FileManager.default.contents(atPath: seen + ".bytes") == bytes)
    }

    @Test("the parent does not follow a link to the file (the store's copies are never links)")
    func aLinkIsNotFollowed() {
        let target = dir.write("secret.mp4", "x")
        let link = dir.file("link.mp4")
        symlink(target, link)
        let info = ChildMediaProbe.probe(path: link, name: "link.mp4", executable: child("echo null"), timeout: 10)
        #expect(info?.probeError?.contains("cannot open") == true, "\(String(describing: info))")
    }
}

/// The real child, `evidence __probe`, started the way `evidence run` starts it.
@Suite("Media probe: the real child decides")
struct RealChildMediaProbeTests {
    let dir = TempDirectory("probe-real")

    @Test("media facts of a real MP4 come from the child, also under a name that is not a media one")
    func mediaFactsFromTheChild() throws {
        let mp4 = try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/bodycam-2024-05-01.mp4"))
        for name in ["bodycam.mp4", "upload.bin"] {
            let path = dir.write(name, mp4)
            let info = try #require(ChildMediaProbe.probe(path: path, name: name, executable: evidenceBinary, timeout: 60))
            #expect(info.probeError == nil, "\(name): \(info)")
            #expect(info.container?.contains("mp4") == true)
            #expect(info.streams.map(\.codec) == ["h264", "aac"])
            #expect(info.creationTime == Timestamp.parseLenient("2024-05-01T09:30:00Z"))
            #expect(abs((info.durationSeconds ?? 0) - 2.0) < 0.1)
        }
        let wav = dir.write("interview.take", try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/interview.wav")))
        #expect(ChildMediaProbe.probe(path: wav, name: nil, executable: evidenceBinary, timeout: 60)?.container == "wav")
    }

    @Test("the confined child reports the same facts as an unconfined probe, for every sample")
    func sameFactsAsInProcess() throws {
        for name in ["bodycam-2024-05-01.mp4", "interview.wav", "scene-photo.jpg", "truncated.mp4"] {
            let path = samplesDirectory + "/" + name
            let child = ChildMediaProbe.probe(path: path, name: name, executable: evidenceBinary, timeout: 60)
            #expect(child != nil && child == MediaProbe.probe(path: path, name: name), "\(name): \(String(describing: child))")
        }
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

    @Test("binary data without a media extension is judged by the child: not media")
    func binaryDataIsNotMedia() {
        var generator = SystemRandomNumberGenerator()
        let path = dir.write("readings.dat", Data((0..<50_000).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        #expect(ChildMediaProbe.probe(path: path, name: "readings.dat", executable: evidenceBinary, timeout: 60) == nil)
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
