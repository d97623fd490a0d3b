@testable import EvidenceCertificate
import EvidenceCore
import Foundation
import Testing

@Suite("Certificate layout")
struct LayoutTests {
    @Test("sizes in bytes and binary units", arguments: [
        (Int64(0), "0 bytes"),
        (1, "1 byte"),
        (1023, "1,023 bytes"),
        (1024, "1,024 bytes (1.00 KiB)"),
        (48_213_771, "48,213,771 bytes (46.0 MiB)"),
        (5_000_000_000, "5,000,000,000 bytes (4.66 GiB)"),
        (1_234_567_890_123, "1,234,567,890,123 bytes (1.12 TiB)"),
        (-2048, "-2,048 bytes (-2.00 KiB)"),
    ])
    func sizes(bytes: Int64, expected: String) {
        #expect(CertificateFormat.size(bytes) == expected)
    }

    @Test("control characters never reach cairo")
    func clean() {
        #expect(CertificateFormat.clean("a\u{0}b\nc\td\u{7F}e") == "a\u{FFFD}b c d\u{FFFD}e")
        #expect(CertificateFormat.clean("Überwachung 東京.mp4") == "Überwachung 東京.mp4")
        #expect(!CertificateFormat.clean("x\u{0}y").utf8.contains(0))
        #expect(CertificateFormat.clean("clip\u{202E}4pm.exe") == "clip\u{FFFD}4pm.exe")
        #expect(CertificateFormat.clean("👩\u{200D}💻") == "👩\u{200D}💻")
    }

    @Test("wrapping is lossless and keeps every line inside the width")
    func wrapping() {
        TextMeasurer.withScratch { m in
            let font = FontSpec.mono(8.5)
            let samples = [
                "openssl ts -verify -data clip.mp4 -in clip.mp4.tsr -CAfile tsa-ca.pem -untrusted tsa.pem",
                String(repeating: "a", count: 500),
                "short",
                "  leading and  double  spaces kept  ",
                "Überwachung 東京.mp4 " + String(repeating: "é", count: 120),
            ]
            for width in [40.0, 120.0, 300.0] {
                for s in samples {
                    let lines = m.wrap(s, font, width: width)
                    #expect(lines.joined() == s, "lossless at \(width)")
                    for line in lines {
                        let visible = String(line.reversed().drop { $0 == " " }.reversed())
                        #expect(m.width(visible, font) <= width + 0.001, "'\(line)' wider than \(width)")
                    }
                }
            }
            // Prefers breaking after a space.
            let words = m.wrap("alpha beta gamma delta", FontSpec.sans(10), width: m.width("alpha beta gam", FontSpec.sans(10)))
            #expect(words == ["alpha beta ", "gamma delta"])
        }
    }

    @Test("advances kept for the next measurer are cairo's own: the same widths and lines, cairo not asked again")
    func sharedAdvances() {
        let shared = SharedAdvances()
        let texts = ["Certificate of notarization", "SHA-256 3f9a0c… (continued)", "Überwachung 東京.mp4 é",
                     "tab\tand ~{}|", String(repeating: "w", count: 90)]
        let fonts: [FontSpec] = [.sans(10), .sans(10, bold: true), .mono(8.5), .sans(7.25)]
        func measure(_ m: TextMeasurer) -> (widths: [Double], lines: [[String]], asked: Int) {
            let widths = fonts.flatMap { f in texts.map { m.width($0, f) } }
            let lines = fonts.flatMap { f in texts.map { m.wrap($0, f, width: 120) } }
            return (widths, lines, m.cairoMeasurements)
        }
        let alone = TextMeasurer.withScratch { measure($0) }
        let first = TextMeasurer.withScratch(shared: shared) { measure($0) }
        let second = TextMeasurer.withScratch(shared: shared) { measure($0) }
        #expect(first.widths == alone.widths && second.widths == alone.widths)
        #expect(first.lines == alone.lines && second.lines == alone.lines)
        #expect(first.asked == alone.asked && first.asked > 0)
        #expect(second.asked == 0)
        // A character no measurer met yet is still asked for, once.
        let third = TextMeasurer.withScratch(shared: shared) { m in (m.width("Ω", .sans(10)), m.width("ΩΩ", .sans(10)), m.cairoMeasurements) }
        #expect(third.0 > 0 && abs(third.1 - 2 * third.0) < 1e-9 && third.2 == 1)
    }

