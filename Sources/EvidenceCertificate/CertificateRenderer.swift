import CCairo
import EvidenceCore
import Foundation

/// Renders certificates as A4 PDFs with cairo, entirely in memory.
public enum CertificateRenderer {
    /// A4 PDF, rendered with cairo's PDF surface into memory
    /// (`cairo_pdf_surface_create_for_stream`), never via a temp file.
    /// Text is real PDF text (toy font API), so `pdftotext` extracts it.
    public static func render(_ content: CertificateContent) throws(CertificateError) -> Data {
        let sink = PDFSink()
        let unmanaged = Unmanaged.passRetained(sink)
        defer { unmanaged.release() }

        guard let surface = cairo_pdf_surface_create_for_stream(pdfWrite, unmanaged.toOpaque(),
                                                                PageGeometry.width, PageGeometry.height) else {
            throw CertificateError(stage: "creating the PDF surface", status: CAIRO_STATUS_NO_MEMORY)
        }
        defer { cairo_surface_destroy(surface) }
        try check(cairo_surface_status(surface), "creating the PDF surface")

        setMetadata(surface, content)

        guard let cr = cairo_create(surface) else {
            throw CertificateError(stage: "creating the drawing context", status: CAIRO_STATUS_NO_MEMORY)
        }
        var crAlive = true
        defer { if crAlive { cairo_destroy(cr) } }
        try check(cairo_status(cr), "creating the drawing context")

        let measurer = TextMeasurer(cr: cr, shared: .pdf)
        let (blocks, boxes) = CertificateLayout.build(measurer: measurer, content: content)
        let pages = Paginator.paginate(blocks)
        let painter = Painter(cr: cr, measurer: measurer, boxes: boxes)
        for (index, page) in pages.enumerated() {
            painter.drawPage(page, number: index + 1, of: pages.count, frame: PageFrame(content))
            cairo_show_page(cr)
            try check(cairo_status(cr), "drawing page \(index + 1)")
        }

        cairo_destroy(cr)
        crAlive = false
        cairo_surface_finish(surface)
        try check(cairo_surface_status(surface), "writing the PDF")
        return sink.data
    }

    static func check(_ status: cairo_status_t, _ stage: String) throws(CertificateError) {
        if status != CAIRO_STATUS_SUCCESS { throw CertificateError(stage: stage, status: status) }
    }

    private static func setMetadata(_ surface: OpaquePointer, _ content: CertificateContent) {
        let title = CertificateFormat.clean(content.title)
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_TITLE, title)
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_AUTHOR, "evidence")
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATOR, "evidence")
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_SUBJECT,
                                       CertificateFormat.clean("\(content.fileName) (SHA-256 \(content.sha256.hex))"))
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_KEYWORDS, "sha256:\(content.sha256.hex)")
        // ISO 8601 without fraction, as cairo expects; makes CreationDate follow the content.
        let created = String(Timestamp.string(content.generatedAt).prefix(19)) + "Z"
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATE_DATE, created)
    }
}

/// What every page repeats: the running header of continuation pages and the footer.
struct PageFrame {
    var continuedLeft: String
    var continuedRight: String
    var footerLeft: String

    init(continuedLeft: String, continuedRight: String, footerLeft: String) {
        self.continuedLeft = continuedLeft; self.continuedRight = continuedRight; self.footerLeft = footerLeft
    }

    init(_ content: CertificateContent) {
        continuedLeft = CertificateFormat.clean("\(content.title) · \(content.fileName)")
        continuedRight = "SHA-256 \(content.sha256.short)… · continued"
        footerLeft = "Generated \(Timestamp.string(content.generatedAt)) by evidence · item #\(content.itemID)"
    }
}

/// Hands a PNG's bytes to cairo's read callback.
final class PNGSource {
    let data: Data
    var offset = 0
    init(_ data: Data) { self.data = data }
}

let pngRead: cairo_read_func_t = { closure, buffer, length in
    guard let closure, let buffer else { return CAIRO_STATUS_READ_ERROR }
    let source = Unmanaged<PNGSource>.fromOpaque(closure).takeUnretainedValue()
    let n = Int(length)
    guard source.offset + n <= source.data.count else { return CAIRO_STATUS_READ_ERROR }
    source.data.copyBytes(to: buffer, from: source.offset..<(source.offset + n))
    source.offset += n
    return CAIRO_STATUS_SUCCESS
}

/// Receives the PDF bytes from cairo's write callback.
final class PDFSink {
    var data = Data()
}

let pdfWrite: cairo_write_func_t = { closure, bytes, length in
    guard let closure else { return CAIRO_STATUS_WRITE_ERROR }
    guard length > 0 else { return CAIRO_STATUS_SUCCESS }
    guard let bytes else { return CAIRO_STATUS_WRITE_ERROR }
    let sink = Unmanaged<PDFSink>.fromOpaque(closure).takeUnretainedValue()
    sink.data.append(bytes, count: Int(length))
    return CAIRO_STATUS_SUCCESS
}

/// Executes the layout's draw operations on the cairo context.
struct Painter {
    let cr: OpaquePointer
    let measurer: TextMeasurer
    let boxes: [Int: BoxStyle]

    func drawPage(_ placed: [Paginator.Placed], number: Int, of total: Int, frame: PageFrame) {
        cairo_set_source_rgb(cr, 1, 1, 1)
        cairo_paint(cr)
        drawBoxes(placed)
        for p in placed {
            for op in p.line.ops { draw(op, top: p.y) }
        }
        if number > 1 { continuationHeader(frame) }
        footer(number: number, of: total, frame: frame)
    }

