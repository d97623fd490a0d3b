import CCairo
import EvidenceCore
import Foundation

/// A page-flowed A4 document other than the item certificate: the disclosure index, the
/// declaration of authenticity. Same type scale, page frame and page numbers ("Page N of M")
/// as the certificate; real PDF text throughout, so `pdftotext` extracts every value.
public struct Document: Sendable, Equatable {
    public enum Element: Sendable, Equatable {
        case paragraph(String)
        /// A label and its value (wrapped in the value column).
        case field(String, String)
        /// A label and a digest, kept on one line when it fits at a readable size.
        case hash(String, String)
        /// A smaller heading inside a section (an item of the index).
        case subheading(String)
        /// Columns with relative widths; each row wraps within its cells.
        case table([Column], [[String]])
        /// A signature block: a rule to sign on, and the lines printed under it.
        case signature([String])
        case spacer(Double)
    }

    public struct Column: Sendable, Equatable {
        public var title: String
        public var width: Double
        public var mono: Bool
        public init(_ title: String, width: Double, mono: Bool = false) { self.title = title; self.width = width; self.mono = mono }
    }

    public struct Section: Sendable, Equatable {
        public var heading: String
        public var elements: [Element]
        public init(_ heading: String, _ elements: [Element]) { self.heading = heading; self.elements = elements }
    }

    public var title: String
    /// Printed right of the title (e.g. "Case 2026-0412").
    public var tag: String
    /// The sentence under the title.
    public var statement: String
    public var sections: [Section]
    /// The running header's left part on pages after the first.
    public var runningHeader: String
    public var generatedAt: Date
    public var subject: String
    public var keywords: String

    public init(title: String, tag: String, statement: String, sections: [Section], runningHeader: String,
                generatedAt: Date, subject: String, keywords: String = "") {
        self.title = title; self.tag = tag; self.statement = statement; self.sections = sections
        self.runningHeader = runningHeader; self.generatedAt = generatedAt; self.subject = subject; self.keywords = keywords
    }
}

public enum DocumentRenderer {
    public static func render(_ doc: Document) throws(CertificateError) -> Data {
        let sink = PDFSink()
        let unmanaged = Unmanaged.passRetained(sink)
        defer { unmanaged.release() }
        guard let surface = cairo_pdf_surface_create_for_stream(pdfWrite, unmanaged.toOpaque(), PageGeometry.width, PageGeometry.height) else {
            throw CertificateError(stage: "creating the PDF surface", status: CAIRO_STATUS_NO_MEMORY)
        }
        defer { cairo_surface_destroy(surface) }
        try CertificateRenderer.check(cairo_surface_status(surface), "creating the PDF surface")
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_TITLE, CertificateFormat.clean(doc.title))
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_AUTHOR, "evidence")
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATOR, "evidence")
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_SUBJECT, CertificateFormat.clean(doc.subject))
        if !doc.keywords.isEmpty { cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_KEYWORDS, CertificateFormat.clean(doc.keywords)) }
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATE_DATE, String(Timestamp.string(doc.generatedAt).prefix(19)) + "Z")
        guard let cr = cairo_create(surface) else {
            throw CertificateError(stage: "creating the drawing context", status: CAIRO_STATUS_NO_MEMORY)
        }
        var crAlive = true
        defer { if crAlive { cairo_destroy(cr) } }
        let measurer = TextMeasurer(cr: cr, shared: .pdf)
        var layout = DocumentLayout(m: measurer, doc: doc)
        layout.build()
        let pages = Paginator.paginate(layout.blocks)
        let painter = Painter(cr: cr, measurer: measurer, boxes: layout.boxStyles)
        let frame = PageFrame(continuedLeft: CertificateFormat.clean(doc.runningHeader), continuedRight: "continued",
                              footerLeft: "Generated \(Timestamp.string(doc.generatedAt)) by evidence")
        for (index, page) in pages.enumerated() {
            painter.drawPage(page, number: index + 1, of: pages.count, frame: frame)
            cairo_show_page(cr)
            try CertificateRenderer.check(cairo_status(cr), "drawing page \(index + 1)")
        }
        cairo_destroy(cr)
        crAlive = false
        cairo_surface_finish(surface)
        try CertificateRenderer.check(cairo_surface_status(surface), "writing the PDF")
        return sink.data
    }
}

