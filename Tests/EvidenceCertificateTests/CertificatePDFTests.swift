import EvidenceCertificate
import EvidenceCore
import Foundation
import Testing
import EvidenceTesting

/// Checks the rendered PDFs with the tools an auditor has: qpdf, pdfinfo, pdftotext, pdftoppm.
@Suite("Certificate PDF")
struct CertificatePDFTests {
    @Test("single page: valid, A4, metadata, all facts extractable as text")
    func singlePage() throws {
        let content = Samples.content
        let pdf = try RenderedPDF(content, keepAs: "single.pdf")
        #expect(pdf.data.starts(with: Data("%PDF-".utf8)))

        let check = pdf.qpdfCheck()
        #expect(check.status == 0, "qpdf --check: \(check.out) \(check.err)")

        let info = pdf.info()
        #expect(info["Pages"] == "1")
        #expect(info["Title"] == "Evidence certificate")
        #expect(info["Creator"] == "evidence")
        #expect(info["Author"] == "evidence")
        let size = (info["Page size"] ?? "").split(separator: " ")
        #expect(size.count >= 3 && Double(size[0]).map { $0.rounded() } == 595 && Double(size[2]).map { $0.rounded() } == 842,
                "page size: \(info["Page size"] ?? "none")")

        let text = pdf.text()
        let lines = text.split(separator: "\n").map(String.init)
        // The digest in one piece, on one line.
        #expect(lines.contains { $0.contains(content.sha256.hex) }, "SHA-256 not on one line:\n\(text)")
        #expect(squeezed(text).contains(content.sha256.hex))
        #expect(text.contains(content.fileName))
        #expect(text.contains("The file described below was stored under its SHA-256 and notarized as listed."))
        for proof in content.proofs {
            #expect(text.contains(proof.notary))
            #expect(text.contains(proof.status))
            #expect(text.contains(proof.reference), "reference \(proof.reference) missing")
            if let detail = proof.detail { #expect(squeezed(text).contains(squeezed(detail))) }
            if let link = proof.link { #expect(squeezed(text).contains(link)) }
        }
        #expect(text.contains("2026-03-14T09:22:03.500Z"), "proof time in UTC ISO 8601")
        for command in content.verifyCommands {
            #expect(lines.contains { $0.contains(command) }, "command not on one line: \(command)")
        }
        #expect(text.contains("48,213,771 bytes (46.0 MiB)"))
        #expect(text.contains("Item #42"))
        #expect(text.contains(content.mediaSummary!))
        #expect(text.contains(content.custodyHead!))
        #expect(text.contains("How to verify"))
        #expect(text.contains("Page 1 of 1"))
        #expect(text.contains("Generated 2026-03-14T11:00:00.000Z"))
    }

    @Test("40 proofs and 30 long commands flow onto several pages, all text intact, nothing off the page")
    func manyPages() throws {
        var content = Samples.content
        content.proofs = (0..<40).map { (i: Int) -> CertificateContent.Proof in
            let even = i % 2 == 0
            let pending = i % 3 == 0
            let time: Date? = pending ? nil : Date(timeIntervalSince1970: 1_773_480_000 + Double(i))
            let link: String? = even ? "https://explorer.example/tx/0x" + hexDigest(i) : nil
            return CertificateContent.Proof(
                notary: even ? "QED" : "RFC 3161 TSA", status: pending ? "pending" : "confirmed", time: time,
                reference: "0x" + hexDigest(i), detail: "network \(i) · block \(1000 + i)", link: link)
        }
        content.verifyCommands = (0..<30).map { (i: Int) -> String in
            let stem = "evidence/bodycam/2026/03/14/" + String(hexDigest(i + 100).prefix(8)) + "-clip-\(i).mp4"
            return "openssl ts -verify -data '\(stem)' -in '\(stem).tsr' "
                + "-CAfile /etc/evidence/tsa-ca.pem -untrusted /etc/evidence/tsa-chain.pem # check \(i)"
        }
        let pdf = try RenderedPDF(content, keepAs: "multi.pdf")
        let check = pdf.qpdfCheck()
        #expect(check.status == 0, "qpdf --check: \(check.out) \(check.err)")
        let pages = pdf.pageCount
        #expect(pages > 1)

        let text = pdf.text()
        let flat = squeezed(text)
        #expect(flat.contains(content.sha256.hex))
        for proof in content.proofs {
            #expect(text.contains(proof.reference), "reference \(proof.reference) missing")
        }
        for command in content.verifyCommands {
            #expect(flat.contains(squeezed(command)), "command missing: \(command)")
        }
        #expect(text.contains("Page \(pages) of \(pages)"))

        let images = pdf.grayPages()
        #expect(images.count == pages)
        for (i, image) in images.enumerated() {
            #expect(image.inkInBorder(points: 30) == 0, "page \(i + 1) has ink within 30 pt of the edge")
            #expect(image.inkFraction() > 0.001, "page \(i + 1) looks blank")
        }
    }

    @Test("non-ASCII file name renders and the PDF stays valid")
    func unicodeFileName() throws {
        var content = Samples.content
        content.fileName = "Überwachung 東京.mp4"
        content.title = "Beweiszertifikat – Überwachung"
        content.proofs[0].detail = "Réseau Polygon · 区块 51234567"
        let pdf = try RenderedPDF(content, keepAs: "unicode.pdf")
        let check = pdf.qpdfCheck()
        #expect(check.status == 0, "qpdf --check: \(check.out) \(check.err)")
        #expect(pdf.info()["Title"] == "Beweiszertifikat – Überwachung")
        let text = pdf.text()
        #expect(text.contains("Überwachung"))
        #expect(text.contains(content.sha256.hex))
        #expect(pdf.pageCount == 1)
    }

    @Test("single page renders to a PNG that is not blank and keeps its margins")
    func pngPreview() throws {
        let pdf = try RenderedPDF(Samples.content)
        let prefix = pdf.dir.path + "/preview"
        let r = tool(["pdftoppm", "-r", "60", "-png", "-singlefile", pdf.path, prefix], in: pdf.dir)
        #expect(r.status == 0, "pdftoppm: \(r.err)")
        let png = FileManager.default.contents(atPath: prefix + ".png") ?? Data()
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(png.count > 10_000, "PNG is only \(png.count) bytes")
        if let keep = ProcessInfo.processInfo.environment["EVIDENCE_CERT_SAMPLE_DIR"] {
            try? FileManager.default.removeItem(atPath: keep + "/certificate-sample.png")
            try? FileManager.default.copyItem(atPath: prefix + ".png", toPath: keep + "/certificate-sample.png")
        }

        let images = pdf.grayPages()
        try #require(images.count == 1)
        let page = images[0]
        #expect(abs(page.width - 496) <= 1 && abs(page.height - 702) <= 1, "A4 at 60 dpi, got \(page.width)×\(page.height)")
        let ink = page.inkFraction()
        #expect(ink > 0.01 && ink < 0.4, "ink fraction \(ink)")
        #expect(page.inkInBorder(points: 30) == 0)
        // The title sits in the top part of the page, the footer at the bottom.
        let topBand = (40..<70).reduce(0) { acc, y in acc + (0..<page.width).filter { page.pixel($0, y) < 200 }.count }
        let footerBand = (page.height - 40..<page.height - 25).reduce(0) { acc, y in
            acc + (0..<page.width).filter { page.pixel($0, y) < 230 }.count
        }
        #expect(topBand > 100, "no title ink near the top")
        #expect(footerBand > 20, "no footer ink near the bottom")
    }

    @Test("same content renders to the same document text every time")
    func repeatable() throws {
        let a = try RenderedPDF(Samples.content)
        let b = try RenderedPDF(Samples.content)
        #expect(a.qpdfCheck().status == 0)
        #expect(b.qpdfCheck().status == 0)
        #expect(a.pageCount == b.pageCount)
        #expect(a.text(layout: true) == b.text(layout: true))
        #expect(a.info()["CreationDate"] == b.info()["CreationDate"])
    }

    @Test("hostile strings: control characters, huge unbroken names, empty fields")
    func hostileStrings() throws {
        let longName = String(repeating: "VeryLongCameraExportName_", count: 20) + ".mov"
        var content = Samples.content
        content.fileName = "a\u{0}b\nc\td\u{7}e\u{202E}4pm.exe " + longName
        content.size = -1
        content.mediaSummary = "unreadable media (Invalid data found when processing input)"
        content.dateTaken = nil
        content.custodyHead = nil
        content.proofs = [
            .init(notary: "", status: "", reference: ""),
            .init(notary: String(repeating: "Notary ", count: 30), status: String(repeating: "x", count: 200),
                  reference: String(repeating: "f", count: 400), link: "javascript:alert('x')"),
        ]
        content.verifyCommands = ["", String(repeating: "z", count: 900), "echo 'it''s' \\ \"quoted\" (parens) % ok"]
        let pdf = try RenderedPDF(content, keepAs: "hostile.pdf")
        let check = pdf.qpdfCheck()
        #expect(check.status == 0, "qpdf --check: \(check.out) \(check.err)")
        let text = pdf.text()
        let flat = squeezed(text)
        #expect(flat.contains(squeezed(longName)))
        #expect(flat.contains(String(repeating: "f", count: 400)))
        #expect(flat.contains(String(repeating: "x", count: 200)), "a status too long for its badge is shown in full")
        #expect(flat.contains("javascript:alert('x')"))
        #expect(flat.contains(String(repeating: "z", count: 900)))
        #expect(flat.contains(squeezed("echo 'it''s' \\ \"quoted\" (parens) % ok")))
        #expect(text.contains("not recorded"))
        for (i, image) in pdf.grayPages().enumerated() {
            #expect(image.inkInBorder(points: 30) == 0, "page \(i + 1) has ink within 30 pt of the edge")
        }
    }

    @Test("concurrent renders (as the job workers do) are each valid")
    func concurrent() async throws {
        let results = await withTaskGroup(of: Result<Data, CertificateError>.self) { group in
            for i in 0..<8 {
                group.addTask {
                    var content = Samples.content
                    content.itemID = Int64(i)
                    content.fileName = "clip-\(i).mp4"
                    return Result { () throws(CertificateError) -> Data in try CertificateRenderer.render(content) }
                }
            }
            var all: [Result<Data, CertificateError>] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.count == 8)
        let dir = TempDir()
        for (i, result) in results.enumerated() {
            let data = try result.get()
            let path = dir.write("c\(i).pdf", data)
            let check = tool(["qpdf", "--check", path], in: dir)
            #expect(check.status == 0, "qpdf --check: \(check.out) \(check.err)")
        }
    }

    @Test("no proofs and no commands still make a complete certificate")
    func emptySections() throws {
        var content = Samples.content
        content.proofs = []
        content.verifyCommands = []
        let pdf = try RenderedPDF(content)
        #expect(pdf.qpdfCheck().status == 0)
        let text = pdf.text()
        #expect(text.contains("No proofs recorded yet."))
        #expect(text.contains("How to verify"))
        #expect(text.contains(content.sha256.hex))
    }
}