    /// One background rectangle per run of consecutive lines sharing a box id.
    private func drawBoxes(_ placed: [Paginator.Placed]) {
        var i = 0
        while i < placed.count {
            guard let id = placed[i].line.boxID, let style = boxes[id] else { i += 1; continue }
            let top = placed[i].y
            var bottom = top + placed[i].line.height
            var j = i + 1
            while j < placed.count, placed[j].line.boxID == id {
                bottom = placed[j].y + placed[j].line.height
                j += 1
            }
            roundedRect(x: style.x0, y: top, w: style.x1 - style.x0, h: bottom - top, r: 4)
            if let fill = style.fill {
                set(fill)
                if style.stroke != nil { cairo_fill_preserve(cr) } else { cairo_fill(cr) }
            }
            if let stroke = style.stroke {
                set(stroke)
                cairo_set_line_width(cr, 0.75)
                cairo_stroke(cr)
            }
            cairo_new_path(cr)
            i = j
        }
    }

    private func draw(_ op: DrawOp, top: Double) {
        switch op {
        case let .text(string, x, baseline, font, color):
            text(string, x: x, y: top + baseline, font: font, color: color)
        case let .rule(x0, x1, y, width, color):
            set(color)
            cairo_set_line_width(cr, width)
            cairo_move_to(cr, x0, top + y)
            cairo_line_to(cr, x1, top + y)
            cairo_stroke(cr)
        case let .image(png, x, imageTop, width, height):
            image(png, x: x, y: top + imageTop, width: width, height: height)
        case let .badge(label, x, badgeTop, width, height, font, color, fill):
            roundedRect(x: x, y: top + badgeTop, w: width, h: height, r: height / 2)
            set(fill)
            cairo_fill(cr)
            let tw = measurer.width(label, font)
            text(label, x: x + (width - tw) / 2, y: top + badgeTop + height / 2 + font.size * 0.35,
                 font: font, color: color)
        }
    }

    /// A PNG (the poster frame), decoded by cairo from memory and scaled into its box. A PNG
    /// cairo cannot read is left out (the box stays empty): the picture is a courtesy.
    private func image(_ png: Data, x: Double, y: Double, width: Double, height: Double) {
        let source = PNGSource(png)
        let unmanaged = Unmanaged.passRetained(source)
        defer { unmanaged.release() }
        guard let surface = cairo_image_surface_create_from_png_stream(pngRead, unmanaged.toOpaque()) else { return }
        defer { cairo_surface_destroy(surface) }
        guard cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS else { return }
        let w = Double(cairo_image_surface_get_width(surface)), h = Double(cairo_image_surface_get_height(surface))
        guard w > 0, h > 0 else { return }
        cairo_save(cr)
        cairo_translate(cr, x, y)
        cairo_scale(cr, width / w, height / h)
        cairo_set_source_surface(cr, surface, 0, 0)
        cairo_paint(cr)
        cairo_restore(cr)
        set(Palette.rule)
        cairo_set_line_width(cr, 0.75)
        cairo_rectangle(cr, x, y, width, height)
        cairo_stroke(cr)
    }

    /// Real PDF text: `cairo_show_text` with a toy font face, so viewers and `pdftotext`
    /// can search and extract it. (No `cairo_tag_begin(… "Link" …)` hyperlinks: cairo 1.16.0
    /// then writes /StructParents that point at objects it never emits, and qpdf rejects the file.)
    private func text(_ s: String, x: Double, y: Double, font: FontSpec, color: RGB) {
        guard !s.isEmpty else { return }
        measurer.select(font)
        set(color)
        cairo_move_to(cr, x, y)
        cairo_show_text(cr, s)
    }

    private func continuationHeader(_ frame: PageFrame) {
        let font = FontSpec.sans(8)
        let right = frame.continuedRight
        let rw = measurer.width(right, font)
        let available = PageGeometry.contentWidth - rw - 16
        var left = frame.continuedLeft
        if measurer.width(left, font) > available {
            left = (measurer.wrap(left, font, width: available - measurer.width("…", font)).first ?? "") + "…"
        }
        let y = 50.0
        text(left, x: PageGeometry.left, y: y, font: font, color: Palette.muted)
        text(right, x: PageGeometry.right - rw, y: y, font: font, color: Palette.muted)
        rule(y: y + 8)
    }

    private func footer(number: Int, of total: Int, frame: PageFrame) {
        let font = FontSpec.sans(8)
        let y = PageGeometry.height - 36
        rule(y: y - 13)
        let left = frame.footerLeft
        let right = "Page \(number) of \(total)"
        let rw = measurer.width(right, font)
        text(left, x: PageGeometry.left, y: y, font: font, color: Palette.muted)
        text(right, x: PageGeometry.right - rw, y: y, font: font, color: Palette.muted)
    }

    private func rule(y: Double) {
        set(Palette.rule)
        cairo_set_line_width(cr, 0.5)
        cairo_move_to(cr, PageGeometry.left, y)
        cairo_line_to(cr, PageGeometry.right, y)
        cairo_stroke(cr)
    }

    private func set(_ c: RGB) { cairo_set_source_rgb(cr, c.r, c.g, c.b) }

    private func roundedRect(x: Double, y: Double, w: Double, h: Double, r: Double) {
        let r = min(r, w / 2, h / 2)
        cairo_new_sub_path(cr)
        cairo_arc(cr, x + w - r, y + r, r, -Double.pi / 2, 0)
        cairo_arc(cr, x + w - r, y + h - r, r, 0, Double.pi / 2)
        cairo_arc(cr, x + r, y + h - r, r, Double.pi / 2, Double.pi)
        cairo_arc(cr, x + r, y + r, r, Double.pi, 3 * Double.pi / 2)
        cairo_close_path(cr)
    }
}
