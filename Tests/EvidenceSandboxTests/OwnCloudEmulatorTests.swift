import EvidenceSandbox
import Foundation
import Testing

/// Calls against the ownCloud emulation of an in-process sandbox.
private struct OwnCloudClient {
    let base: URL
    var auth = "Basic " + Data("sandbox:sandbox-app-password".utf8).base64EncodedString()

    func url(_ path: String) -> URL { URL(string: path, relativeTo: base)!.absoluteURL }

    func dav(_ method: String, _ path: String, headers: [String: String] = [:], body: Data? = nil) async throws -> HTTPResult {
        var h = headers
        h["Authorization"] = auth
        return try await TestHTTP.send(method, url("/owncloud/remote.php/dav/files/sandbox" + path), headers: h, body: body)
    }

    func uploads(_ method: String, _ path: String, headers: [String: String] = [:], body: Data? = nil) async throws -> HTTPResult {
        var h = headers
        h["Authorization"] = auth
        return try await TestHTTP.send(method, url("/owncloud/remote.php/dav/uploads/sandbox" + path), headers: h, body: body)
    }

    func propfind(_ path: String, depth: String = "0", props: String, uploads: Bool = false) async throws -> HTTPResult {
        let body = #"<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>\#(props)</d:prop></d:propfind>"#
        let headers = ["Depth": depth, "Content-Type": "application/xml"]
        return uploads ? try await self.uploads("PROPFIND", path, headers: headers, body: Data(body.utf8))
            : try await dav("PROPFIND", path, headers: headers, body: Data(body.utf8))
    }

    func ocs(_ method: String, _ suffix: String = "", form: String? = nil, apiRequest: Bool = true) async throws -> HTTPResult {
        var h = ["Authorization": auth]
        if apiRequest { h["OCS-APIRequest"] = "true" }
        if form != nil { h["Content-Type"] = "application/x-www-form-urlencoded" }
        return try await TestHTTP.send(method, url("/owncloud/ocs/v1.php/apps/files_sharing/api/v1/shares" + suffix), headers: h,
                                       body: form.map { Data($0.utf8) })
    }
}

private func openssl(_ algorithm: String, _ data: Data) async throws -> String {
    let dir = try makeTemporaryDirectory("ocsum")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try data.write(to: URL(fileURLWithPath: "\(dir)/f"))
    let r = try await runTool("openssl", ["dgst", "-\(algorithm)", "-r", "\(dir)/f"])
    return String(r.stdout.split(separator: " ").first ?? "")
}

/// Adler-32 (RFC 1950), written out here independently of the emulation.
private func adler32(_ data: Data) -> String {
    var a: UInt32 = 1
    var b: UInt32 = 0
    for byte in data {
        a = (a + UInt32(byte)) % 65521
        b = (b + a) % 65521
    }
    return String(format: "%08x", (b << 16) | a)
}

@Suite("ownCloud emulation")
struct OwnCloudEmulatorTests {
    @Test("Basic auth required: 401 with the ownCloud realm and a Sabre error body")
    func auth() async throws {
        // Raw socket: FoundationNetworking's URLSession stalls on a 401 carrying a Basic challenge.
        try await withProviderSandbox { base async throws in
            let port = try #require(base.port)
            let conn = try RawHTTPConnection(port: port)
            let bad = Data("sandbox:wrong".utf8).base64EncodedString()
            try conn.send("PROPFIND /owncloud/remote.php/dav/files/sandbox/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic \(bad)\r\nDepth: 0\r\nContent-Length: 0\r\n\r\n")
            let r = try await conn.readResponse()
            #expect(r.status == 401)
            #expect(r.header("WWW-Authenticate")?.hasPrefix("Basic realm=\"ownCloud\"") == true)
            #expect(r.text.contains("<s:exception>Sabre\\DAV\\Exception\\NotAuthenticated</s:exception>"))
            #expect(r.text.contains("<s:message>Username or password was incorrect</s:message>"))
        }
    }

