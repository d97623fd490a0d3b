import EvidenceSandbox
import Foundation
import Testing

@Suite("QED emulation: PDF certificates")
struct QEDCertificateTests {
    @Test("409 while pending, then a PDF that passes qpdf --check and whose text holds hash, slug, tx and block time")
    func certificate() async throws {
        try await withSandbox(["--pending-seconds", "3"]) { sandbox in
            let hash = randomHash()
            let created = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: hash))
            let slug = try #require(created.json?["slug"]?.stringValue)

            let early = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/\(slug)/pdf/")
            #expect(early.status == 409)
            #expect(early.json == .object([("detail", .string("Report is not confirmed yet."))]))

            let settled = try await waitForSettled(sandbox.baseURL, slug: slug)
            let txHash = try #require(settled["tx"]?["hash"]?.stringValue)
            let blockTime = try #require(settled["tx"]?["block_time"]?.stringValue)

            let pdf = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/\(slug)/pdf/",
                json: #"{"i18n":"en","address":"Evidence Unit\n1 Main Street","online_check":true,"logo_url":"https://example.org/logo.png"}"#)
            #expect(pdf.status == 200)
            #expect(pdf.header("Content-Type") == "application/pdf")
            #expect(pdf.body.starts(with: Data("%PDF-1.4".utf8)))

            let dir = try makeTemporaryDirectory("pdf")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let file = (dir as NSString).appendingPathComponent("certificate.pdf")
            try pdf.body.write(to: URL(fileURLWithPath: file))

            let check = try await runTool("qpdf", ["--check", file])
            #expect(check.status == 0, "qpdf --check: \(check.stdout) \(check.stderr)")
            #expect(check.stdout.contains("No syntax or stream encoding errors"))

            let text = try await runTool("pdftotext", ["-layout", file, "-"])
            #expect(text.status == 0)
            #expect(text.stdout.contains(hash))
            #expect(text.stdout.contains(slug))
            #expect(text.stdout.contains(txHash))
            #expect(text.stdout.contains(blockTime))
            #expect(text.stdout.contains("Evidence Unit"))
        }
    }

    @Test("an empty body is fine; a bad option type → 400 naming it")
    func options() async throws {
        try await withSandbox(["--pending-seconds", "0"]) { sandbox in
            let created = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: randomHash()))
            let slug = try #require(created.json?["slug"]?.stringValue)
            let plain = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/\(slug)/pdf/")
            #expect(plain.status == 200)
            let bad = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/\(slug)/pdf/", json: #"{"online_check":"maybe"}"#)
            #expect(bad.status == 400)
            #expect(bad.json == .object([("online_check", .array([.string("Must be a valid boolean.")]))]))
            let missing = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/nosuchreport/pdf/")
            #expect(missing.status == 404)
        }
    }

    @Test("i18n=de gives German labels")
    func german() async throws {
        try await withSandbox(["--pending-seconds", "0"]) { sandbox in
            let created = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: randomHash()))
            let slug = try #require(created.json?["slug"]?.stringValue)
            let pdf = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/\(slug)/pdf/", json: #"{"i18n":"de"}"#)
            let dir = try makeTemporaryDirectory("pdf")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let file = (dir as NSString).appendingPathComponent("de.pdf")
            try pdf.body.write(to: URL(fileURLWithPath: file))
            let text = try await runTool("pdftotext", [file, "-"])
            #expect(text.stdout.contains("Blockhöhe"))
            #expect(text.stdout.contains("Zertifikat"))
        }
    }
}
