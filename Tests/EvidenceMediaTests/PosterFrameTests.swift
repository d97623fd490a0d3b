import EvidenceCore
import EvidenceMedia
import Foundation
import Glibc
import Testing

/// Poster frames decoded with libavcodec from the committed samples (in process here; the
/// pipeline runs the same code in the confined probe child).
@Suite("Poster frames")
struct PosterFrameTests {
    func poster(_ name: String, maxWidth: Int = 480, maxHeight: Int = 360) -> Result<PosterFrame, PosterError> {
        let fd = open(samples + "/" + name, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        return MediaProbe.poster(descriptor: fd, maxWidth: maxWidth, maxHeight: maxHeight)
    }

    @Test("a video's and a photo's first picture, as RGB of the size asked for, its shape kept")
    func pictures() throws {
        let video = try poster("bodycam-2024-05-01.mp4").get()
        #expect(video.width == 320 && video.height == 240 && video.isConsistent)
        // testsrc's bars: the top-left area is not one flat colour.
        #expect(Set(stride(from: 0, to: video.rgb.count, by: 3 * 97).map { video.rgb[$0] }).count > 2)
        let small = try poster("bodycam-2024-05-01.mp4", maxWidth: 160, maxHeight: 160).get()
        #expect(small.width == 160 && small.height == 120 && small.rgb.count == 160 * 120 * 3)
        let photo = try poster("scene-photo.jpg").get()
        #expect(photo.width == 320 && photo.height == 240)
    }

    @Test("audio, a cut-off file and a document have no poster, each with its reason")
    func noPicture() {
        if case .failure(let e) = poster("interview.wav") { #expect(e.message == "no video stream") } else { Issue.record("wav gave a poster") }
        if case .success = poster("truncated.mp4") { Issue.record("a truncated file gave a poster") }
        if case .success = poster("incident-report.txt") { Issue.record("a text file gave a poster") }
    }

    @Test("attacker: a reply whose sizes disagree with its pixels is not consistent")
    func inconsistent() {
        #expect(!PosterFrame(width: 10, height: 10, rgb: Data(count: 299)).isConsistent)
        #expect(!PosterFrame(width: 0, height: 10, rgb: Data()).isConsistent)
        #expect(!PosterFrame(width: 5000, height: 1, rgb: Data(count: 15000)).isConsistent)
        #expect(PosterFrame(width: 2, height: 1, rgb: Data(count: 6)).isConsistent)
    }
}
