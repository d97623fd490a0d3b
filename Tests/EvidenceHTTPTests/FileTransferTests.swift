import EvidenceCore
import EvidenceHTTP
import Foundation
import Synchronization
import Testing
import EvidenceTesting

/// Largest value seen, shared with progress callbacks.
final class Peak: @unchecked Sendable {
    private let lock = NSLock()
    private var values: (Int64, Int64, Int) = (0, 0, 0)

    func record(sent: Int64, received: Int64, resident: Int = 0) {
        lock.withLock { values = (max(values.0, sent), max(values.1, received), max(values.2, resident)) }
    }

    var sent: Int64 { lock.withLock { values.0 } }
    var received: Int64 { lock.withLock { values.1 } }
    var resident: Int { lock.withLock { values.2 } }
}

extension Loopback {
    @Suite struct FileTransfers {
        static let size: Int64 = 50 << 20

        @Test func uploadOfA50MBFileIsStreamedInBoundedMemory() async throws {
            let dir = TempDirectory("http")
            defer { dir.remove() }
            let path = dir.file("clip.mp4")
            try Pattern.writeFile(path, size: Self.size)
            let server = try TestServer(routes: ["/upload": { _, _ in .respond(201) }, "/warm": { _, _ in .respond(200) }])
            defer { server.stop() }
            let client = makeClient()
            _ = try await client.send(HTTPRequest(url: server.url("/warm")))  // threads, TLS/curl state

            let before = residentBytes()
            let peak = Peak()
            let response = try await client.execute(
                HTTPRequest(method: "PUT", url: server.url("/upload"), body: .file(path: path)),
                progress: { sent, received in peak.record(sent: sent, received: received, resident: residentBytes()) })
            let after = residentBytes()

            #expect(response.status == 201)
            let seen = try #require(server.requests.last)
            #expect(seen.method == "PUT")
            #expect(Int64(seen.bodyLength) == Self.size)
            #expect(seen.bodyMatchesPattern)
            #expect(seen.header("content-length") == "\(Self.size)")
            #expect(seen.header("expect") == nil)  // curl would ask for 100-continue above 1 MB
            #expect(peak.sent == Self.size)
            let growth = max(after, peak.resident) - before
            #expect(before > 0 && growth < 30 << 20, "RSS grew by \(growth >> 20) MiB")
        }

        @Test func uploadSendsExactlyTheRequestedRange() async throws {
            let dir = TempDirectory("http")
            defer { dir.remove() }
            let path = dir.file("chunked.bin")
            try Pattern.writeFile(path, size: 300_000)
            let server = try TestServer(routes: ["/chunk": { _, _ in .respond(204) }])
            defer { server.stop() }

            let response = try await makeClient().send(HTTPRequest(
                method: "POST", url: server.url("/chunk"),
                headers: [(name: "Content-Type", value: "application/octet-stream")],
                body: .file(path: path, offset: 100_000, length: 150_000)))

            #expect(response.status == 204)
            let seen = try #require(server.requests.first)
            #expect(seen.bodyLength == 150_000)
            #expect(seen.body == Pattern.data(count: 150_000, at: 100_000))
        }

        /// curl's upload buffer is the body's size rounded up to 16 KiB, at most 2 MiB: bodies at
        /// each edge of that sizing, from a file and from memory, arrive byte for byte.
        @Test func bodiesAroundTheUploadBufferSizesArriveWhole() async throws {
            let dir = TempDirectory("http")
            defer { dir.remove() }
            let server = try TestServer(routes: ["/put": { _, _ in .respond(201) }, "/post": { _, _ in .respond(200) }])
            defer { server.stop() }
            let client = makeClient()
            let sizes = [0, 1, 16_383, 16_384, 16_385, 100_000, (2 << 20) - 1, 2 << 20, (2 << 20) + 1]
            for size in sizes {
                let path = dir.file("body-\(size).bin")
                try Pattern.writeFile(path, size: Int64(size))
                let put = try await client.send(HTTPRequest(method: "PUT", url: server.url("/put"), body: .file(path: path)))
                #expect(put.status == 201, "PUT of \(size) bytes")
                let post = try await client.send(HTTPRequest(method: "POST", url: server.url("/post"),
                                                             headers: [(name: "Content-Type", value: "application/octet-stream")],
                                                             body: .data(Pattern.data(count: size))))
                #expect(post.status == 200, "POST of \(size) bytes")
            }
            let seen = server.requests
            #expect(seen.map(\.bodyLength) == sizes.flatMap { [$0, $0] })
            #expect(seen.allSatisfy { $0.bodyMatchesPattern })
        }

        @Test func uploadOfAMissingFileFailsWithoutContactingTheServer() async throws {
            let server = try TestServer(routes: ["/upload": { _, _ in .respond(201) }])
            defer { server.stop() }

            let error = await httpError {
                try await makeClient().execute(HTTPRequest(method: "PUT", url: server.url("/upload"),
                                                           body: .file(path: "/nonexistent/clip.mp4")))
            }

            #expect(error?.kind == .transport(code: 26, name: "CURLE_READ_ERROR"))
            #expect(error?.isRetryable == false)
            #expect(error?.message.contains("/nonexistent/clip.mp4") == true)
            #expect(server.hits("/upload") == 0)
        }

