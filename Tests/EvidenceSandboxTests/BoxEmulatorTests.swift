import EvidenceSandbox
import Foundation
import Testing

@Suite("Box emulation")
struct BoxEmulatorTests {
    static func tokenURL(_ base: URL) -> URL { BSF.url(base, "/box/api/oauth2/token") }
    static func api(_ base: URL, _ path: String) -> URL { BSF.url(base, "/box/api/2.0" + path) }
    static func upload(_ base: URL, _ path: String) -> URL { BSF.url(base, "/box/upload/api/2.0" + path) }

    static func ccgToken(_ base: URL) async throws -> String {
        let r = try await BSF.postForm(tokenURL(base), [
            ("grant_type", "client_credentials"), ("client_id", "sandbox-box-client"), ("client_secret", "sandbox-box-secret"),
            ("box_subject_type", "enterprise"), ("box_subject_id", "sandbox-enterprise"),
        ])
        #expect(r.status == 200)
        return try #require(r.json?["access_token"]?.stringValue)
    }

    static func multipart(attributes: String, file: Data, fileFirst: Bool = false) -> (Data, String) {
        let boundary = "----sandbox-boundary-7f3a"
        var body = Data()
        let attr = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"attributes\"\r\n\r\n\(attributes)\r\n".utf8)
        var filePart = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"unused\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
        filePart.append(file)
        filePart.append(Data("\r\n".utf8))
        if fileFirst { body.append(filePart); body.append(attr) } else { body.append(attr); body.append(filePart) }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    static func uploadSmall(_ base: URL, token: String, name: String, parent: String, data: Data,
                            contentMD5: String? = nil, fileFirst: Bool = false) async throws -> HTTPResult {
        let (body, type) = multipart(attributes: #"{"name":"\#(name)","parent":{"id":"\#(parent)"}}"#, file: data, fileFirst: fileFirst)
        var headers = ["Content-Type": type]
        if let contentMD5 { headers["Content-MD5"] = contentMD5 }
        return try await BSF.call("POST", upload(base, "/files/content"), token: token, body: body, headers: headers)
    }

    static func createFolder(_ base: URL, token: String, name: String, parent: String = "0") async throws -> HTTPResult {
        try await BSF.call("POST", api(base, "/folders"), token: token, json: #"{"name":"\#(name)","parent":{"id":"\#(parent)"}}"#)
    }

    @Test("CCG token, single-use refresh tokens, bad client, unknown grant, 401 after expire-tokens, state survives a restart")
    func tokens() async throws {
        let dir = try makeTemporaryDirectory("box-tokens")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let refreshed: String = try await BSF.withSandbox(dir: dir) { base, _ in
            let ccg = try await BSF.postForm(Self.tokenURL(base), [
                ("grant_type", "client_credentials"), ("client_id", "sandbox-box-client"), ("client_secret", "sandbox-box-secret"),
                ("box_subject_type", "enterprise"), ("box_subject_id", "sandbox-enterprise"),
            ])
            #expect(ccg.status == 200)
            #expect(ccg.json?["token_type"] == .string("bearer"))
            #expect(ccg.json?["expires_in"] == .int(3600))
            #expect(ccg.json?["restricted_to"] == .array([]))
            #expect(ccg.json?["issued_token_type"] == .string("urn:ietf:params:oauth:token-type:access_token"))
            let access = try #require(ccg.json?["access_token"]?.stringValue)

            let me = try await BSF.call("GET", Self.api(base, "/users/me"), token: access)
            #expect(me.status == 200)
            #expect(me.json?["type"] == .string("user"))

            let first = try await BSF.postForm(Self.tokenURL(base), [
                ("grant_type", "refresh_token"), ("refresh_token", "sandbox-box-refresh"),
                ("client_id", "sandbox-box-client"), ("client_secret", "sandbox-box-secret"),
            ])
            #expect(first.status == 200)
            let newRefresh = try #require(first.json?["refresh_token"]?.stringValue)
            #expect(newRefresh != "sandbox-box-refresh")
            let again = try await BSF.postForm(Self.tokenURL(base), [
                ("grant_type", "refresh_token"), ("refresh_token", "sandbox-box-refresh"),
                ("client_id", "sandbox-box-client"), ("client_secret", "sandbox-box-secret"),
            ])
            #expect(again.status == 400)
            #expect(again.json == .object([("error", .string("invalid_grant")), ("error_description", .string("Invalid refresh token"))]))

            let badClient = try await BSF.postForm(Self.tokenURL(base), [
                ("grant_type", "client_credentials"), ("client_id", "sandbox-box-client"), ("client_secret", "nope"),
                ("box_subject_type", "enterprise"), ("box_subject_id", "sandbox-enterprise"),
            ])
            #expect(badClient.status == 400)
            #expect(badClient.json == .object([("error", .string("invalid_client")),
                                               ("error_description", .string("The client credentials are invalid"))]))
            let badGrant = try await BSF.postForm(Self.tokenURL(base), [("grant_type", "password")])
            #expect(badGrant.status == 400)
            #expect(badGrant.json?["error"] == .string("unsupported_grant_type"))

            _ = try await TestHTTP.send("POST", BSF.url(base, "/_sandbox/expire-tokens"))
            let expired = try await BSF.call("GET", Self.api(base, "/users/me"), token: access)
            #expect(expired.status == 401)
            #expect(expired.body.isEmpty)
            #expect(expired.header("WWW-Authenticate") ==
                    #"Bearer realm="Service", error="invalid_token", error_description="The access token provided is invalid.""#)
            let missing = try await BSF.call("GET", Self.api(base, "/users/me"), token: nil)
            #expect(missing.status == 401)
            let folder = try await Self.createFolder(base, token: try await Self.ccgToken(base), name: "kept")
            #expect(folder.status == 201)
            return newRefresh
        }
        // A restarted sandbox on the same folder keeps the rotated refresh token and the folder.
        try await BSF.withSandbox(dir: dir) { base, _ in
            let r = try await BSF.postForm(Self.tokenURL(base), [
                ("grant_type", "refresh_token"), ("refresh_token", refreshed),
                ("client_id", "sandbox-box-client"), ("client_secret", "sandbox-box-secret"),
            ])
            #expect(r.status == 200)
            let token = try #require(r.json?["access_token"]?.stringValue)
            let items = try await BSF.call("GET", Self.api(base, "/folders/0/items"), token: token)
            #expect(items.json?["entries"]?.description.contains(#""name":"kept""#) == true)
        }
    }

    @Test("authorization code with PKCE S256: single use, verifier checked")
    func authorizationCode() async throws {
        try await BSF.withSandbox { base, _ in
            let verifier = "sandbox-verifier-0123456789-abcdefghijklmnopqrstuvwxyz"
            let challenge = try await BoxShareFileTestPKCE.s256(verifier)
            func code() async throws -> String {
                let page = try await TestHTTP.send("GET", BSF.url(base,
                    "/box/api/oauth2/authorize?response_type=code&client_id=sandbox-box-client&code_challenge=\(challenge)&code_challenge_method=S256"))
                #expect(page.status == 200)
                let text = page.text
                let start = try #require(text.range(of: #"<code id="auth-code">"#))
                let end = try #require(text.range(of: "</code>", range: start.upperBound..<text.endIndex))
                return String(text[start.upperBound..<end.lowerBound])
            }
            let c = try await code()
            let exchange: [(String, String)] = [("grant_type", "authorization_code"), ("code", c), ("code_verifier", verifier),
                                                ("client_id", "sandbox-box-client"), ("client_secret", "sandbox-box-secret")]
            let ok = try await BSF.postForm(Self.tokenURL(base), exchange)
            #expect(ok.status == 200)
            #expect(ok.json?["refresh_token"]?.stringValue != nil)
            let reused = try await BSF.postForm(Self.tokenURL(base), exchange)
            #expect(reused.status == 400)
            #expect(reused.json?["error"] == .string("invalid_grant"))
            let wrong = try await BSF.postForm(Self.tokenURL(base), [
                ("grant_type", "authorization_code"), ("code", try await code()), ("code_verifier", "not-the-verifier"),
                ("client_id", "sandbox-box-client"), ("client_secret", "sandbox-box-secret"),
            ])
            #expect(wrong.json?["error"] == .string("invalid_grant"))
        }
    }

    @Test("folder 409 carries a conflicts ARRAY, upload 409 a conflicts OBJECT; names; listing with fields and paging")
    func conflicts() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await Self.ccgToken(base)
            let created = try await Self.createFolder(base, token: token, name: "evidence")
            #expect(created.status == 201)
            let folderId = try #require(created.json?["id"]?.stringValue)
            #expect(created.json?["parent"]?["id"] == .string("0"))

            let dup = try await Self.createFolder(base, token: token, name: "EVIDENCE")
            #expect(dup.status == 409)
            #expect(dup.json?["type"] == .string("error"))
            #expect(dup.json?["status"] == .int(409))
            #expect(dup.json?["code"] == .string("item_name_in_use"))
            #expect(dup.json?["help_url"] == .string("http://developers.box.com/docs/#errors"))
            #expect(dup.json?["request_id"]?.stringValue != nil)
            guard case .array(let folderConflicts)? = dup.json?["context_info"]?["conflicts"] else {
                Issue.record("folder conflicts must be an array: \(dup.text)"); return
            }
            #expect(folderConflicts.first?["id"] == .string(folderId))
            #expect(folderConflicts.first?["type"] == .string("folder"))
            #expect(folderConflicts.first?["sequence_id"] != nil && folderConflicts.first?["etag"] != nil)

            let data = Data("hello box\n".utf8)
            let up = try await Self.uploadSmall(base, token: token, name: "a.txt", parent: folderId, data: data)
            #expect(up.status == 201)
            #expect(up.json?["total_count"] == .int(1))
            let fileId = try #require(up.json?["entries"]?.bsfFirst?["id"]?.stringValue)
            let again = try await Self.uploadSmall(base, token: token, name: "A.TXT", parent: folderId, data: data)
            #expect(again.status == 409)
            #expect(again.json?["code"] == .string("item_name_in_use"))
            guard case .object? = again.json?["context_info"]?["conflicts"] else {
                Issue.record("upload conflicts must be an object: \(again.text)"); return
            }
            #expect(again.json?["context_info"]?["conflicts"]?["id"] == .string(fileId))
            #expect(again.json?["context_info"]?["conflicts"]?["sha1"] == .string(try await BSF.sha1(data)))

            for bad in ["a/b", "a\\\\b", ".", "..", " lead", "trail "] {
                let r = try await Self.createFolder(base, token: token, name: bad)
                #expect(r.status == 400, "\(bad)")
                #expect(r.json?["code"] == .string("item_name_invalid"), "\(bad)")
            }
            let long = try await Self.createFolder(base, token: token, name: String(repeating: "x", count: 256))
            #expect(long.status == 400)

            _ = try await Self.createFolder(base, token: token, name: "sub", parent: folderId)
            let page1 = try await BSF.call("GET", Self.api(base, "/folders/\(folderId)/items?fields=name,sha1,size&limit=1&offset=0"), token: token)
            #expect(page1.json?["total_count"] == .int(2))
            #expect(page1.json?["limit"] == .int(1))
            #expect(page1.json?["entries"]?.bsfFirst?["type"] == .string("folder"))
            let page2 = try await BSF.call("GET", Self.api(base, "/folders/\(folderId)/items?fields=name,sha1,size&limit=1&offset=1"), token: token)
            let entry = page2.json?["entries"]?.bsfFirst
            #expect(entry?["name"] == .string("a.txt"))
            #expect(entry?["size"] == .int(Int64(data.count)))
            #expect(entry?["sha1"] == .string(try await BSF.sha1(data)))

            let file = try await BSF.call("GET", Self.api(base, "/files/\(fileId)"), token: token)
            #expect(file.json?["parent"]?["id"] == .string(folderId))
            #expect(file.json?["shared_link"] == .null)
            let missing = try await BSF.call("GET", Self.api(base, "/files/999"), token: token)
            #expect(missing.status == 404)
            #expect(missing.json?["code"] == .string("not_found"))

            let counters = try await BSF.counters(base)
            #expect(counters["uploads_by_path"]?["box:/evidence/a.txt"] == .int(1))
        }
    }

    @Test("small upload: attributes after file refused, Content-MD5 (SHA-1) mismatch refused, download by 302")
    func smallUpload() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await Self.ccgToken(base)
            let data = BSF.bytes(100_000)
            let sha1 = try await BSF.sha1(data)
            let order = try await Self.uploadSmall(base, token: token, name: "o.bin", parent: "0", data: data, fileFirst: true)
            #expect(order.status == 400)
            #expect(order.json?["code"] == .string("metadata_after_file_contents"))
            #expect(order.json?["message"]?.stringValue?.contains("attributes must be sent before file") == true)

            let wrong = try await Self.uploadSmall(base, token: token, name: "d.bin", parent: "0", data: data,
                                                   contentMD5: String(repeating: "0", count: 40))
            #expect(wrong.status == 400)
            #expect(wrong.json?["code"] == .string("bad_digest"))
            let listing = try await BSF.call("GET", Self.api(base, "/folders/0/items"), token: token)
            #expect(listing.json?["total_count"] == .int(0))

            let ok = try await Self.uploadSmall(base, token: token, name: "d.bin", parent: "0", data: data, contentMD5: sha1)
            #expect(ok.status == 201)
            let file = try #require(ok.json?["entries"]?.bsfFirst)
            #expect(file["sha1"] == .string(sha1))
            #expect(file["size"] == .int(100_000))
            let id = try #require(file["id"]?.stringValue)

            let redirect = try await BSF.noRedirect(Self.api(base, "/files/\(id)/content"), token: token)
            #expect(redirect.status == 302)
            let location = try #require(redirect.header("Location"))
            #expect(location.hasPrefix(base.absoluteString + "/box/dl/"))
            let bytes = try await TestHTTP.send("GET", URL(string: location)!)
            #expect(bytes.status == 200)
            #expect(bytes.body == data)

            let deleted = try await BSF.call("DELETE", Self.api(base, "/files/\(id)"), token: token)
            #expect(deleted.status == 204)
            #expect(try await BSF.call("GET", Self.api(base, "/files/\(id)"), token: token).status == 404)
        }
    }

    @Test("upload session: size floor, Content-Range and Digest checks, first commit 202 Retry-After, then 201 with the right SHA-1")
    func uploadSession() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await Self.ccgToken(base)
            let folder = try await Self.createFolder(base, token: token, name: "evidence")
            let folderId = try #require(folder.json?["id"]?.stringValue)

            let small = try await BSF.call("POST", Self.upload(base, "/files/upload_sessions"), token: token,
                                           json: #"{"folder_id":"\#(folderId)","file_size":1000,"file_name":"s.bin"}"#)
            #expect(small.status == 400)
            #expect(small.json?["code"] == .string("file_size_too_small"))

            let size = 8_388_608 * 2 + 4_000_123
            let data = BSF.bytes(size, seed: 3)
            let created = try await BSF.call("POST", Self.upload(base, "/files/upload_sessions"), token: token,
                                             json: #"{"folder_id":"\#(folderId)","file_size":\#(size),"file_name":"big.bin"}"#)
            #expect(created.status == 201)
            let session = try #require(created.json)
            #expect(session["type"] == .string("upload_session"))
            #expect(session["part_size"] == .int(8_388_608))
            #expect(session["total_parts"] == .int(3))
            #expect(session["num_parts_processed"] == .int(0))
            let partURL = try #require(session["session_endpoints"]?["upload_part"]?.stringValue)
            let commitURL = try #require(session["session_endpoints"]?["commit"]?.stringValue)
            #expect(partURL.hasPrefix(base.absoluteString + "/box/upload/api/2.0/files/upload_sessions/"))

            func put(_ offset: Int, _ length: Int, digest: String?) async throws -> HTTPResult {
                let chunk = data.subdata(in: offset..<(offset + length))
                var headers = ["Content-Range": "bytes \(offset)-\(offset + length - 1)/\(size)",
                               "Content-Type": "application/octet-stream"]
                if let digest { headers["Digest"] = digest }
                return try await BSF.call("PUT", URL(string: partURL)!, token: token, body: chunk, headers: headers)
            }
            func digest(_ offset: Int, _ length: Int) async throws -> String {
                "sha=" + BSF.base64(hex: try await BSF.sha1(data.subdata(in: offset..<(offset + length))))
            }
            let wrongSize = try await put(0, 1_000_000, digest: try await digest(0, 1_000_000))
            #expect(wrongSize.status == 416)
            let noDigest = try await put(0, 8_388_608, digest: nil)
            #expect(noDigest.status == 400)
            let badDigest = try await put(0, 8_388_608, digest: try await digest(8_388_608, 8_388_608))
            #expect(badDigest.status == 400)
            #expect(badDigest.json?["code"] == .string("bad_digest"))

            var parts: [String] = []
            for (offset, length) in [(0, 8_388_608), (8_388_608, 8_388_608), (16_777_216, 4_000_123)] {
                let r = try await put(offset, length, digest: try await digest(offset, length))
                #expect(r.status == 200, "\(r.text)")
                let part = try #require(r.json?["part"])
                #expect(part["offset"] == .int(Int64(offset)))
                #expect(part["size"] == .int(Int64(length)))
                #expect(part["part_id"]?.stringValue?.count == 8)
                parts.append(part.description)
            }
            // Re-sending a part is fine and gives the same part.
            let resent = try await put(0, 8_388_608, digest: try await digest(0, 8_388_608))
            #expect(resent.json?["part"]?.description == parts[0])

            let listed = try await BSF.call("GET", URL(string: partURL + "/parts")!, token: token)
            #expect(listed.json?["total_count"] == .int(3))
            let status = try await BSF.call("GET", URL(string: partURL)!, token: token)
            #expect(status.json?["num_parts_processed"] == .int(3))

            let sha1 = try await BSF.sha1(data)
            let commitBody = #"{"parts":[\#(parts.joined(separator: ","))]}"#
            let badList = try await BSF.call("POST", URL(string: commitURL)!, token: token,
                                             json: #"{"parts":[\#(parts[0])]}"#, headers: ["Digest": "sha=" + BSF.base64(hex: sha1)])
            #expect(badList.status == 400)
            let first = try await BSF.call("POST", URL(string: commitURL)!, token: token, json: commitBody,
                                           headers: ["Digest": "sha=" + BSF.base64(hex: sha1)])
            #expect(first.status == 202)
            #expect(first.header("Retry-After") == "1")
            #expect(first.body.isEmpty)
            let wrong = try await BSF.call("POST", URL(string: commitURL)!, token: token, json: commitBody,
                                           headers: ["Digest": "sha=" + BSF.base64(hex: String(repeating: "1", count: 40))])
            #expect(wrong.status == 400)
            #expect(wrong.json?["code"] == .string("digest_mismatch"))
            let done = try await BSF.call("POST", URL(string: commitURL)!, token: token, json: commitBody,
                                          headers: ["Digest": "sha=" + BSF.base64(hex: sha1)])
            #expect(done.status == 201, "\(done.text)")
            #expect(done.json?["entries"]?.bsfFirst?["sha1"] == .string(sha1))
            #expect(done.json?["entries"]?.bsfFirst?["size"] == .int(Int64(size)))
            #expect(try await BSF.call("GET", URL(string: partURL)!, token: token).status == 404)

            let counters = try await BSF.counters(base)
            #expect(counters["uploads_by_path"]?["box:/evidence/big.bin"] == .int(1))
        }
    }

    @Test("corrupt-next-upload: the stored SHA-1 differs from the sent bytes; shared links on a free account")
    func corruptionAndSharing() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await Self.ccgToken(base)
            let data = BSF.bytes(4096, seed: 9)
            let sha1 = try await BSF.sha1(data)
            _ = try await TestHTTP.send("POST", BSF.url(base, "/_sandbox/corrupt-next-upload?provider=box"))
            let r = try await Self.uploadSmall(base, token: token, name: "c.bin", parent: "0", data: data)
            #expect(r.status == 201)
            let file = try #require(r.json?["entries"]?.bsfFirst)
            #expect(file["sha1"]?.stringValue != sha1)
            let id = try #require(file["id"]?.stringValue)

            let shared = try await BSF.call("PUT", Self.api(base, "/files/\(id)?fields=shared_link"), token: token,
                                            json: #"{"shared_link":{"access":"open"}}"#)
            #expect(shared.status == 200)
            let link = try #require(shared.json?["shared_link"])
            #expect(link["url"]?.stringValue?.hasPrefix("https://app.box.com/s/") == true)
            #expect(link["access"] == .string("open"))
            #expect(link["is_password_enabled"] == .bool(false))
            #expect(shared.json?["name"] == nil, "fields=shared_link answers only type, id, etag and shared_link")
            let again = try await BSF.call("PUT", Self.api(base, "/files/\(id)?fields=shared_link"), token: token,
                                           json: #"{"shared_link":{"access":"open","password":"s3cret-Pass"}}"#)
            #expect(again.json?["shared_link"]?["url"] == link["url"])
            #expect(again.json?["shared_link"]?["is_password_enabled"] == .bool(true))
            let company = try await BSF.call("PUT", Self.api(base, "/files/\(id)?fields=shared_link"), token: token,
                                             json: #"{"shared_link":{"access":"company"}}"#)
            #expect(company.status == 400)
            #expect(company.json?["code"] == .string("bad_request"))
            let expiring = try await BSF.call("PUT", Self.api(base, "/files/\(id)?fields=shared_link"), token: token,
                                              json: #"{"shared_link":{"access":"open","unshared_at":"2026-12-01T00:00:00Z"}}"#)
            #expect(expiring.status == 403)
            #expect(expiring.json?["code"] == .string("access_denied_insufficient_permissions"))
        }
    }
}

extension JSONValue {
    /// The first element of an array value.
    var bsfFirst: JSONValue? {
        if case .array(let items) = self { return items.first }
        return nil
    }
}

/// PKCE S256 with the system's `sha256sum` (independent of the emulation's code path).
enum BoxShareFileTestPKCE {
    static func s256(_ verifier: String) async throws -> String {
        let hex = try await BSF.systemDigest(Data(verifier.utf8), tool: "sha256sum")
        return BSF.base64(hex: hex)
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
