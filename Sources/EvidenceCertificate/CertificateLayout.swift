import Foundation

/// Turns `CertificateContent` into blocks of measured lines.
struct CertificateLayout: BlockBuilding {
    let m: TextMeasurer
    let content: CertificateContent
    var blocks: [Block] = []
    var pendingHeading: [Line] = []
    var nextBoxID = 0
    var boxStyles: [Int: BoxStyle] = [:]

    static let statement = "The file described below was stored under its SHA-256 and notarized as listed."

    // Type scale
    static let titleFont = FontSpec.sans(20, bold: true)
    static let bodyFont = FontSpec.sans(10.5)
    static let headingFont = FontSpec.sans(12.5, bold: true)
    static let labelFont = FontSpec.sans(8.5, bold: true)
    static let valueFont = FontSpec.sans(10)
    static let monoValueFont = FontSpec.mono(9)
    static let commandFont = FontSpec.mono(8.5)
    static let smallFont = FontSpec.sans(8)
    static let labelWidth = 104.0

    init(measurer: TextMeasurer, content: CertificateContent) {
        self.m = measurer
        self.content = content
    }

    static func build(measurer: TextMeasurer, content: CertificateContent) -> (blocks: [Block], boxes: [Int: BoxStyle]) {
        var layout = CertificateLayout(measurer: measurer, content: content)
        layout.buildAll()
        return (layout.blocks, layout.boxStyles)
    }

    // MARK: - Sections

    private mutating func buildAll() {
        titleBlock()
        recordSection()
        posterSection()
        fileSection()
        proofsSection()
        verifySection()
        custodyLine()
    }

    private mutating func titleBlock() {
        titleBlock(title: content.title, tag: "Item #\(content.itemID)", statement: Self.statement)
    }

    /// Who issued the record and what it is about, as the rule or the device's sidecar said.
    private mutating func recordSection() {
        guard !content.labels.isEmpty else { return }
        heading("Record")
        for l in content.labels { keyValue(l.title, l.value) }
        spacer(14)
    }

    /// The poster frame: one picture of the recording, at most 240 × 180 pt, its shape kept.
    private mutating func posterSection() {
        guard let p = content.poster, p.width > 0, p.height > 0 else { return }
        heading("Recording")
        let scale = min(240 / Double(p.width), 180 / Double(p.height))
        let w = Double(p.width) * scale, h = Double(p.height) * scale
        var lines = [Line(height: h + 6, ops: [.image(p.png, x: PageGeometry.left, top: 2, width: w, height: h)])]
        lines.append(Line(height: 13, ops: [.text("Poster frame: the first picture decoded from the file (\(p.width)×\(p.height))",
                                                  x: PageGeometry.left, baseline: 10, font: Self.smallFont, color: Palette.muted)]))
        addBlock(lines, keepTogether: true)
        spacer(10)
    }

    private mutating func fileSection() {
        heading("File")
        let c = content
        keyValue("File name", c.fileName, font: FontSpec.sans(10, bold: true))
        keyValue("Size", CertificateFormat.size(c.size))
        hashRow("SHA-256", c.sha256.hex)
        for d in c.otherDigests { hashRow(d.title, d.value) }
        keyValue("Date taken", c.dateTaken.map { c.timezone.both($0) } ?? "not recorded",
                 color: c.dateTaken == nil ? Palette.muted : Palette.ink)
        keyValue("Ingested", c.timezone.both(c.ingestedAt))
        keyValue("Item ID", String(c.itemID))
        keyValue("Media", c.mediaSummary ?? "—", color: c.mediaSummary == nil ? Palette.muted : Palette.ink)
        spacer(14)
    }

    private mutating func proofsSection() {
        heading("Proofs")
        if content.proofs.isEmpty {
            paragraph("No proofs recorded yet.", color: Palette.muted)
            spacer(10)
            return
        }
        for (index, proof) in content.proofs.enumerated() {
            proofBlock(proof, number: index + 1)
            spacer(8)
        }
        spacer(6)
    }