        @Test func downloadOfA50MBBodyLandsInTheFileWithNoTemporaryLeft() async throws {
            let dir = TempDirectory("http")
            defer { dir.remove() }
            let server = try TestServer(routes: ["/cert.pdf": { _, _ in .stream(200, length: Self.size) }])
            defer { server.stop() }
            let destination = dir.file("cert.pdf")
            let peak = Peak()

            let before = residentBytes()
            let response = try await makeClient().execute(
                HTTPRequest(url: server.url("/cert.pdf"), downloadTo: destination),
                progress: { sent, received in peak.record(sent: sent, received: received, resident: residentBytes()) })

            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(Pattern.fileMatches(destination, size: Self.size))
            #expect(dir.contents == ["cert.pdf"])
            #expect(peak.received == Self.size)
            #expect(peak.resident - before < 30 << 20)
        }

        @Test func downloadAnsweredWith404LeavesNoFile() async throws {
            let dir = TempDirectory("http")
            defer { dir.remove() }
            let server = try TestServer(routes: ["/missing": { _, _ in .respond(404, body: Data(#"{"error":"not_found"}"#.utf8)) }])
            defer { server.stop() }

            let response = try await makeClient().send(HTTPRequest(url: server.url("/missing"), downloadTo: dir.file("out")))

            #expect(response.status == 404)
            #expect(String(decoding: response.body, as: UTF8.self) == #"{"error":"not_found"}"#)
            #expect(dir.contents.isEmpty)
        }

        @Test func interruptedDownloadKeepsThePreviousFileAndNoTemporary() async throws {
            let dir = TempDirectory("http")
            defer { dir.remove() }
            let destination = dir.file("bundle.zip")
            dir.write("bundle.zip", "previous")
            let server = try TestServer(routes: ["/bundle": { _, _ in .stream(200, length: 1 << 20, dropAfter: 300_000) }])
            defer { server.stop() }
            let client = makeClient { $0.retry.maxAttempts = 2 }

            let error = await httpError { try await client.execute(HTTPRequest(url: server.url("/bundle"), downloadTo: destination)) }

            #expect(error?.kind == .transport(code: 18, name: "CURLE_PARTIAL_FILE"))
            #expect(server.hits("/bundle") == 2)
            #expect(dir.contents == ["bundle.zip"])
            #expect(try String(contentsOfFile: destination, encoding: .utf8) == "previous")
        }

        @Test func emptySuccessfulDownloadCreatesAnEmptyFile() async throws {
            let dir = TempDirectory("http")
            defer { dir.remove() }
            let server = try TestServer(routes: ["/empty": { _, _ in .respond(200) }])
            defer { server.stop() }

            let response = try await makeClient().send(HTTPRequest(url: server.url("/empty"), downloadTo: dir.file("e")))

            #expect(response.status == 200)
            #expect(dir.contents == ["e"])
            #expect(try FileManager.default.attributesOfItem(atPath: dir.file("e"))[.size] as? Int == 0)
        }

        @Test func digestBodyHashesAnAnswerAsItArrivesAndKeepsNothing() async throws {
            let server = try TestServer(routes: [
                "/abc": { _, _ in .respond(200, body: Data("abc".utf8)) },
                "/empty": { _, _ in .respond(200) },
                "/missing": { _, _ in .respond(404, body: Data(#"{"error":"not_found"}"#.utf8)) },
                "/big": { _, _ in .stream(200, length: Self.size) },
            ])
            defer { server.stop() }
            let client = makeClient()
            func digest(_ path: String) async throws -> HTTPResponse {
                var r = HTTPRequest(url: server.url(path))
                r.digestBody = true
                return try await client.send(r)
            }
            let abc = try await digest("/abc")
            #expect(abc.bodyDigest?.sha256.hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
            #expect(abc.bodyDigest?.length == 3 && abc.body.isEmpty)
            let empty = try await digest("/empty")
            #expect(empty.bodyDigest?.sha256.hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
            #expect(empty.bodyDigest?.length == 0)
            // An error keeps its body for the message, and has no digest to be mistaken for the file's.
            let missing = try await digest("/missing")
            #expect(missing.status == 404 && missing.bodyDigest == nil)
            #expect(String(decoding: missing.body, as: UTF8.self) == #"{"error":"not_found"}"#)
            // An attacker's answer: 200, then a second status line among its headers. The body
            // must not be dropped as an error body and the 200 reported with the empty body's
            // digest. This curl refuses the answer itself (error 8); Transfer's own check of a 2xx
            // whose body went elsewhere is the second guard, for a curl that passes the line on.
            let forged = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nHTTP/1.1 404 Not Found\r\n\r\nabc"
            let trick = try TestServer(routes: ["/trick": { _, _ in .raw(Data(forged.utf8)) }])
            defer { trick.stop() }
            var tricked = HTTPRequest(url: trick.url("/trick"))
            tricked.digestBody = true
            let refused = await httpError { try await client.send(tricked) }
            #expect(refused?.kind == .transport(code: 8, name: "CURLE_WEIRD_SERVER_REPLY"), "\(String(describing: refused))")
            let before = residentBytes()
            let big = try await digest("/big")
            #expect(big.bodyDigest?.length == Self.size && big.body.isEmpty)
            #expect(residentBytes() - before < 30 << 20)
        }
}
}
