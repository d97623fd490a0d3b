import EvidenceSandbox
import Foundation
import Testing

/// The requests rclone's dropbox, box and sharefile backends send, one behaviour each, as the
/// real services answer them (EvidencePeerTests runs rclone itself against the sandbox).
@Suite("The emulations answer what rclone's backends send")
struct IndependentClientWireTests {
    static let mib = 1024 * 1024

    // MARK: Dropbox

    @Test("Dropbox: a sequential upload session takes pieces of any length, and content_hash is the whole file's")
    func dropboxUnalignedSequentialPieces() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let data = testBytes(5 * Self.mib / 2 + 7, seed: 21)  // rclone with chunk_size = 1Mi: 1 MiB, 1 MiB, the rest
            let start = try await dbx.content("files/upload_session/start", arg: #"{"close":false}"#, body: data.subdata(in: 0..<Self.mib))
            #expect(start.status == 200, "\(start.text)")
            let session = try #require(start.json?["session_id"]?.stringValue)
            let append = try await dbx.content("files/upload_session/append_v2",
                                               arg: #"{"cursor":{"session_id":"\#(session)","offset":\#(Self.mib)},"close":true}"#,
                                               body: data.subdata(in: Self.mib..<data.count))
            #expect(append.status == 200, "\(append.text)")
            let finish = try await dbx.content("files/upload_session/finish",
                                               arg: #"{"cursor":{"session_id":"\#(session)","offset":\#(data.count)},"commit":{"path":"/r/a.bin","mode":"add"}}"#)
            #expect(finish.status == 200, "\(finish.text)")
            #expect(finish.json?["content_hash"] == .string(try await dropboxHashWithOpenSSL(data)))
            #expect(finish.json?["size"] == .int(Int64(data.count)))
        }
    }