    @Test("MKCOL 201/405/409; PUT with wrong OC-Checksum is 400 and stores nothing; PROPFIND checksums; 412")
    func putAndChecksums() async throws {
        try await withProviderSandbox { base async throws in
            let oc = OwnCloudClient(base: base)
            #expect(try await oc.dav("MKCOL", "/Evidence").status == 201)
            #expect(try await oc.dav("MKCOL", "/Evidence").status == 405)
            let orphan = try await oc.dav("MKCOL", "/missing/child")
            #expect(orphan.status == 409)
            #expect(orphan.text.contains("Sabre\\DAV\\Exception\\Conflict"))

            let body = testBytes(300_000, seed: 7)
            let sha1 = try await openssl("sha1", body)
            let md5 = try await openssl("md5", body)
            let wrong = try await oc.dav("PUT", "/Evidence/a.mp4", headers: ["OC-Checksum": "SHA1:" + String(repeating: "0", count: 40)], body: body)
            #expect(wrong.status == 400)
            #expect(wrong.text.contains("<s:message>The computed checksum does not match the one received from the client.</s:message>"))
            #expect(try await oc.propfind("/Evidence/a.mp4", props: "<d:getcontentlength/>").status == 404)

            let put = try await oc.dav("PUT", "/Evidence/a.mp4", headers: ["OC-Checksum": "SHA1:\(sha1)", "X-OC-Mtime": "1777777777"], body: body)
            #expect(put.status == 201)
            #expect(put.header("X-OC-MTime") == "accepted")
            #expect(put.header("OC-FileId")?.isEmpty == false)
            let etag = try #require(put.header("ETag"))
            #expect(put.header("OC-ETag") == etag)

            let pf = try await oc.propfind("/Evidence/a.mp4", props: "<d:getcontentlength/><d:getetag/><d:resourcetype/><oc:fileid/><oc:checksums/><d:getlastmodified/>")
            #expect(pf.status == 207)
            #expect(pf.text.contains("xmlns:d=\"DAV:\""))
            #expect(pf.text.contains("xmlns:oc=\"http://owncloud.org/ns\""))
            #expect(pf.text.contains("<d:getcontentlength>300000</d:getcontentlength>"))
            #expect(pf.text.contains("<oc:checksums><oc:checksum>SHA1:\(sha1) MD5:\(md5) ADLER32:\(adler32(body))</oc:checksum></oc:checksums>"))
            #expect(pf.text.contains("<d:getlastmodified>Sun, 03 May 2026 03:09:37 GMT</d:getlastmodified>"))
            #expect(pf.text.contains("<d:getetag>\(etag.replacingOccurrences(of: "\"", with: "&quot;"))</d:getetag>"))

            let folder = try await oc.propfind("/Evidence", depth: "1", props: "<d:resourcetype/><d:getcontentlength/>")
            #expect(folder.text.contains("<d:href>/owncloud/remote.php/dav/files/sandbox/Evidence/</d:href>"))
            #expect(folder.text.contains("<d:href>/owncloud/remote.php/dav/files/sandbox/Evidence/a.mp4</d:href>"))
            #expect(folder.text.contains("<d:collection/>"))
            #expect(folder.text.contains("HTTP/1.1 404 Not Found"))  // getcontentlength of the folder

            let again = try await oc.dav("PUT", "/Evidence/a.mp4", headers: ["If-None-Match": "*"], body: body)
            #expect(again.status == 412)
            #expect(try await oc.dav("PUT", "/Evidence/a.mp4", body: body).status == 204)
            #expect(try await oc.dav("PUT", "/nowhere/a.mp4", body: body).status == 409)
            let got = try await oc.dav("GET", "/Evidence/a.mp4")
            #expect(got.body == body)
            #expect(got.header("OC-Checksum") == "SHA1:\(sha1)")
            #expect(try await oc.dav("GET", "/Evidence/none").status == 404)
            let missing = try await oc.propfind("/Evidence/none", props: "<d:getetag/>")
            #expect(missing.status == 404)
            #expect(missing.text.contains("<s:exception>Sabre\\DAV\\Exception\\NotFound</s:exception>"))

            #expect(try await oc.dav("MOVE", "/Evidence/a.mp4", headers: ["Destination": oc.url("/owncloud/remote.php/dav/files/sandbox/Evidence/b.mp4").absoluteString]).status == 201)
            #expect(try await oc.dav("DELETE", "/Evidence/b.mp4").status == 204)
            #expect(try await oc.dav("DELETE", "/Evidence/b.mp4").status == 404)

            let counts = try #require(try await TestHTTP.send("GET", oc.url("/_sandbox/counters")).json)
            #expect(counts["uploads_by_path"]?["owncloud:/Evidence/a.mp4"] == .int(2))
        }
    }

    @Test("names: .htaccess 403, trailing space / .. / >255 bytes 400, Windows-forbidden characters allowed")
    func names() async throws {
        try await withProviderSandbox { base async throws in
            let oc = OwnCloudClient(base: base)
            let ht = try await oc.dav("PUT", "/.htaccess", body: Data("x".utf8))
            #expect(ht.status == 403)
            #expect(ht.text.contains("<d:error"))
            #expect(try await oc.dav("PUT", "/trailing%20", body: Data("x".utf8)).status == 400)
            #expect(try await oc.dav("MKCOL", "/%2E%2E").status == 400)
            #expect(try await oc.dav("PUT", "/" + String(repeating: "a", count: 256), body: Data("x".utf8)).status == 400)
            let odd = "a%5C%3A%3F%2A%22%3E%3C%7Cb.txt"  // a\:?*"><|b.txt
            #expect(try await oc.dav("PUT", "/" + odd, body: Data("x".utf8)).status == 201)
            #expect(try await oc.dav("GET", "/" + odd).text == "x")
        }
    }

