import Foundation

/// The PDF certificate `POST /v1/reports/<slug>/pdf` returns for a confirmed report: the
/// report's hash, slug, files and blockchain transaction on one A4 page (more if there are
/// many files). The same report and options always give the same bytes.
struct QEDCertificate {
    /// The request body's options, all optional as in QED.
    struct Options: Sendable {
        /// Language of the labels: `en` (default) or `de`; others fall back to English.
        var i18n: String = "en"
        /// Postal address printed under the title, lines separated by newlines.
        var address: String?
        /// Print a line telling readers where to check the report online.
        var onlineCheck: Bool = false
        /// Recorded on the certificate; the sandbox never fetches it.
        var logoURL: String?
    }

    let report: QEDReport
    let pendingSeconds: Double
    let options: Options

    private struct Labels {
        var title, subtitle, report, name, note, hash, originalCreated, registered, files, blockchain, transaction,
            blockHeight, blockTime, network, explorer, verify, logo, footer: String
    }

    private var labels: Labels {
        if options.i18n.lowercased().hasPrefix("de") {
            return Labels(title: "Zertifikat der Blockchain-Notarisierung",
                          subtitle: "Der folgende SHA-256-Hash wurde in einer Blockchain-Transaktion verankert.",
                          report: "Bericht", name: "Name", note: "Notiz", hash: "SHA-256-Hash",
                          originalCreated: "Erstellt am", registered: "Registriert am", files: "Dateien", blockchain: "Blockchain",
                          transaction: "Transaktions-Hash", blockHeight: "Blockh\u{F6}he", blockTime: "Blockzeit",
                          network: "Netzwerk", explorer: "Explorer", verify: "Online pr\u{FC}fen", logo: "Logo",
                          footer: "Ausgestellt von der QED-Emulation der evidence-sandbox \u{2014} keine echte Notarisierung.")
        }
        return Labels(title: "Certificate of Blockchain Notarization",
                      subtitle: "The SHA-256 hash below was anchored in a blockchain transaction.",
                      report: "Report", name: "Name", note: "Note", hash: "SHA-256 hash",
                      originalCreated: "Original created at", registered: "Registered at", files: "Files", blockchain: "Blockchain",
                      transaction: "Transaction hash", blockHeight: "Block height", blockTime: "Block time",
                      network: "Network", explorer: "Explorer", verify: "Verify online", logo: "Logo",
                      footer: "Issued by the evidence-sandbox QED emulation \u{2014} not a real notarization.")
    }

    func render() -> Data {
        let l = labels
        let blockTime = report.blockTime(pendingSeconds: pendingSeconds)
        var pdf = MinimalPDF(title: "\(l.title) \(report.slug)", creationDate: blockTime)
        let left = 50.0
        let valueX = 170.0
        let right = MinimalPDF.pageWidth - 50
        var y = MinimalPDF.pageHeight - 70

        func advance(_ dy: Double) {
            y -= dy
            if y < 60 {
                pdf.newPage()
                y = MinimalPDF.pageHeight - 60
            }
        }
        func line(_ text: String, x: Double = left, font: MinimalPDF.Font = .regular, size: Double = 10, gap: Double = 15) {
            pdf.add(.init(x: x, y: y, font: font, size: size, text: text))
            advance(gap)
        }
        func field(_ label: String, _ value: String, size: Double = 10) {
            pdf.add(.init(x: left, y: y, font: .bold, size: 9, text: label))
            if valueX + MinimalPDF.estimatedWidth(value, size: size) <= right {
                pdf.add(.init(x: valueX, y: y, font: .regular, size: size, text: value))
                advance(16)
            } else {
                // Too wide beside its label: give the value its own full-width line.
                advance(12)
                line(value, size: min(size, 8), gap: 16)
            }
        }

        line(l.title, font: .bold, size: 18, gap: 22)
        line(l.subtitle, size: 10, gap: 14)
        if let address = options.address, !address.isEmpty {
            for part in address.split(whereSeparator: \.isNewline) { line(String(part), size: 9, gap: 12) }
        }
        advance(14)
        field(l.report, report.slug)
        if !report.name.isEmpty { field(l.name, report.name) }
        if !report.note.isEmpty { field(l.note, report.note) }
        field(l.hash, report.hash, size: 9)
        field(l.originalCreated, QEDDateFormat.string(report.originalCreatedAt))
        field(l.registered, QEDDateFormat.string(report.createdAt))
        if !report.provableFiles.isEmpty {
            advance(6)
            line(l.files, font: .bold, size: 11, gap: 15)
            for file in report.provableFiles {
                line(file.fileName, size: 10, gap: 12)
                line(file.hash, x: left + 12, size: 9, gap: 15)
            }
        }
        advance(6)
        line(l.blockchain, font: .bold, size: 11, gap: 15)
        field(l.transaction, report.txHash, size: 9)
        field(l.blockHeight, String(report.blockHeight))
        field(l.blockTime, QEDDateFormat.string(blockTime))
        field(l.network, "\(QEDReport.networkName) (id \(QEDReport.networkID))")
        field(l.explorer, report.explorerURL, size: 8)
        if options.onlineCheck {
            field(l.verify, "https://sandbox.invalid/verify/\(report.slug)", size: 9)
        }
        if let logo = options.logoURL, !logo.isEmpty { field(l.logo, logo, size: 8) }
        advance(20)
        line(l.footer, size: 8)
        return pdf.render()
    }
}
