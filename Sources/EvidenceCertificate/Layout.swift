import CCairo
import Foundation
import Synchronization

// A tiny flow layout: the certificate is built as blocks of fixed-height lines
// (measured with cairo's toy font API), then paginated, then drawn. Every line is
// narrower than the content area by construction, and the paginator never places
// a line below the content area, so nothing is drawn off the page.

struct RGB: Sendable, Equatable {
    var r: Double, g: Double, b: Double
    init(_ hex: UInt32) {
        r = Double((hex >> 16) & 0xff) / 255
        g = Double((hex >> 8) & 0xff) / 255
        b = Double(hex & 0xff) / 255
    }
}

enum Palette {
    static let ink = RGB(0x1f2328)
    static let body = RGB(0x343a40)
    static let muted = RGB(0x6a737d)
    static let accent = RGB(0x1b3a5c)
    static let rule = RGB(0xd0d7de)
    static let hairline = RGB(0xe6e9ed)
    static let boxFill = RGB(0xf6f8fa)
    static let codeFill = RGB(0xf1f3f5)
    static let link = RGB(0x0b5cad)
    static let good = RGB(0x1a7f37)
    static let goodFill = RGB(0xdafbe1)
    static let warn = RGB(0x9a6700)
    static let warnFill = RGB(0xfff4d4)
    static let bad = RGB(0xcf222e)
    static let badFill = RGB(0xffebe9)
    static let neutralFill = RGB(0xeaeef2)
}

struct FontSpec: Hashable, Sendable {
    enum Family: Hashable, Sendable { case sans, mono }
    var family: Family
    var bold: Bool = false
    var size: Double

    static func sans(_ size: Double, bold: Bool = false) -> FontSpec { FontSpec(family: .sans, bold: bold, size: size) }
    static func mono(_ size: Double, bold: Bool = false) -> FontSpec { FontSpec(family: .mono, bold: bold, size: size) }
}

/// A drawing operation; `y` values are relative to the top of its line.
enum DrawOp {
    case text(String, x: Double, baseline: Double, font: FontSpec, color: RGB)
    case rule(x0: Double, x1: Double, y: Double, width: Double, color: RGB)
    /// A filled rounded pill with centered text; `x` is the left edge.
    case badge(String, x: Double, top: Double, width: Double, height: Double, font: FontSpec, color: RGB, fill: RGB)
    /// A PNG picture scaled into the box (`x`, `top`, `width`, `height`), with a thin frame.
    case image(Data, x: Double, top: Double, width: Double, height: Double)
}

struct BoxStyle {
    var x0: Double
    var x1: Double
    var fill: RGB?
    var stroke: RGB?
}

struct Line {
    var height: Double
    var ops: [DrawOp] = []
    /// Lines sharing a box id get one background rectangle per page they land on.
    var boxID: Int? = nil
}

struct Block {
    var lines: [Line]
    /// Move the whole block to the next page if it does not fit but would fit on an empty page.
    var keepTogether: Bool
    var height: Double { lines.reduce(0) { $0 + $1.height } }
}

/// Measures text with the same cairo context (and font faces) used to draw it.
final class TextMeasurer {
    let cr: OpaquePointer
    let sansFamily: String
    let monoFamily: String
    /// Advances known, one table per font.
    private var tables: [FontSpec: AdvanceTable]
    /// Where advances measured on a PDF surface are kept for the next certificate (nil: this
    /// measurer's own only).
    private let shared: SharedAdvances?
    /// What this measurer asked cairo for, in order: kept in `shared` when it goes.
    private var measured: [(font: FontSpec, character: Character, advance: Double)] = []
    /// How many advances this measurer asked cairo for.
    var cairoMeasurements: Int { measured.count }

    /// `shared`: advances of earlier measurers on the same kind of surface, and where this
    /// one's are kept when it goes (`SharedAdvances.pdf` for every PDF surface).
    init(cr: OpaquePointer, shared: SharedAdvances? = nil) {
        self.cr = cr
        self.shared = shared
        sansFamily = "DejaVu Sans"
        let known = shared?.start()
        tables = known?.tables ?? [:]
        // fontconfig substitutes silently; if "DejaVu Sans Mono" resolves to a
        // proportional face, fall back to the generic monospace alias.
        let mono = known?.monoIsDejaVu ?? TextMeasurer.isMonospaced(cr: cr, family: "DejaVu Sans Mono")
        monoFamily = mono ? "DejaVu Sans Mono" : "Monospace"
    }

