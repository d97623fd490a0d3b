import EvidenceCore
import EvidenceMedia
import Foundation
import Testing

/// samples/ at the package root (made by `make samples`, committed).
let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("samples").path

@Suite("Media probe")
struct MediaProbeTests {
    @Test("MP4: container, duration, H.264 video and AAC audio streams, creation_time")
    func mp4() throws {
        let m = try #require(MediaProbe.probe(path: samples + "/bodycam-2024-05-01.mp4"))
        #expect(m.probeError == nil)
        #expect(m.container?.contains("mp4") == true)
        #expect(abs((m.durationSeconds ?? 0) - 2.0) < 0.1)
        let video = try #require(m.streams.first { $0.type == "video" })
        #expect(video.codec == "h264")
        #expect(video.width == 320 && video.height == 240)
        #expect(abs((video.frameRate ?? 0) - 25) < 0.01)
        let audio = try #require(m.streams.first { $0.type == "audio" })
        #expect(audio.codec == "aac")
        #expect(audio.sampleRate == 44100 && audio.channels == 1)
        #expect(m.creationTime == Timestamp.parseLenient("2024-05-01T09:30:00Z"))
        #expect((m.bitRate ?? 0) > 0)
    }

    @Test("WAV: PCM audio, sample rate and channels")
    func wav() throws {
        let m = try #require(MediaProbe.probe(path: samples + "/interview.wav"))
        let a = try #require(m.streams.first)
        #expect(m.container == "wav")
        #expect(a.type == "audio" && a.codec == "pcm_s16le" && a.sampleRate == 16000 && a.channels == 1)
        #expect(abs((m.durationSeconds ?? 0) - 1.0) < 0.05)
    }

    @Test("JPEG: a still image with its size and no frame rate")
    func jpeg() throws {
        let m = try #require(MediaProbe.probe(path: samples + "/scene-photo.jpg"))
        let v = try #require(m.streams.first)
        #expect(v.codec == "mjpeg" && v.width == 320 && v.height == 240)
        #expect(v.frameRate == nil && m.durationSeconds == nil)
    }

    @Test("a text document is not media")
    func document() {
        #expect(MediaProbe.probe(path: samples + "/incident-report.txt") == nil)
    }

    @Test("a truncated MP4 records a probe error instead of failing")
    func truncated() throws {
        let m = try #require(MediaProbe.probe(path: samples + "/truncated.mp4"))
        #expect(m.probeError != nil)
        #expect(m.summary.hasPrefix("unreadable media"))
    }

    @Test("a store object without extension is judged by the name it came with")
    func nameHint() throws {
        let tmp = NSTemporaryDirectory() + "/evidence-probe-\(UUID().uuidString)"
        try FileManager.default.copyItem(atPath: samples + "/truncated.mp4", toPath: tmp)
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        #expect(MediaProbe.probe(path: tmp) == nil)
        #expect(MediaProbe.probe(path: tmp, name: "truncated.mp4")?.probeError != nil)
    }

    @Test("lenient timestamps: fractions, zones, space separator")
    func timestamps() {
        let base = 1_714_555_800.0
        #expect(Timestamp.parseLenient("2024-05-01T09:30:00.000000Z")?.timeIntervalSince1970 == base)
        #expect(Timestamp.parseLenient("2024-05-01 09:30:00")?.timeIntervalSince1970 == base)
        #expect(Timestamp.parseLenient("2024-05-01T11:30:00+02:00")?.timeIntervalSince1970 == base)
        #expect(Timestamp.parseLenient("2024-05-01T04:30:00-0500")?.timeIntervalSince1970 == base)
        #expect(Timestamp.parseLenient("2024-05-01T09:30:00.5Z")?.timeIntervalSince1970 == base + 0.5)
        #expect(Timestamp.parseLenient("not a date") == nil)
    }
}