struct DocumentLayout: BlockBuilding {
    let m: TextMeasurer
    let doc: Document
    var blocks: [Block] = []
    var pendingHeading: [Line] = []
    var nextBoxID = 0
    var boxStyles: [Int: BoxStyle] = [:]

    mutating func build() {
        titleBlock(title: doc.title, tag: doc.tag, statement: doc.statement)
        for section in doc.sections {
            heading(section.heading)
            for element in section.elements { add(element) }
            spacer(12)
        }
    }

    private mutating func add(_ element: Document.Element) {
        switch element {
        case .paragraph(let text):
            paragraph(CertificateFormat.clean(text), color: Palette.body)
            spacer(5)
        case .field(let label, let value): keyValue(label, value)
        case .hash(let label, let hex): hashRow(label, hex)
        case .spacer(let h): spacer(h)
        case .subheading(let text):
            let font = FontSpec.sans(10.5, bold: true)
            pendingHeading += m.wrap(CertificateFormat.clean(text), font, width: PageGeometry.contentWidth).map {
                Line(height: 17, ops: [.text($0, x: PageGeometry.left, baseline: 13, font: font, color: Palette.ink)])
            }
        case .table(let columns, let rows): table(columns, rows)
        case .signature(let under):
            var lines: [Line] = [Line(height: 34)]
            let x1 = PageGeometry.left + PageGeometry.contentWidth * 0.6
            lines.append(Line(height: 6, ops: [.rule(x0: PageGeometry.left, x1: x1, y: 2, width: 0.75, color: Palette.ink)]))
            for text in under {
                lines.append(Line(height: 13, ops: [.text(CertificateFormat.clean(text), x: PageGeometry.left, baseline: 10,
                                                          font: CertificateLayout.valueFont, color: Palette.body)]))
            }
            lines.append(Line(height: 10))
            addBlock(lines, keepTogether: true)
        }
    }

    private mutating func table(_ columns: [Document.Column], _ rows: [[String]]) {
        let total = columns.reduce(0) { $0 + $1.width }
        guard total > 0 else { return }
        let gap = 6.0
        var xs: [Double] = []
        var widths: [Double] = []
        var x = PageGeometry.left
        for c in columns {
            let w = PageGeometry.contentWidth * c.width / total
            xs.append(x); widths.append(w - gap)
            x += w
        }
        let headFont = CertificateLayout.labelFont
        var head = Line(height: 16, ops: [])
        for (i, c) in columns.enumerated() {
            head.ops.append(.text(c.title, x: xs[i], baseline: 11, font: headFont, color: Palette.muted))
        }
        let rule = Line(height: 4, ops: [.rule(x0: PageGeometry.left, x1: PageGeometry.right, y: 1, width: 0.5, color: Palette.rule)])
        addBlock([head, rule], keepTogether: true)
        for row in rows {
            var cells: [[String]] = []
            for (i, c) in columns.enumerated() {
                let font = c.mono ? FontSpec.mono(8) : FontSpec.sans(9)
                cells.append(m.wrap(CertificateFormat.clean(i < row.count ? row[i] : ""), font, width: widths[i]))
            }
            let height = max(1, cells.map(\.count).max() ?? 1)
            var lines: [Line] = []
            for l in 0..<height {
                var line = Line(height: 12, ops: [])
                for (i, c) in columns.enumerated() where l < cells[i].count {
                    let font = c.mono ? FontSpec.mono(8) : FontSpec.sans(9)
                    line.ops.append(.text(cells[i][l], x: xs[i], baseline: 9.5, font: font, color: Palette.ink))
                }
                lines.append(line)
            }
            lines.append(Line(height: 4, ops: [.rule(x0: PageGeometry.left, x1: PageGeometry.right, y: 2, width: 0.5, color: Palette.hairline)]))
            addBlock(lines, keepTogether: true)
        }
    }
}
