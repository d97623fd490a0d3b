import EvidenceSandbox
import Foundation
import Testing

@Suite("QED emulation: report validation")
struct QEDValidationTests {
    @Test("an empty object → 400 naming hash, provable_files and original_created_at as required")
    func requiredFields() async throws {
        try await withSandbox { sandbox in
            let r = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: "{}")
            #expect(r.status == 400)
            let required = JSONValue.array([.string("This field is required.")])
            #expect(r.json == .object([("hash", required), ("provable_files", required), ("original_created_at", required)]))
        }
    }

    @Test("each invalid field is named with its own message")
    func invalidFields() async throws {
        try await withSandbox { sandbox in
            let good = randomHash()
            let body = #"{"hash":"\#(good.uppercased())","provable_files":[{"hash":"\#(good)","file_name":"a.mp4"},{"hash":"zz"}],"original_created_at":"yesterday","email":"nobody"}"#
            let r = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: body)
            #expect(r.status == 400)
            let json = try #require(r.json)
            #expect(json["hash"] == .array([.string("Invalid SHA-256 hash.")]))
            #expect(json["provable_files"] == .array([
                .object([]),
                .object([("hash", .array([.string("Invalid SHA-256 hash.")])),
                         ("file_name", .array([.string("This field is required.")]))]),
            ]))
            #expect(json["original_created_at"]?.description.contains("Datetime has wrong format") == true)
            #expect(json["email"] == .array([.string("Enter a valid email address.")]))
        }
    }

    @Test("provable_files may be empty but not missing or a non-list; unknown fields are ignored")
    func provableFilesShape() async throws {
        try await withSandbox { sandbox in
            let hash = randomHash()
            let empty = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/",
                json: #"{"hash":"\#(hash)","provable_files":[],"original_created_at":"2026-01-02T03:04:05+01:00","colour":"blue"}"#)
            #expect(empty.status == 201)
            #expect(empty.json?["original_created_at"] == .string("2026-01-02T02:04:05Z"))
            let notList = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/",
                json: #"{"hash":"\#(hash)","provable_files":"a.mp4","original_created_at":"2026-01-02T03:04:05Z"}"#)
            #expect(notList.status == 400)
            #expect(notList.json == .object([("provable_files", .array([.string("Expected a list of items but got type \"str\".")]))]))
        }
    }

    @Test("malformed JSON → 400 JSON parse error; another content type → 415")
    func parseErrorsAndMediaType() async throws {
        try await withSandbox { sandbox in
            let bad = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: #"{"hash": "#)
            #expect(bad.status == 400)
            #expect(bad.json?["detail"]?.stringValue?.hasPrefix("JSON parse error - ") == true)

            let form = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: "hash=abc",
                                              extraHeaders: ["Content-Type": "text/plain"])
            #expect(form.status == 415)
            #expect(form.json == .object([("detail", .string("Unsupported media type \"text/plain\" in request."))]))

            let list = try await TestHTTP.qed("POST", sandbox.baseURL, "/v1/reports/", json: "[]")
            #expect(list.status == 400)
            #expect(list.json?["non_field_errors"] == .array([.string("Invalid data. Expected a dictionary, but got list.")]))
        }
    }
}
