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
                                                                                   "OC-Checksum": "SHA1:\(sha1)", "Overwrite": "F",
                                                                                   "X-OC-Mtime": "1777777777"])
            #expect(done.status == 201)
            #expect(done.header("OC-FileId")?.isEmpty == false)
            #expect(done.header("ETag")?.isEmpty == false)
            #expect(try await oc.propfind("/transfer-1", depth: "1", props: "<d:getcontentlength/>", uploads: true).status == 404)
            #expect(try await oc.dav("GET", "/Evidence/big.mp4").body == body)
            let counts = try #require(try await TestHTTP.send("GET", oc.url("/_sandbox/counters")).json)
            #expect(counts["uploads_by_path"]?["owncloud:/Evidence/big.mp4"] == .int(1))

            // A second assembly onto the same path with Overwrite: F is refused.
            #expect(try await oc.uploads("MKCOL", "/transfer-2").status == 201)
            #expect(try await oc.uploads("PUT", "/transfer-2/00000000000000000000", body: first).status == 201)
            let refused = try await oc.uploads("MOVE", "/transfer-2/.file", headers: ["Destination": dest, "Overwrite": "F"])
            #expect(refused.status == 412)
            #expect(refused.text.contains("<s:header>Overwrite</s:header>"))
        }
    }

    @Test("MOVE preconditions are the source's (Sabre): If-None-Match: * on .file is 412 even onto nothing; Overwrite F refuses, T replaces")
    func movePreconditions() async throws {
        try await withProviderSandbox { base async throws in
            let oc = OwnCloudClient(base: base)
            let bytes = testBytes(1000, seed: 3)
            #expect(try await oc.uploads("MKCOL", "/t").status == 201)
            #expect(try await oc.uploads("PUT", "/t/00000000000000000000", body: bytes).status == 201)
            let dest = oc.url("/owncloud/remote.php/dav/files/sandbox/new.bin").absoluteString
            // Nothing is at the destination, yet .file (the request URI) exists: 412.
            let star = try await oc.uploads("MOVE", "/t/.file", headers: ["Destination": dest, "If-None-Match": "*"])
            #expect(star.status == 412)
            #expect(star.text.contains("<s:header>If-None-Match</s:header>"))
            #expect(try await oc.dav("GET", "/new.bin").status == 404)
            #expect(try await oc.uploads("MOVE", "/t/.file", headers: ["Destination": dest, "Overwrite": "X"]).status == 400)
            #expect(try await oc.uploads("MOVE", "/t/.file", headers: ["Destination": dest, "Overwrite": "F"]).status == 201)
            #expect(try await oc.dav("GET", "/new.bin").body == bytes)

            // Plain files: the same rules, judged on the source.
            #expect(try await oc.dav("PUT", "/a.bin", body: Data("a".utf8)).status == 201)
            #expect(try await oc.dav("PUT", "/b.bin", body: Data("b".utf8)).status == 201)
            let toB = oc.url("/owncloud/remote.php/dav/files/sandbox/b.bin").absoluteString
            let toC = oc.url("/owncloud/remote.php/dav/files/sandbox/c.bin").absoluteString
            #expect(try await oc.dav("MOVE", "/a.bin", headers: ["Destination": toC, "If-None-Match": "*"]).status == 412)
            #expect(try await oc.dav("MOVE", "/a.bin", headers: ["Destination": toC, "If-Match": "\"nope\""]).status == 412)
            #expect(try await oc.dav("MOVE", "/none.bin", headers: ["Destination": toC, "If-Match": "*"]).status == 412)
            #expect(try await oc.dav("MOVE", "/a.bin", headers: ["Destination": toB, "Overwrite": "F"]).status == 412)
            let etag = try #require(try await oc.dav("HEAD", "/a.bin").header("ETag"))
            #expect(try await oc.dav("MOVE", "/a.bin", headers: ["Destination": toB, "Overwrite": "T", "If-Match": etag]).status == 204)
            #expect(try await oc.dav("GET", "/b.bin").text == "a")
            #expect(try await oc.dav("GET", "/a.bin").status == 404)
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

    @Test("Nextcloud flavour: status.php says Nextcloud; OC-Checksum is stored as sent, unchecked, and echoed back")
    func nextcloudEchoesChecksums() async throws {
        try await withProviderSandbox(owncloudFlavour: .nextcloud) { base async throws in
            let oc = OwnCloudClient(base: base)
            let status = try await TestHTTP.send("GET", oc.url("/owncloud/status.php"))
            #expect(status.json?["productname"] == .string("Nextcloud"))
            #expect(status.json?["version"]?.stringValue?.hasPrefix("30.") == true)
            let body = testBytes(10_000, seed: 5)
            let wrong = "SHA1:" + String(repeating: "ab", count: 20)
            // Nextcloud does not check: a checksum that does not match the bytes is kept.
            #expect(try await oc.dav("PUT", "/w.bin", headers: ["OC-Checksum": wrong], body: body).status == 201)
            let pf = try await oc.propfind("/w.bin", props: "<oc:checksums/>")
            #expect(pf.text.contains("<oc:checksums><oc:checksum>\(wrong)</oc:checksum></oc:checksums>"), "\(pf.text)")
            let got = try await oc.dav("GET", "/w.bin")
            #expect(got.body == body)
            #expect(got.header("OC-Checksum") == wrong)
            // Without one, the file has none.
            #expect(try await oc.dav("PUT", "/n.bin", body: body).status == 201)
            let none = try await oc.propfind("/n.bin", props: "<oc:checksums/>")
            #expect(!none.text.contains("<oc:checksum>"))
            #expect(try await oc.dav("GET", "/n.bin").header("OC-Checksum") == nil)
        }
    }

    @Test("misbehave mode locked: the next request under the prefix is 423 Locked with a Sabre body, then the real answer")
    func lockedMode() async throws {
        try await withProviderSandbox { base async throws in
            let oc = OwnCloudClient(base: base)
            let armed = try await TestHTTP.send("POST", oc.url("/_sandbox/misbehave?path=/owncloud/remote.php/dav/files/sandbox/L&mode=locked"))
            #expect(armed.status == 200)
            let locked = try await oc.dav("MKCOL", "/L")
            #expect(locked.status == 423)
            #expect(locked.text.contains("<s:exception>OCA\\DAV\\Connector\\Sabre\\Exception\\FileLocked</s:exception>"))
            #expect(try await oc.dav("MKCOL", "/L").status == 201)
        }
    }

    @Test("If header (RFC 4918) on the assembling MOVE is judged against the tagged destination: a stale etag is 412, the current one replaces")
    func ifHeaderOnMove() async throws {
        try await withProviderSandbox { base async throws in
            let oc = OwnCloudClient(base: base)
            #expect(try await oc.dav("PUT", "/f.bin", body: Data("old".utf8)).status == 201)
            let etag = try #require(try await oc.dav("HEAD", "/f.bin").header("ETag"))
            let dest = oc.url("/owncloud/remote.php/dav/files/sandbox/f.bin").absoluteString
            let destPath = "/owncloud/remote.php/dav/files/sandbox/f.bin"
            #expect(try await oc.uploads("MKCOL", "/u").status == 201)
            #expect(try await oc.uploads("PUT", "/u/0000000000000000", body: Data("new".utf8)).status == 201)
            let stale = try await oc.uploads("MOVE", "/u/.file", headers: ["Destination": dest, "If": "<\(destPath)> ([\"0000stale\"])"])
            #expect(stale.status == 412)
            #expect(stale.text.contains("<s:header>If</s:header>"))
            #expect(try await oc.dav("GET", "/f.bin").text == "old")
            let current = try await oc.uploads("MOVE", "/u/.file", headers: ["Destination": dest, "If": "<\(dest)> ([\(etag)])"])
            #expect(current.status == 204)
            #expect(try await oc.dav("GET", "/f.bin").text == "new")
            // Untagged: the request URI. Not <token>: no lock is held, so it holds.
            #expect(try await oc.dav("DELETE", "/f.bin", headers: ["If": "([\"0000stale\"])"]).status == 412)
            #expect(try await oc.dav("DELETE", "/f.bin", headers: ["If": "(Not <opaquelocktoken:none>)"]).status == 204)
        }
    }

    @Test("PROPFIND answers what the desktop clients ask for: share-types, data-fingerprint on the root, permissions per flavour, nc:is-encrypted on Nextcloud",
          arguments: [OwnCloudFlavour.owncloud, .nextcloud])
    func clientProperties(_ flavour: OwnCloudFlavour) async throws {
        try await withProviderSandbox(owncloudFlavour: flavour) { base async throws in
            let oc = OwnCloudClient(base: base)
            #expect(try await oc.dav("MKCOL", "/d").status == 201)
            #expect(try await oc.dav("PUT", "/d/s.mp4", body: Data("x".utf8)).status == 201)
            #expect(try await oc.dav("PUT", "/d/p.mp4", body: Data("y".utf8)).status == 201)
            _ = try await oc.ocs("POST", "?format=json", form: "path=/d/s.mp4&shareType=3&permissions=1")
            let props = "<oc:permissions/><oc:share-types/><oc:data-fingerprint/><nc:is-encrypted xmlns:nc=\"http://nextcloud.org/ns\"/>"
            let root = try await oc.propfind("/", depth: "0", props: props)
            #expect(root.text.contains("<oc:data-fingerprint/>"))
            let listing = try await oc.propfind("/d", depth: "1", props: props)
            let g = flavour == .nextcloud ? "G" : ""
            #expect(listing.text.contains("<oc:permissions>R\(g)DNVCK</oc:permissions>"), "\(listing.text)")
            #expect(listing.text.contains("<oc:permissions>R\(g)DNVW</oc:permissions>"))
            #expect(listing.text.contains("<oc:share-types><oc:share-type>3</oc:share-type></oc:share-types>"))
            #expect(listing.text.contains("<oc:share-types/>"))
            #expect(listing.text.contains("<nc:is-encrypted>0</nc:is-encrypted>") == (flavour == .nextcloud))
        }
    }
}
