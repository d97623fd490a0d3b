import EvidenceCore
import EvidenceMedia
import EvidenceProcess
import EvidenceTesting
import Foundation
import Testing

/// The pre-filter of the process that holds the credentials: it may only rule out, in pure
/// Swift; whatever it cannot rule out goes to the probe child.
@Suite("Media pre-filter (no libavformat)")
struct MediaPrefilterTests {
    let dir = TempDirectory("prefilter")

    func verdict(_ path: String, name: String) -> MediaPrefilter.Verdict {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        return MediaPrefilter.verdict(descriptor: fd, name: name)
    }

    func sample(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: samples + "/" + name)) }

    @Test("text, documents, archives, zeros and empty files are ruled out without a child")
    func rulesOutWhatIsCertainlyNotMedia() throws {
        #expect(verdict(samples + "/incident-report.txt", name: "incident-report.txt") == .notMedia("text"))
        #expect(verdict(dir.write("empty.dat", Data()), name: "empty.dat") == .notMedia("empty"))
        #expect(verdict(dir.write("zeros.dat", Data(count: 100_000)), name: "zeros.dat") == .notMedia("only zero bytes"))
        #expect(verdict(dir.write("report.pdf", Data("%PDF-1.7\n%\u{E2}\u{E3}\n1 0 obj\n".utf8) + Data([0, 1, 2, 0xFF])), name: "report.pdf")
                == .notMedia("PDF"))
        // A real ZIP, made by Python's zipfile, holding the sample MP4: still an archive.
        let zip = dir.file("clips.zip")
        let made = try ChildProcess.run("python3", ["-c", "import zipfile,sys; zipfile.ZipFile(sys.argv[1],'w').write(sys.argv[2],'a.mp4')",
                                                    zip, samples + "/bodycam-2024-05-01.mp4"])
        #expect(made.succeeded, "python3 could not write the zip: \(made.output)")
        #expect(verdict(zip, name: "clips.zip") == .notMedia("ZIP (also docx, xlsx, odt, jar)"))
        // UTF-8 text whose window ends inside a multi-byte character is still text.
        let text = String(repeating: "Zeugenaussage über den Vorfall. ", count: 400)
        #expect(verdict(dir.write("statement.log", text), name: "statement.log") == .notMedia("text"))
    }

    @Test("media by content under any name, and unknown binary data, go to the child")
    func asksTheChildAboutEverythingElse() throws {
        for sampleName in ["bodycam-2024-05-01.mp4", "interview.wav", "scene-photo.jpg", "truncated.mp4"] {
            let renamed = dir.write("\(sampleName).bin", try sample(sampleName))
            #expect(verdict(renamed, name: "upload.bin") == .ask, "\(sampleName)")
        }
        var generator = SystemRandomNumberGenerator()
        let noise = Data((0..<20_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        #expect(verdict(dir.write("noise.dat", noise), name: "noise.dat") == .ask)
        // A media extension always asks, whatever the bytes (a failure is then a probe error).
        #expect(verdict(samples + "/incident-report.txt", name: "clip.mp4") == .ask)
    }

    @Test("the descriptor probe decides by content: an MP4 named .bin is media, noise is not")
    func descriptorProbeDecidesByContent() throws {
        let renamed = dir.write("clip.bin", try sample("bodycam-2024-05-01.mp4"))
        let fd = open(renamed, O_RDONLY)
        defer { close(fd) }
        let info = try #require(MediaProbe.probe(descriptor: fd, name: "clip.bin"))
        #expect(info.container?.contains("mp4") == true && info.probeError == nil)
        #expect(info == MediaProbe.probe(path: samples + "/bodycam-2024-05-01.mp4"))
        var generator = SystemRandomNumberGenerator()
        let noise = dir.write("noise.dat", Data((0..<20_000).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        let noiseFD = open(noise, O_RDONLY)
        defer { close(noiseFD) }
        #expect(MediaProbe.probe(descriptor: noiseFD, name: "noise.dat") == nil)
        // The descriptor's offset is not the probe's business: it reads with pread.
        #expect(lseek(fd, 0, SEEK_CUR) == 0)
    }
}