    @Test("chunked upload: chunks listed for resume (also after a restart), OC-Total-Length checked, MOVE .file assembles")
    func chunked() async throws {
        let dir = try makeTemporaryDirectory("occhunk")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let body = testBytes(2_500_000, seed: 9)
        let first = body.subdata(in: 0..<1_000_000)
        try await withProviderSandbox(stateDirectory: dir) { base async throws in
            let oc = OwnCloudClient(base: base)
            #expect(try await oc.uploads("MKCOL", "/transfer-1").status == 201)
            #expect(try await oc.uploads("MKCOL", "/transfer-1").status == 405)
            #expect(try await oc.uploads("PUT", "/transfer-1/00000000000000000000", body: first).status == 201)
        }
        try await withProviderSandbox(stateDirectory: dir) { base async throws in
            let oc = OwnCloudClient(base: base)
            let listing = try await oc.propfind("/transfer-1", depth: "1", props: "<d:getcontentlength/><d:resourcetype/>", uploads: true)
            #expect(listing.status == 207)
            #expect(listing.text.contains("<d:href>/owncloud/remote.php/dav/uploads/sandbox/transfer-1/00000000000000000000</d:href><d:propstat><d:prop><d:getcontentlength>1000000</d:getcontentlength>"))
            // Re-PUT of a chunk replaces it; then the rest.
            #expect(try await oc.uploads("PUT", "/transfer-1/00000000000000000000", body: first).status == 204)
            #expect(try await oc.uploads("PUT", "/transfer-1/00000000000001000000", body: body.subdata(in: 1_000_000..<body.count)).status == 201)
            #expect(try await oc.dav("MKCOL", "/Evidence").status == 201)
            let dest = oc.url("/owncloud/remote.php/dav/files/sandbox/Evidence/big.mp4").absoluteString
            let sha1 = try await openssl("sha1", body)
            let short = try await oc.uploads("MOVE", "/transfer-1/.file", headers: ["Destination": dest, "OC-Total-Length": "2500001"])
            #expect(short.status == 400)
            #expect(short.text.contains("Chunks on server do not sum up to 2500001 but to 2500000 bytes"))
            let badSum = try await oc.uploads("MOVE", "/transfer-1/.file", headers: ["Destination": dest, "OC-Total-Length": "2500000",
                                                                                     "OC-Checksum": "SHA1:" + String(repeating: "1", count: 40)])
            #expect(badSum.status == 400)
            let done = try await oc.uploads("MOVE", "/transfer-1/.file", headers: ["Destination": dest, "OC-Total-Length": "2500000",
                                                                                   "OC-Checksum": "SHA1:\(sha1)", "If-None-Match": "*",
                                                                                   "X-OC-Mtime": "1777777777"])
            #expect(done.status == 201)
            #expect(done.header("OC-FileId")?.isEmpty == false)
            #expect(done.header("ETag")?.isEmpty == false)
            #expect(try await oc.propfind("/transfer-1", depth: "1", props: "<d:getcontentlength/>", uploads: true).status == 404)
            #expect(try await oc.dav("GET", "/Evidence/big.mp4").body == body)
            let counts = try #require(try await TestHTTP.send("GET", oc.url("/_sandbox/counters")).json)
            #expect(counts["uploads_by_path"]?["owncloud:/Evidence/big.mp4"] == .int(1))

            // A second assembly onto the same path with If-None-Match: * is refused.
            #expect(try await oc.uploads("MKCOL", "/transfer-2").status == 201)
            #expect(try await oc.uploads("PUT", "/transfer-2/00000000000000000000", body: first).status == 201)
            #expect(try await oc.uploads("MOVE", "/transfer-2/.file", headers: ["Destination": dest, "If-None-Match": "*"]).status == 412)
        }
    }