    private mutating func verifySection() {
        heading("How to verify")
        // The introduction stays with the heading and the first command.
        pendingHeading += m.wrap("These commands check the file and its proofs with standard tools, without this software:",
                                 Self.bodyFont, width: PageGeometry.contentWidth).map {
            Line(height: 15, ops: [.text($0, x: PageGeometry.left, baseline: 11.5, font: Self.bodyFont, color: Palette.body)])
        }
        pendingHeading.append(Line(height: 4))
        if content.verifyCommands.allSatisfy({ $0.allSatisfy(\.isWhitespace) }) {
            paragraph("No verification commands listed.", color: Palette.muted)
            return
        }
        let box = newBox()
        let pad = 10.0
        let x0 = PageGeometry.left, x1 = PageGeometry.right
        let style = BoxStyle(x0: x0, x1: x1, fill: Palette.codeFill, stroke: Palette.rule)
        boxStyles[box] = style
        let font = Self.commandFont
        let prompt = "$ "
        let promptWidth = m.width(prompt, font)
        let textX = x0 + pad + promptWidth
        let textWidth = x1 - pad - textX
        let lineHeight = 12.0
        var first = true
        for command in content.verifyCommands where !command.allSatisfy(\.isWhitespace) {
            let wrapped = m.wrap(CertificateFormat.clean(command), font, width: textWidth)
            var lines: [Line] = []
            if first { lines.append(Line(height: pad - 2, boxID: box)) }
            for (i, text) in wrapped.enumerated() {
                var ops: [DrawOp] = []
                if i == 0 { ops.append(.text("$", x: x0 + pad, baseline: 9, font: font, color: Palette.muted)) }
                ops.append(.text(text, x: textX, baseline: 9, font: font, color: Palette.ink))
                lines.append(Line(height: lineHeight, ops: ops, boxID: box))
            }
            lines.append(Line(height: 3, boxID: box))
            addBlock(lines, keepTogether: true)
            first = false
        }
        blocks[blocks.count - 1].lines.append(Line(height: pad - 3, boxID: box))
        spacer(12)
        for note in content.verifyNotes where !note.allSatisfy(\.isWhitespace) {
            paragraph(CertificateFormat.clean(note), color: Palette.body)
            spacer(4)
        }
    }

    private mutating func custodyLine() {
        guard let head = content.custodyHead, !head.isEmpty else { return }
        let label = "Custody log head: "
        let labelFont = FontSpec.sans(7.5)
        let font = FontSpec.mono(7.5)
        let lw = m.width(label, labelFont)
        var lines: [Line] = []
        for (i, text) in m.wrap(CertificateFormat.clean(head), font, width: PageGeometry.contentWidth - lw).enumerated() {
            var ops: [DrawOp] = []
            if i == 0 { ops.append(.text(label, x: PageGeometry.left, baseline: 8, font: labelFont, color: Palette.muted)) }
            ops.append(.text(text, x: PageGeometry.left + lw, baseline: 8, font: font, color: Palette.muted))
            lines.append(Line(height: 10.5, ops: ops))
        }
        addBlock(lines, keepTogether: true)
    }

    // MARK: - Proof block

