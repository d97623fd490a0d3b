import EvidenceArchive
import EvidenceHTTP
import EvidenceSandbox
import Foundation
import Testing

/// `stat` on Box asks the upload preflight (`OPTIONS /files/content`) instead of listing the
/// folder: its cost must not grow with the folder.
@Suite("Box: stat by the upload preflight")
struct BoxPreflightTests {
    /// Requests the sandbox logged since `from` lines, as "METHOD path" without the query.
    func requests(_ h: Harness, after from: Int) throws -> [String] {
        let log = try String(contentsOfFile: try #require(h.sandbox).stateDirectory + "/requests.log", encoding: .utf8)
        return log.split(separator: "\n").dropFirst(from).compactMap { line -> String? in
            guard let j = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let method = j["method"] as? String, let path = j["path"] as? String else { return nil }
            return method + " " + (path.split(separator: "?").first.map(String.init) ?? path)
        }
    }

    func logLines(_ h: Harness) throws -> Int {
        try String(contentsOfFile: try #require(h.sandbox).stateDirectory + "/requests.log", encoding: .utf8)
            .split(separator: "\n").count
    }

    @Test("a file found costs a preflight and one file read, a missing one a preflight alone; no folder listing, however full")
    func statWithoutListing() async throws {
        try await withProvider(.box) { h in
            let p = h.provider
            try await p.makeFolders("cam")
            for i in 0..<30 {
                let local = h.dir.file("clip\(i).bin", bytes: 100 + i)
                _ = try await p.upload(local: local, size: Int64(100 + i), hash: try hex(local, p.hashKind), to: "cam/clip\(i).bin", progress: nil)
            }
            var from = try logLines(h)
            let found = try #require(try await p.stat("cam/clip17.bin"))
            let expected = try hex(h.dir.path + "/clip17.bin", p.hashKind)
            #expect(found.size == 117 && found.hash == expected)
            let asked = try requests(h, after: from)
            #expect(asked.filter { $0.hasPrefix("OPTIONS ") && $0.hasSuffix("/box/api/2.0/files/content") }.count == 1, "\(asked)")
            #expect(asked.filter { $0.hasPrefix("GET ") && $0.contains("/box/api/2.0/files/") }.count == 1, "\(asked)")
            #expect(!asked.contains { $0.contains("/items") }, "listed the folder: \(asked)")

            from = try logLines(h)
            #expect(try await p.stat("cam/CLIP99.bin") == nil)
            let missing = try requests(h, after: from)
            #expect(missing.count == 1 && missing.first?.hasPrefix("OPTIONS ") == true, "\(missing)")

            // Box names are case-insensitive: the preflight finds the holder of another case.
            #expect(try await p.stat("cam/CLIP3.bin")?.size == 103)
            // A folder of that name is not a file.
            try await p.makeFolders("cam/sub")
            let error = await #expect(throws: ArchiveError.self) { _ = try await p.stat("cam/sub") }
            #expect(error?.kind == .conflict && error?.message.contains("is a folder") == true, "\(error?.message ?? "")")
        }
    }

    @Test("the emulated preflight: 200 with an upload URL, 409 naming the holder, 404 for a missing folder, 400 for a bad name or size")
    func emulatedPreflight() async throws {
        try await withProvider(.box) { h in
            try await h.provider.makeFolders("a")
            let local = h.dir.file("x.bin", bytes: 10)
            let stored = try await h.provider.upload(local: local, size: 10, hash: try hex(local, h.provider.hashKind), to: "a/x.bin", progress: nil)
            let session = try #require(h.session)
            let token = try await session.accessToken()
            let base = try #require(h.sandbox).baseURL.absoluteString + "/box/api/2.0"
            let folder = try await folderID(base, token: token, name: "a")
            func preflight(_ body: String) async throws -> HTTPResponse {
                try await httpClient().send(HTTPRequest(method: "OPTIONS", url: base + "/files/content",
                                                        headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                                        body: .data(Data(body.utf8))))
            }
            let free = try await preflight(#"{"name":"y.bin","parent":{"id":"\#(folder)"},"size":5}"#)
            #expect(free.status == 200 && String(decoding: free.body, as: UTF8.self).contains("/box/upload/api/2.0/files/content"))
            let taken = try await preflight(#"{"name":"X.BIN","parent":{"id":"\#(folder)"}}"#)
            let conflicts = ((try JSONSerialization.jsonObject(with: taken.body) as? [String: Any])?["context_info"] as? [String: Any])?["conflicts"] as? [String: Any]
            #expect(taken.status == 409 && conflicts?["id"] as? String == stored.id && conflicts?["type"] as? String == "file")
            #expect(try await preflight(#"{"name":"y.bin","parent":{"id":"999999"}}"#).status == 404)
            #expect(try await preflight(#"{"name":"a/b","parent":{"id":"\#(folder)"}}"#).status == 400)
            #expect(try await preflight(#"{"name":"y.bin","parent":{"id":"\#(folder)"},"size":"big"}"#).status == 400)
            let anonymous = try await httpClient().send(HTTPRequest(method: "OPTIONS", url: base + "/files/content", body: .data(Data("{}".utf8))))
            #expect(anonymous.status == 401)
        }
    }

    /// The id of folder `name` under the root, from a listing.
    func folderID(_ base: String, token: String, name: String) async throws -> String {
        let r = try await httpClient().send(HTTPRequest(url: base + "/folders/0/items?fields=name", headers: [("Authorization", "Bearer \(token)")]))
        let entries = (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["entries"] as? [[String: Any]] ?? []
        return try #require(entries.first { $0["name"] as? String == name }?["id"] as? String)
    }
}
