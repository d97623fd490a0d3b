import Foundation

/// A hand-written PDF 1.4 document of text lines in the standard Helvetica fonts: enough
/// for certificates that `qpdf --check` accepts and `pdftotext` reads, with no library.
///
/// Text is WinAnsi-encoded; characters outside Latin-1 print as `?`. Pages are A4.
struct MinimalPDF {
    enum Font: String {
        case regular = "F1"
        case bold = "F2"
    }

    struct TextRun {
        var x: Double
        var y: Double
        var font: Font
        var size: Double
        var text: String
    }

    static let pageWidth = 595.0
    static let pageHeight = 842.0

    var title: String
    var creationDate: Date
    private(set) var pages: [[TextRun]] = [[]]

    init(title: String, creationDate: Date) {
        self.title = title
        self.creationDate = creationDate
    }

    mutating func add(_ run: TextRun) {
        pages[pages.count - 1].append(run)
    }

    mutating func newPage() {
        pages.append([])
    }

    /// Rough Helvetica advance width, for deciding where to wrap.
    static func estimatedWidth(_ text: String, size: Double) -> Double {
        Double(text.count) * size * 0.56
    }

    /// The complete file. Object numbers: 1 catalog, 2 page tree, 3–4 fonts, 5 info, then a
    /// page object and its content stream per page.
    func render() -> Data {
        var objects: [Data] = []
        let pageCount = pages.count
        let firstPageObject = 6
        let kids = (0..<pageCount).map { "\(firstPageObject + 2 * $0) 0 R" }.joined(separator: " ")
        objects.append(Data("<< /Type /Catalog /Pages 2 0 R >>".utf8))
        objects.append(Data("<< /Type /Pages /Kids [\(kids)] /Count \(pageCount) >>".utf8))
        objects.append(Data("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".utf8))
        objects.append(Data("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>".utf8))
        var info = Data("<< /Title ".utf8)
        info.append(Self.literal(title))
        info.append(Data(" /Producer (evidence-sandbox) /CreationDate (\(Self.pdfDate(creationDate))) >>".utf8))
        objects.append(info)
        for (index, runs) in pages.enumerated() {
            let contentObject = firstPageObject + 2 * index + 1
            objects.append(Data(("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 \(Int(Self.pageWidth)) \(Int(Self.pageHeight))] "
                + "/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents \(contentObject) 0 R >>").utf8))
            var stream = Data()
            for run in runs {
                stream.append(Data("BT /\(run.font.rawValue) \(Self.number(run.size)) Tf \(Self.number(run.x)) \(Self.number(run.y)) Td ".utf8))
                stream.append(Self.literal(run.text))
                stream.append(Data(" Tj ET\n".utf8))
            }
            var object = Data("<< /Length \(stream.count) >>\nstream\n".utf8)
            object.append(stream)
            object.append(Data("endstream".utf8))
            objects.append(object)
        }

        // Header with a binary comment line, as the spec recommends for files with 8-bit data.
        var file = Data("%PDF-1.4\n%".utf8)
        file.append(contentsOf: [0xE2, 0xE3, 0xCF, 0xD3, 0x0A])
        var offsets: [Int] = []
        for (i, body) in objects.enumerated() {
            offsets.append(file.count)
            file.append(Data("\(i + 1) 0 obj\n".utf8))
            file.append(body)
            file.append(Data("\nendobj\n".utf8))
        }
        let xrefOffset = file.count
        // Every cross-reference entry is exactly 20 bytes: 10-digit offset, 5-digit generation, type, EOL.
        var xref = "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets {
            xref += String(format: "%010d 00000 n \n", offset)
        }
        xref += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R /Info 5 0 R >>\nstartxref\n\(xrefOffset)\n%%EOF\n"
        file.append(Data(xref.utf8))
        return file
    }

    /// A PDF literal string in WinAnsi: `(` `)` `\` escaped, non-ASCII Latin-1 as octal.
    static func literal(_ text: String) -> Data {
        var out: [UInt8] = [UInt8(ascii: "(")]
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x28, 0x29, 0x5C:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(scalar.value))
            case 0x20..<0x7F:
                out.append(UInt8(scalar.value))
            case 0xA0...0xFF:
                out.append(contentsOf: Array(String(format: "\\%03o", scalar.value).utf8))
            case 0x2014:  // em dash, WinAnsi 0x97
                out.append(contentsOf: Array("\\227".utf8))
            default:
                out.append(UInt8(ascii: "?"))
            }
        }
        out.append(UInt8(ascii: ")"))
        return Data(out)
    }

    private static func number(_ v: Double) -> String {
        v == v.rounded() ? String(Int(v)) : String(format: "%.2f", v)
    }

    private static func pdfDate(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "D:%04d%02d%02d%02d%02d%02dZ", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1,
                      Int(tmv.tm_mday), Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
    }
}