    @Test("OCS shares: OCS-APIRequest required (401/997), failures in a 200, link created, listed and deleted")
    func shares() async throws {
        try await withProviderSandbox { base async throws in
            let oc = OwnCloudClient(base: base)
            _ = try await oc.dav("MKCOL", "/Evidence")
            _ = try await oc.dav("PUT", "/Evidence/a.mp4", body: Data("video".utf8))

            let csrf = try await oc.ocs("POST", "?format=json", form: "path=/Evidence/a.mp4&shareType=3&permissions=1", apiRequest: false)
            #expect(csrf.status == 401)
            #expect(csrf.json?["ocs"]?["meta"]?["statuscode"] == .int(997))

            let wrongPath = try await oc.ocs("POST", "?format=json", form: "path=/Evidence/none.mp4&shareType=3&permissions=1")
            #expect(wrongPath.status == 200)
            #expect(wrongPath.json?["ocs"]?["meta"]?["statuscode"] == .int(404))
            #expect(wrongPath.json?["ocs"]?["meta"]?["message"] == .string("Wrong path, file/folder doesn't exist"))
            #expect(wrongPath.json?["ocs"]?["meta"]?["status"] == .string("failure"))

            let badDate = try await oc.ocs("POST", "?format=json", form: "path=/Evidence/a.mp4&shareType=3&permissions=1&expireDate=01.12.2026")
            #expect(badDate.status == 200)
            #expect(badDate.json?["ocs"]?["meta"]?["statuscode"] == .int(400))
            #expect(badDate.json?["ocs"]?["meta"]?["message"] == .string("Invalid date, date format must be YYYY-MM-DD"))
            let past = try await oc.ocs("POST", "?format=json", form: "path=/Evidence/a.mp4&shareType=3&permissions=1&expireDate=2001-01-01")
            #expect(past.json?["ocs"]?["meta"]?["statuscode"] == .int(404))
            #expect(past.json?["ocs"]?["meta"]?["message"] == .string("Expiration date is in the past"))
            let upload = try await oc.ocs("POST", "?format=json", form: "path=/Evidence&shareType=3&permissions=15")
            #expect(upload.json?["ocs"]?["meta"]?["statuscode"] == .int(403))

            let made = try await oc.ocs("POST", "?format=json", form: "path=%2FEvidence%2Fa.mp4&shareType=3&permissions=1&password=s3cret&expireDate=2099-12-01")
            #expect(made.status == 200)
            #expect(made.json?["ocs"]?["meta"]?["statuscode"] == .int(100))
            let data = try #require(made.json?["ocs"]?["data"])
            let token = try #require(data["token"]?.stringValue)
            #expect(data["url"] == .string("\(base.absoluteString)/owncloud/s/\(token)"))
            #expect(data["share_type"] == .int(3))
            #expect(data["path"] == .string("/Evidence/a.mp4"))
            #expect(data["expiration"] == .string("2099-12-01 00:00:00"))
            #expect(data["share_with"] == .string("***redacted***"))
            let id = try #require(data["id"]?.stringValue)

            let listed = try await oc.ocs("GET", "?path=/Evidence/a.mp4&format=json")
            if case .array(let items)? = listed.json?["ocs"]?["data"] {
                #expect(items.count == 1)
                #expect(items.first?["token"] == .string(token))
            } else {
                Issue.record("no share list: \(listed.text)")
            }
            let missingList = try await oc.ocs("GET", "?path=/nope&format=json")
            #expect(missingList.status == 200)
            #expect(missingList.json?["ocs"]?["meta"]?["statuscode"] == .int(404))

            let xml = try await oc.ocs("GET", "?path=/Evidence/a.mp4")
            #expect(xml.text.contains("<statuscode>100</statuscode>"))

            #expect(try await oc.ocs("DELETE", "/\(id)?format=json").json?["ocs"]?["meta"]?["statuscode"] == .int(100))
            let gone = try await oc.ocs("DELETE", "/\(id)?format=json")
            #expect(gone.status == 200)
            #expect(gone.json?["ocs"]?["meta"]?["statuscode"] == .int(404))
        }
    }

    @Test("corrupt-next-upload: OC-Checksum then fails with 400; without one the stored checksum differs")
    func corruption() async throws {
        try await withProviderSandbox { base async throws in
            let oc = OwnCloudClient(base: base)
            let body = testBytes(100_000, seed: 4)
            let sha1 = try await openssl("sha1", body)
            _ = try await TestHTTP.send("POST", oc.url("/_sandbox/corrupt-next-upload?provider=owncloud"))
            let checked = try await oc.dav("PUT", "/c1.bin", headers: ["OC-Checksum": "SHA1:\(sha1)"], body: body)
            #expect(checked.status == 400)
            _ = try await TestHTTP.send("POST", oc.url("/_sandbox/corrupt-next-upload?provider=owncloud"))
            #expect(try await oc.dav("PUT", "/c2.bin", body: body).status == 201)
            let pf = try await oc.propfind("/c2.bin", props: "<oc:checksums/>")
            #expect(pf.text.contains("SHA1:"))
            #expect(!pf.text.contains("SHA1:\(sha1)"))
            #expect(try await oc.dav("PUT", "/c1.bin", headers: ["OC-Checksum": "SHA1:\(sha1)"], body: body).status == 201)
        }
    }
}