    deinit {
        shared?.keep(monoIsDejaVu: monoFamily == "DejaVu Sans Mono", measured: measured)
    }

    private static func isMonospaced(cr: OpaquePointer, family: String) -> Bool {
        cairo_select_font_face(cr, family, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL)
        cairo_set_font_size(cr, 10)
        func advance(_ s: String) -> Double {
            var e = cairo_text_extents_t()
            cairo_text_extents(cr, s, &e)
            return e.x_advance
        }
        let narrow = advance("iiiiiiiiii"), wide = advance("MMMMMMMMMM")
        return narrow > 0 && abs(narrow - wide) < 0.01
    }

    func family(_ font: FontSpec) -> String { font.family == .mono ? monoFamily : sansFamily }

    func select(_ font: FontSpec) {
        cairo_select_font_face(cr, family(font), CAIRO_FONT_SLANT_NORMAL,
                               font.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL)
        cairo_set_font_size(cr, font.size)
    }

    /// Advance of one character. The toy API maps characters to glyphs one by one
    /// (no kerning, no shaping), so a string's advance is the sum of these.
    func advance(_ c: Character, _ font: FontSpec) -> Double {
        if let a = tables[font]?.lookup(c) { return a }
        select(font)
        var e = cairo_text_extents_t()
        cairo_text_extents(cr, String(c), &e)
        let a = e.x_advance.isFinite ? max(0, e.x_advance) : 0
        tables[font, default: AdvanceTable()].store(c, a)
        measured.append((font, c, a))
        return a
    }

    func width(_ s: String, _ font: FontSpec) -> Double {
        if let w = tables[font]?.printableASCIIWidth(s) { return w }
        return s.reduce(0) { $0 + advance($1, font) }
    }

    /// Breaks `text` into lines no wider than `maxWidth`, after a space when possible,
    /// else between characters. Lossless: the lines concatenated give `text` back.
    func wrap(_ text: String, _ font: FontSpec, width maxWidth: Double) -> [String] {
        let chars = Array(text)
        guard !chars.isEmpty else { return [""] }
        let known = tables[font]
        let widths = chars.map { known?.lookup($0) ?? advance($0, font) }
        var lines: [String] = []
        var start = 0
        var lineWidth = 0.0
        var lastBreak: Int? = nil
        var i = 0
        while i < chars.count {
            let w = widths[i]
            // Spaces may hang past the edge: they are invisible.
            if chars[i] != " ", lineWidth + w > maxWidth, i > start {
                let cut = (lastBreak.map { $0 > start } ?? false) ? lastBreak! : i
                lines.append(String(chars[start..<cut]))
                start = cut
                lastBreak = nil
                lineWidth = widths[start..<i].reduce(0, +)
                continue  // re-check character i on the new line
            }
            lineWidth += w
            if chars[i] == " " { lastBreak = i + 1 }
            i += 1
        }
        if start < chars.count { lines.append(String(chars[start...])) }
        return lines
    }

    /// Largest font size from `preferred` down to `minSize` (in quarter points) at which
    /// `text` fits on one line; `preferred` if it does not fit even at `minSize` (it will wrap,
    /// and is better read at the normal size).
    func fittingSize(_ text: String, family: FontSpec.Family, bold: Bool = false,
                     preferred: Double, minSize: Double, width maxWidth: Double) -> Double {
        var size = preferred
        while size >= minSize {
            if width(text, FontSpec(family: family, bold: bold, size: size)) <= maxWidth { return size }
            size -= 0.25
        }
        return preferred
    }
}

/// The advances of one font: printable ASCII by index, anything else by character.
struct AdvanceTable: Sendable {
    /// Advances of U+0020…U+007E by code − 0x20; NaN where not measured yet.
    private var ascii = [Double](repeating: .nan, count: 95)
    private var other: [Character: Double] = [:]

    func lookup(_ c: Character) -> Double? {
        if let i = Self.index(c) { let a = ascii[i]; return a.isNaN ? nil : a }
        return other[c]
    }

    mutating func store(_ c: Character, _ a: Double) {
        if let i = Self.index(c) { ascii[i] = a } else { other[c] = a }
    }