    private mutating func proofBlock(_ proof: CertificateContent.Proof, number: Int) {
        let box = newBox()
        let x0 = PageGeometry.left, x1 = PageGeometry.right
        boxStyles[box] = BoxStyle(x0: x0, x1: x1, fill: Palette.boxFill, stroke: Palette.rule)
        let pad = 10.0
        var lines: [Line] = [Line(height: pad - 2, boxID: box)]

        // Header: "1  QED" ........ [confirmed]
        let status = CertificateFormat.clean(proof.status)
        let badgeFont = FontSpec.sans(8, bold: true)
        let (fg, bg) = Self.statusColors(status)
        let badgeText = status.isEmpty ? "unknown" : status
        let badgeWidth = min(m.width(badgeText, badgeFont) + 14, 160)
        let badgeLabel = m.wrap(badgeText, badgeFont, width: badgeWidth - 14).first ?? badgeText
        let numberText = "\(number)"
        let numberFont = FontSpec.sans(9, bold: true)
        let nameFont = FontSpec.sans(11, bold: true)
        let nameX = x0 + pad + max(16, m.width(numberText, numberFont) + 8)
        let names = m.wrap(CertificateFormat.clean(proof.notary), nameFont, width: x1 - pad - badgeWidth - 12 - nameX)
        for (i, text) in names.enumerated() {
            var ops: [DrawOp] = [.text(text, x: nameX, baseline: 13, font: nameFont, color: Palette.ink)]
            if i == 0 {
                ops.append(.text(numberText, x: x0 + pad, baseline: 13, font: numberFont, color: Palette.muted))
                ops.append(.badge(badgeLabel, x: x1 - pad - badgeWidth, top: 2, width: badgeWidth, height: 14,
                                  font: badgeFont, color: fg, fill: bg))
            }
            lines.append(Line(height: 18, ops: ops, boxID: box))
        }
        lines.append(Line(height: 4, ops: [.rule(x0: x0 + pad, x1: x1 - pad, y: 2, width: 0.5, color: Palette.rule)],
                          boxID: box))

        let labelX = x0 + pad, valueX = x0 + pad + 78, valueWidth = x1 - pad - valueX
        func row(_ label: String, _ value: String, font: FontSpec, color: RGB = Palette.ink) {
            let wrapped = m.wrap(CertificateFormat.clean(value), font, width: valueWidth)
            let lh = max(13, font.size * 1.35)
            for (i, text) in wrapped.enumerated() {
                var ops: [DrawOp] = []
                let baseline = lh * 0.5 + font.size * 0.36 + 1
                if i == 0 {
                    ops.append(.text(label, x: labelX, baseline: baseline, font: Self.labelFont, color: Palette.muted))
                }
                ops.append(.text(text, x: valueX, baseline: baseline, font: font, color: color))
                lines.append(Line(height: lh, ops: ops, boxID: box))
            }
        }
        if badgeLabel != badgeText { row("Status", badgeText, font: FontSpec.sans(9.5)) }
        if content.timezone == .utc {
            row("Time (UTC)", CertificateFormat.time(proof.time), font: FontSpec.mono(9))
        } else {
            row("Time", proof.time.map { content.timezone.both($0) } ?? "—", font: FontSpec.sans(9.5))
        }
        // Hashes and URLs read best unbroken: shrink a little before wrapping.
        let reference = proof.reference.isEmpty ? "—" : CertificateFormat.clean(proof.reference)
        let referenceSize = m.fittingSize(reference, family: .mono, preferred: 8.5, minSize: 7, width: valueWidth)
        row("Reference", reference, font: FontSpec.mono(referenceSize))
        if let detail = proof.detail, !detail.isEmpty { row("Detail", detail, font: FontSpec.sans(9.5)) }
        if let link = proof.link, !link.isEmpty {
            let clean = CertificateFormat.clean(link)
            let size = m.fittingSize(clean, family: .sans, preferred: 9, minSize: 7.5, width: valueWidth)
            row("Link", clean, font: FontSpec.sans(size), color: Palette.link)
        }
        lines.append(Line(height: pad - 2, boxID: box))
        addBlock(lines, keepTogether: true)
    }

    static func statusColors(_ status: String) -> (RGB, RGB) {
        switch status.lowercased() {
        case "confirmed", "verified", "granted", "ok", "valid": return (Palette.good, Palette.goodFill)
        case "pending", "submitted", "waiting": return (Palette.warn, Palette.warnFill)
        case "failed", "rejected", "invalid", "error": return (Palette.bad, Palette.badFill)
        default: return (Palette.body, Palette.neutralFill)
        }
    }
}

/// The measured blocks of a page-flowed document, and the helpers that make them: the
/// certificate's layout and the generic documents' (disclosure index, declaration) share them.
protocol BlockBuilding {
    var m: TextMeasurer { get }
    var blocks: [Block] { get set }
    var pendingHeading: [Line] { get set }
    var nextBoxID: Int { get set }
    var boxStyles: [Int: BoxStyle] { get set }
}

extension BlockBuilding {

