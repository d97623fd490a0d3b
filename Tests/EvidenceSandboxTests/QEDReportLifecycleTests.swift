import EvidenceSandbox
import Foundation
import Testing

@Suite("QED emulation: report lifecycle")
struct QEDReportLifecycleTests {
    @Test("a created report is pending with tx.hash null, then confirmed with a full tx after --pending-seconds")
    func pendingThenConfirmed() async throws {
        try await withSandbox(["--pending-seconds", "3"]) { sandbox in
            let hash = randomHash()
            let created = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: hash))
            #expect(created.status == 201)
            let report = try #require(created.json)
            let slug = try #require(report["slug"]?.stringValue)
            #expect(slug.count == 12)
            #expect(report["status"] == .string("pending"))
            #expect(report["hash"] == .string(hash))
            #expect(report["name"] == .string("clip.mp4"))
            #expect(report["note"] == .string("bodycam"))
            #expect(report["meta_data"] == .object([("unit", .string("K-9"))]))
            #expect(report["original_created_at"] == .string("2026-05-01T12:34:56Z"))
            #expect(report["tx"] == .object([("hash", .null)]))
            guard case .array(let files)? = report["provable_files"], let file = files.first else {
                Issue.record("no provable_files in \(report)"); return
            }
            #expect(file["hash"] == .string(hash))
            #expect(file["file_name"] == .string("clip.mp4"))
            #expect(file["file"] == .null)
            #expect(file["slug"]?.stringValue?.count == 12)

            let immediately = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/\(slug)")
            #expect(immediately.json?["status"] == .string("pending"))

            let settled = try await waitForSettled(sandbox.baseURL, slug: slug)
            #expect(settled["status"] == .string("confirmed"))
            let tx = try #require(settled["tx"])
            let txHash = try #require(tx["hash"]?.stringValue)
            #expect(txHash.hasPrefix("0x") && txHash.count == 66)
            #expect(tx["data"] == .string("0x" + hash))
            if case .int(let height)? = tx["block_height"] { #expect(height > 0) } else { Issue.record("block_height: \(tx)") }
            #expect(tx["block_time"]?.stringValue?.hasSuffix("Z") == true)
            #expect(tx["explorer_url"] == .string("https://explorer.sandbox.invalid/tx/\(txHash)"))
            #expect(tx["network_name"] == .string("sandbox-chain"))
            #expect(tx["network_id"] == .int(999))
        }
    }

    @Test("a report whose name contains FAIL-ME ends failed, with a failure_reason")
    func failMe() async throws {
        try await withSandbox(["--pending-seconds", "0.5"]) { sandbox in
            let created = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/",
                                                 json: reportJSON(hash: randomHash(), name: "case-FAIL-ME.mp4"))
            let slug = try #require(created.json?["slug"]?.stringValue)
            #expect(created.json?["status"] == .string("pending"))
            let settled = try await waitForSettled(sandbox.baseURL, slug: slug)
            #expect(settled["status"] == .string("failed"))
            #expect(settled["failure_reason"]?.stringValue?.isEmpty == false)
            let pdf = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/\(slug)/pdf/")
            #expect(pdf.status == 409)
        }
    }

    @Test("an unknown slug → 404 Not found.")
    func unknownSlug() async throws {
        try await withSandbox { sandbox in
            let r = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/doesnotexist")
            #expect(r.status == 404)
            #expect(r.json == .object([("detail", .string("Not found."))]))
        }
    }

    @Test("search by hash lists that hash's reports, newest first, in DRF's paginated shape")
    func searchByHash() async throws {
        try await withSandbox { sandbox in
            let a = randomHash()
            let b = randomHash()
            var slugs: [String] = []
            for hash in [a, b, a] {
                let r = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: hash))
                slugs.append(try #require(r.json?["slug"]?.stringValue))
            }
            let found = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/?hash=\(a)")
            #expect(found.status == 200)
            let page = try #require(found.json)
            #expect(page["count"] == .int(2))
            #expect(page["next"] == .null)
            #expect(page["previous"] == .null)
            guard case .array(let results)? = page["results"] else { Issue.record("no results: \(page)"); return }
            #expect(results.map { $0["slug"] } == [.string(slugs[2]), .string(slugs[0])])

            let none = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/?hash=\(randomHash())")
            #expect(none.json?["count"] == .int(0))
            #expect(none.json?["results"] == .array([]))
        }
    }

    @Test("listing pages with page_size and page, with next and previous links")
    func pagination() async throws {
        try await withSandbox { sandbox in
            let hash = randomHash()
            for _ in 0..<3 {
                _ = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: reportJSON(hash: hash))
            }
            let first = try #require(try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/?hash=\(hash)&page_size=2").json)
            #expect(first["count"] == .int(3))
            #expect(first["next"]?.stringValue?.hasSuffix("/v1/reports/?hash=\(hash)&page_size=2&page=2") == true)
            let second = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/?hash=\(hash)&page_size=2&page=2")
            if case .array(let results)? = second.json?["results"] { #expect(results.count == 1) } else { Issue.record("\(second.text)") }
            #expect(second.json?["previous"]?.stringValue?.contains("page=") == false)
            let beyond = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/?hash=\(hash)&page_size=2&page=3")
            #expect(beyond.status == 404)
            #expect(beyond.json == .object([("detail", .string("Invalid page."))]))
        }
    }

    @Test("a method the endpoint does not allow → 405 with Allow")
    func methodNotAllowed() async throws {
        try await withSandbox { sandbox in
            let r = try await TestHTTP.qed("DELETE", sandbox.baseURL, "/v1/reports/abc")
            #expect(r.status == 405)
            #expect(r.json == .object([("detail", .string("Method \"DELETE\" not allowed."))]))
            #expect(r.header("Allow")?.contains("GET") == true)
        }
    }
}