    /// The width of `s` when it is printable ASCII only and every character is measured
    /// already; nil otherwise (then it is measured character by character).
    func printableASCIIWidth(_ s: String) -> Double? {
        var w = 0.0
        for b in s.utf8 {
            guard b >= 0x20, b < 0x7F else { return nil }
            let a = ascii[Int(b - 0x20)]
            if a.isNaN { return nil }
            w += a
        }
        return w
    }

    /// Characters other than printable ASCII a shared table holds at most: a character is
    /// any grapheme cluster (a letter with any run of combining marks), and file names choose
    /// them, so a long-running service must not keep every one it ever met.
    static let sharedOtherLimit = 4096

    /// Stores `a` in a shared table: ASCII always, anything else while there is room.
    mutating func share(_ c: Character, _ a: Double) {
        if Self.index(c) == nil, other[c] == nil, other.count >= Self.sharedOtherLimit { return }
        store(c, a)
    }

    var otherCount: Int { other.count }

    private static func index(_ c: Character) -> Int? {
        guard let v = c.asciiValue, v >= 0x20, v < 0x7F else { return nil }
        return Int(v - 0x20)
    }
}

/// Advances measured on PDF surfaces, kept for the process. Every PDF surface cairo makes has
/// the same font options (unhinted metrics), so a character's advance in a font is the same on
/// each: a certificate asks cairo only for characters no certificate before it used (its
/// layout measures every character of every line it places, in a dozen fonts).
final class SharedAdvances: Sendable {
    static let pdf = SharedAdvances()

    private let known = Mutex<(monoIsDejaVu: Bool?, tables: [FontSpec: AdvanceTable])>((nil, [:]))

    func start() -> (monoIsDejaVu: Bool?, tables: [FontSpec: AdvanceTable]) {
        known.withLock { $0 }
    }

    /// Adds what a measurer asked cairo for (bounded: `AdvanceTable.sharedOtherLimit`).
    func keep(monoIsDejaVu: Bool, measured: [(font: FontSpec, character: Character, advance: Double)]) {
        known.withLock { k in
            k.monoIsDejaVu = monoIsDejaVu
            for m in measured { k.tables[m.font, default: AdvanceTable()].share(m.character, m.advance) }
        }
    }

    /// Characters other than printable ASCII held for `font` (tests).
    func otherCount(_ font: FontSpec) -> Int { known.withLock { $0.tables[font]?.otherCount ?? 0 } }
}

/// Fixed page geometry (A4, points).
enum PageGeometry {
    static let width = 595.2756
    static let height = 841.8898
    static let marginX = 54.0
    static let firstTop = 54.0
    static let continuationTop = 84.0
    static let contentBottom = height - 66.0
    static let contentWidth = width - 2 * marginX
    static var left: Double { marginX }
    static var right: Double { width - marginX }
}

/// Places blocks' lines on pages.
struct Paginator {
    struct Placed { var y: Double; var line: Line }

    static func paginate(_ blocks: [Block]) -> [[Placed]] {
        var pages: [[Placed]] = [[]]
        var y = PageGeometry.firstTop
        func newPage() {
            pages.append([])
            y = PageGeometry.continuationTop
        }
        let fullPage = PageGeometry.contentBottom - PageGeometry.continuationTop
        for block in blocks {
            let h = block.height
            if block.keepTogether, h <= fullPage, y + h > PageGeometry.contentBottom, !pages[pages.count - 1].isEmpty {
                newPage()
            }
            for line in block.lines {
                if y + line.height > PageGeometry.contentBottom, !pages[pages.count - 1].isEmpty {
                    newPage()
                }
                pages[pages.count - 1].append(Placed(y: y, line: line))
                y += line.height
            }
        }
        return pages
    }
}

extension TextMeasurer {
    /// Runs `body` with a measurer on a throwaway vector surface (tests, previews).
    static func withScratch<T>(shared: SharedAdvances? = nil, _ body: (TextMeasurer) -> T) -> T {
        let surface = cairo_recording_surface_create(CAIRO_CONTENT_COLOR_ALPHA, nil)
        defer { cairo_surface_destroy(surface) }
        let cr = cairo_create(surface)!
        defer { cairo_destroy(cr) }
        // Match the PDF surface: unhinted metrics, so widths are the ones used when rendering.
        let options = cairo_font_options_create()
        cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF)
        cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE)
        cairo_set_font_options(cr, options)
        cairo_font_options_destroy(options)
        return body(TextMeasurer(cr: cr, shared: shared))
    }
}