    /// The title (wrapped beside `tag`, right-aligned), an accent rule and the statement under it.
    mutating func titleBlock(title: String, tag: String, statement: String) {
        let left = PageGeometry.left, right = PageGeometry.right
        let tag = CertificateFormat.clean(tag)
        let tagFont = FontSpec.sans(10, bold: true)
        let tagWidth = m.width(tag, tagFont)
        let titleFont = CertificateLayout.titleFont, bodyFont = CertificateLayout.bodyFont
        var lines: [Line] = []
        for (i, text) in m.wrap(CertificateFormat.clean(title), titleFont, width: PageGeometry.contentWidth - tagWidth - 16).enumerated() {
            var ops: [DrawOp] = [.text(text, x: left, baseline: 21, font: titleFont, color: Palette.accent)]
            if i == 0 { ops.append(.text(tag, x: right - tagWidth, baseline: 21, font: tagFont, color: Palette.muted)) }
            lines.append(Line(height: 27, ops: ops))
        }
        lines.append(Line(height: 14, ops: [.rule(x0: left, x1: right, y: 7, width: 1.5, color: Palette.accent)]))
        for text in m.wrap(CertificateFormat.clean(statement), bodyFont, width: PageGeometry.contentWidth) {
            lines.append(Line(height: 15, ops: [.text(text, x: left, baseline: 11.5, font: bodyFont, color: Palette.body)]))
        }
        lines.append(Line(height: 8))
        blocks.append(Block(lines: lines, keepTogether: true))
    }

    mutating func newBox() -> Int {
        nextBoxID += 1
        return nextBoxID
    }

    mutating func addBlock(_ lines: [Line], keepTogether: Bool) {
        // A heading stays with whatever follows it.
        if !pendingHeading.isEmpty {
            blocks.append(Block(lines: pendingHeading + lines, keepTogether: true))
            pendingHeading = []
        } else {
            blocks.append(Block(lines: lines, keepTogether: keepTogether))
        }
    }

    mutating func heading(_ text: String) {
        pendingHeading = [
            Line(height: 20, ops: [.text(text, x: PageGeometry.left, baseline: 14, font: CertificateLayout.headingFont, color: Palette.accent)]),
            Line(height: 8, ops: [.rule(x0: PageGeometry.left, x1: PageGeometry.right, y: 2, width: 0.75, color: Palette.rule)]),
        ]
    }

    mutating func spacer(_ h: Double) {
        blocks.append(Block(lines: [Line(height: h)], keepTogether: false))
    }

    mutating func paragraph(_ text: String, color: RGB) {
        let lines = m.wrap(text, CertificateLayout.bodyFont, width: PageGeometry.contentWidth).map {
            Line(height: 15, ops: [.text($0, x: PageGeometry.left, baseline: 11.5, font: CertificateLayout.bodyFont, color: color)])
        }
        addBlock(lines, keepTogether: true)
    }


    mutating func keyValue(_ label: String, _ value: String, font: FontSpec = CertificateLayout.valueFont, color: RGB = Palette.ink) {
        let valueX = PageGeometry.left + CertificateLayout.labelWidth
        let wrapped = m.wrap(CertificateFormat.clean(value), font, width: PageGeometry.right - valueX)
        row(label: label, values: wrapped, font: font, color: color)
    }

    /// The digest must come out of `pdftotext` in one piece: pick a monospace size at
    /// which it fits the value column, and only wrap if even the smallest size does not.
    mutating func hashRow(_ label: String, _ hex: String) {
        let valueX = PageGeometry.left + CertificateLayout.labelWidth
        let width = PageGeometry.right - valueX
        let size = m.fittingSize(hex, family: .mono, preferred: 9.5, minSize: 6.5, width: width)
        let font = FontSpec.mono(size)
        row(label: label, values: m.wrap(hex, font, width: width), font: font, color: Palette.ink)
    }

    mutating func row(label: String, values: [String], font: FontSpec, color: RGB) {
        let valueX = PageGeometry.left + CertificateLayout.labelWidth
        let padTop = 5.0, padBottom = 5.0
        let lh = 14.0
        var lines: [Line] = []
        for (i, text) in values.enumerated() {
            let top = i == 0 ? padTop : 0
            let baseline = top + 10.5
            var ops: [DrawOp] = []
            if i == 0 {
                ops.append(.text(label, x: PageGeometry.left, baseline: baseline, font: CertificateLayout.labelFont, color: Palette.muted))
            }
            ops.append(.text(text, x: valueX, baseline: baseline, font: font, color: color))
            lines.append(Line(height: lh + top, ops: ops))
        }
        lines.append(Line(height: padBottom, ops: [.rule(x0: PageGeometry.left, x1: PageGeometry.right, y: padBottom - 0.5,
                                                           width: 0.5, color: Palette.hairline)]))
        addBlock(lines, keepTogether: true)
    }
}