    @Test("Dropbox: a concurrent upload session refuses a piece that is not a 4 MiB multiple (409 concurrent_session_invalid_data_size)")
    func dropboxConcurrentSessionAlignment() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let start = try await dbx.content("files/upload_session/start", arg: #"{"close":false,"session_type":"concurrent"}"#)
            let session = try #require(start.json?["session_id"]?.stringValue)
            let append = try await dbx.content("files/upload_session/append_v2",
                                               arg: #"{"cursor":{"session_id":"\#(session)","offset":0},"close":false}"#,
                                               body: testBytes(Self.mib, seed: 3))
            #expect(append.status == 409)
            #expect(append.json?["error"]?[".tag"] == .string("concurrent_session_invalid_data_size"))
        }
    }

    @Test("Dropbox: a concurrent upload session starts open and empty (409 concurrent_session_data_not_allowed, concurrent_session_close_not_allowed)")
    func dropboxConcurrentSessionStart() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let data = try await dbx.content("files/upload_session/start", arg: #"{"close":false,"session_type":"concurrent"}"#,
                                             body: testBytes(4 * Self.mib, seed: 4))
            #expect(data.status == 409)
            #expect(data.text == #"{"error_summary":"concurrent_session_data_not_allowed/..","error":{".tag":"concurrent_session_data_not_allowed"}}"#)
            let closed = try await dbx.content("files/upload_session/start", arg: #"{"close":true,"session_type":"concurrent"}"#)
            #expect(closed.status == 409)
            #expect(closed.json?["error"]?[".tag"] == .string("concurrent_session_close_not_allowed"))
        }
    }

    @Test("Dropbox: list_folder answers tagged entries with content_hash, at most `limit`; list_folder/continue follows the cursor")
    func dropboxListFolder() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            for name in ["a", "b", "c"] {
                let r = try await dbx.content("files/upload", arg: #"{"path":"/list/\#(name).bin","mode":"add"}"#, body: testBytes(100, seed: 9))
                #expect(r.status == 200)
            }
            let first = try await dbx.rpc("files/list_folder", #"{"path":"/list","limit":2}"#)
            #expect(first.status == 200, "\(first.text)")
            guard case .array(let page1)? = first.json?["entries"] else { Issue.record("no entries: \(first.text)"); return }
            #expect(page1.count == 2)
            #expect(first.json?["has_more"] == .bool(true))
            #expect(page1.first?[".tag"] == .string("file"))
            #expect(page1.first?["content_hash"] == .string(try await dropboxHashWithOpenSSL(testBytes(100, seed: 9))))
            let cursor = try #require(first.json?["cursor"]?.stringValue)
            let next = try await dbx.rpc("files/list_folder/continue", #"{"cursor":"\#(cursor)"}"#)
            guard case .array(let page2)? = next.json?["entries"] else { Issue.record("no entries: \(next.text)"); return }
            #expect(page2.map { $0["name"] } == [.string("c.bin")])
            #expect(next.json?["has_more"] == .bool(false))
            let root = try await dbx.rpc("files/list_folder", #"{"path":""}"#)
            #expect(root.json?["entries"]?[0]?["name"] == .string("list"))
            let missing = try await dbx.rpc("files/list_folder", #"{"path":"/nope"}"#)
            #expect(missing.status == 409)
            #expect(missing.json?["error_summary"]?.stringValue?.hasPrefix("path/not_found/") == true)
        }
    }

    @Test("Dropbox: finish_batch_v2 commits closed sessions, answering each entry in order; an open session fails not_closed")
    func dropboxFinishBatch() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let data = testBytes(3000, seed: 5)
            let closed = try #require(try await dbx.content("files/upload_session/start", arg: #"{"close":true}"#, body: data).json?["session_id"]?.stringValue)
            let open = try #require(try await dbx.content("files/upload_session/start", arg: #"{"close":false}"#, body: data).json?["session_id"]?.stringValue)
            let batch = try await dbx.rpc("files/upload_session/finish_batch_v2", """
                {"entries":[{"cursor":{"session_id":"\(closed)","offset":3000},"commit":{"path":"/batch/one.bin","mode":"overwrite"}},
                            {"cursor":{"session_id":"\(open)","offset":3000},"commit":{"path":"/batch/two.bin","mode":"overwrite"}}]}
                """)
            #expect(batch.status == 200, "\(batch.text)")
            #expect(batch.json?["entries"]?[0]?[".tag"] == .string("success"))
            #expect(batch.json?["entries"]?[0]?["path_display"] == .string("/batch/one.bin"))
            #expect(batch.json?["entries"]?[0]?["content_hash"] == .string(try await dropboxHashWithOpenSSL(data)))
            #expect(batch.json?["entries"]?[1]?[".tag"] == .string("failure"))
            #expect(batch.json?["entries"]?[1]?["failure"]?["lookup_failed"]?[".tag"] == .string("not_closed"))
            #expect(try await dbx.rpc("files/get_metadata", #"{"path":"/batch/one.bin"}"#).status == 200)
            #expect(try await dbx.rpc("files/get_metadata", #"{"path":"/batch/two.bin"}"#).status == 409)
        }
    }

    @Test("Dropbox by its own host name: Host api.dropboxapi.com with /2/… reaches the emulation")
    func dropboxByHostName() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let connection = try RawHTTPConnection(port: try #require(base.port))
            let body = #"{"path":""}"#
            try connection.send("POST /2/files/list_folder HTTP/1.1\r\nHost: api.dropboxapi.com\r\nAuthorization: Bearer \(dbx.token)\r\n"
                                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let r = try await connection.readResponse()
            #expect(r.status == 200, "\(r.text)")
            #expect(r.json?["has_more"] == .bool(false))
        }
    }

    // MARK: Box

    @Test("Box: folder items with usemarker=true page by next_marker, null on the last page")
    func boxMarkerPaging() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await BoxEmulatorTests.ccgToken(base)
            let folder = try #require(try await BoxEmulatorTests.createFolder(base, token: token, name: "paged").json?["id"]?.stringValue)
            for name in ["a.bin", "b.bin"] {
                #expect(try await BoxEmulatorTests.uploadSmall(base, token: token, name: name, parent: folder, data: BSF.bytes(10)).status == 201)
            }
            let first = try await BSF.call("GET", BoxEmulatorTests.api(base, "/folders/\(folder)/items?limit=1&usemarker=true"), token: token)
            #expect(first.json?["entries"]?[0]?["name"] == .string("a.bin"))
            let marker = try #require(first.json?["next_marker"]?.stringValue, "\(first.text)")
            let allowed = CharacterSet.alphanumerics
            let second = try await BSF.call("GET", BoxEmulatorTests.api(base, "/folders/\(folder)/items?limit=1&usemarker=true&marker="
                                                                              + marker.addingPercentEncoding(withAllowedCharacters: allowed)!), token: token)
            #expect(second.json?["entries"]?[0]?["name"] == .string("b.bin"))
            #expect(second.json?["next_marker"] == .null, "\(second.text)")
        }
    }

    @Test("Box: the direct upload takes the part that carries a filename whatever its field is called (rclone's `contents`)")
    func boxFilePartByFilename() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await BoxEmulatorTests.ccgToken(base)
            let boundary = "rclone-like-boundary"
            var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"attributes\"\r\n\r\n".utf8)
            body.append(Data(#"{"name":"r.bin","parent":{"id":"0"}}"#.utf8))
            body.append(Data("\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"contents\"; filename=\"r.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8))
            let data = BSF.bytes(5000, seed: 4)
            body.append(data)
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            let r = try await BSF.call("POST", BoxEmulatorTests.upload(base, "/files/content"), token: token, body: body,
                                       headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"])
            #expect(r.status == 201, "\(r.text)")
            #expect(r.json?["entries"]?[0]?["sha1"] == .string(try await BSF.sha1(data)))
        }
    }

    @Test("Box: a new version of a file goes to POST /files/{id}/content and keeps the id (rclone overwrites this way)")
    func boxNewVersion() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await BoxEmulatorTests.ccgToken(base)
            let first = try await BoxEmulatorTests.uploadSmall(base, token: token, name: "v.bin", parent: "0", data: BSF.bytes(100, seed: 1))
            let id = try #require(first.json?["entries"]?[0]?["id"]?.stringValue)
            let data = BSF.bytes(200, seed: 2)
            let (body, type) = BoxEmulatorTests.multipart(attributes: #"{"name":"v.bin"}"#, file: data)
            let second = try await BSF.call("POST", BoxEmulatorTests.upload(base, "/files/\(id)/content"), token: token, body: body,
                                            headers: ["Content-Type": type])
            #expect(second.status == 201, "\(second.text)")
            #expect(second.json?["entries"]?[0]?["id"] == .string(id))
            #expect(second.json?["entries"]?[0]?["sha1"] == .string(try await BSF.sha1(data)))
            let content = try await TestHTTP.send("GET", BoxEmulatorTests.api(base, "/files/\(id)/content"), headers: ["Authorization": "Bearer \(token)"])
            #expect(content.body == data)
        }
    }

    // MARK: ShareFile

    @Test("ShareFile: Upload2 reads member names and enum values in any case (rclone's `fileName`, `method: threaded`)")
    func shareFileUpload2AnyCase() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await ShareFileEmulatorTests.token(base)
            let home = try #require(try await BSF.call("GET", ShareFileEmulatorTests.api(base, "/Items"), token: token).json?["Id"]?.stringValue)
            let spec = try await BSF.call("POST", ShareFileEmulatorTests.api(base, "/Items(\(home))/Upload2"), token: token, json: """
                {"method":"threaded","raw":true,"fileName":"lower.bin","fileSize":10,"overwrite":true}
                """)
            #expect(spec.status == 200, "\(spec.text)")
            #expect(spec.json?["Method"] == .string("Threaded"))
        }
    }

    @Test("ShareFile: threaded chunks land at their byteOffset in any order, and a bare POST of FinishUri answers JSON")
    func shareFileParallelChunksAndBareFinish() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await ShareFileEmulatorTests.token(base)
            let home = try #require(try await BSF.call("GET", ShareFileEmulatorTests.api(base, "/Items"), token: token).json?["Id"]?.stringValue)
            let data = BSF.bytes(2500, seed: 8)
            let spec = try await ShareFileEmulatorTests.upload2(base, token: token, folder: home, name: "par.bin", length: data.count, method: "Threaded")
            let chunkURI = try #require(spec.json?["ChunkUri"]?.stringValue)
            let finishURI = try #require(spec.json?["FinishUri"]?.stringValue)
            for (index, offset) in [(2, 2000), (0, 0), (1, 1000)] {
                let chunk = data.subdata(in: offset..<min(offset + 1000, data.count))
                let r = try await TestHTTP.send("POST", URL(string: chunkURI + "&index=\(index)&byteOffset=\(offset)&hash=\(try await BSF.md5(chunk))&fmt=json")!,
                                                body: chunk)
                #expect(r.json?["error"] == .bool(false), "chunk \(index): \(r.text)")
            }
            let done = try await TestHTTP.send("POST", URL(string: finishURI)!)
            #expect(done.status == 200)
            #expect(done.json?["error"] == .bool(false), "\(done.text)")
            #expect(done.json?["value"]?[0]?["md5"] == .string(try await BSF.md5(data)))
        }
    }
}

fileprivate extension JSONValue {
    /// The element at `index` of an array (nil for anything else or out of range).
    subscript(index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }
}