    @Test("names choosing endless distinct characters (a letter with ever more combining marks) do not grow the kept advances without bound")
    func sharedAdvancesBounded() {
        let shared = SharedAdvances()
        let font = FontSpec.sans(10)
        let limit = AdvanceTable.sharedOtherLimit
        for batch in 0..<3 {
            TextMeasurer.withScratch(shared: shared) { m in
                for n in 0..<(limit / 2 + 100) {
                    let marks = String(repeating: "\u{301}", count: 1 + (batch * (limit / 2 + 100) + n) % 7)
                    _ = m.width("x" + String(UnicodeScalar(0x4E00 + batch * 4000 + n)!) + marks, font)
                }
            }
        }
        #expect(shared.otherCount(font) == limit)
        // ASCII is always kept: a new measurer asks cairo for none of it.
        let asked = TextMeasurer.withScratch(shared: shared) { m in _ = m.width("x", font); return m.cairoMeasurements }
        #expect(asked == 0)
    }

    @Test("a SHA-256 fits on one line of the value column at a readable size")
    func digestFits() {
        TextMeasurer.withScratch { m in
            let hex = String(repeating: "f", count: 64)
            let width = PageGeometry.right - PageGeometry.left - CertificateLayout.labelWidth
            let size = m.fittingSize(hex, family: .mono, preferred: 9.5, minSize: 6.5, width: width)
            #expect(size >= 8)
            #expect(m.width(hex, .mono(size)) <= width)
            #expect(m.wrap(hex, .mono(size), width: width).count == 1)
            // Too long even at the smallest size: keep the preferred size and wrap.
            #expect(m.fittingSize(hex + hex, family: .mono, preferred: 9.5, minSize: 8, width: width) == 9.5)
        }
    }

    @Test("monospace face is really monospaced")
    func monoFace() {
        TextMeasurer.withScratch { m in
            #expect(abs(m.width("iiii", .mono(10)) - m.width("MMMM", .mono(10))) < 0.01)
            #expect(m.width("iiii", .sans(10)) < m.width("MMMM", .sans(10)))
        }
    }

    @Test("paginator never places a line below the content area")
    func pagination() {
        let line = Line(height: 13)
        let blocks = (0..<300).map { i in Block(lines: Array(repeating: line, count: i % 7 + 1), keepTogether: i % 2 == 0) }
        let pages = Paginator.paginate(blocks)
        #expect(pages.count > 1)
        #expect(pages.flatMap { $0 }.count == blocks.reduce(0) { $0 + $1.lines.count })
        for page in pages {
            for placed in page { #expect(placed.y + placed.line.height <= PageGeometry.contentBottom) }
        }
        // A kept-together block is never split across pages.
        var pageOfLine: [Int] = []
        for (p, page) in pages.enumerated() { pageOfLine += Array(repeating: p, count: page.count) }
        var index = 0
        for block in blocks {
            let span = Set(pageOfLine[index..<(index + block.lines.count)])
            if block.keepTogether { #expect(span.count == 1) }
            index += block.lines.count
        }
    }

    @Test("cairo status text in errors")
    func errorText() {
        let e = CertificateError(stage: "writing the PDF", code: 1)
        #expect(e.code == 1)
        #expect(e.description.contains("writing the PDF"))
        #expect(e.description.contains("out of memory"), "\(e)")
    }
}

@Suite("PNG pictures")
struct PNGPictureTests {
    @Test("RGB written as PNG reads back its size; sizes that disagree with the pixels give none")
    func roundTrip() throws {
        var rgb = Data()
        for i in 0..<(4 * 3) { rgb.append(contentsOf: [UInt8(i * 20), 0, 255]) }
        let png = try #require(PNGPicture.png(width: 4, height: 3, rgb: rgb))
        #expect(png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        #expect(PNGPicture.size(png).map { [$0.width, $0.height] } == [4, 3])
        #expect(PNGPicture.png(width: 4, height: 3, rgb: rgb.dropLast()) == nil)
        #expect(PNGPicture.size(Data("not a png at all, not at all".utf8)) == nil)
    }
}
