import EvidenceSandbox
import Foundation
import Testing

@Suite("ShareFile emulation")
struct ShareFileEmulatorTests {
    static func tokenURL(_ base: URL) -> URL { BSF.url(base, "/sharefile/oauth/token") }
    static func api(_ base: URL, _ path: String) -> URL { BSF.url(base, "/sharefile/sf/v3" + path) }

    static func passwordGrant(_ base: URL, password: String = "sandbox-password") async throws -> HTTPResult {
        try await BSF.postForm(tokenURL(base), [
            ("grant_type", "password"), ("username", "sandbox@example.org"), ("password", password),
            ("client_id", "sandbox-sharefile-client"), ("client_secret", "sandbox-sharefile-secret"),
        ])
    }

    static func token(_ base: URL) async throws -> String {
        try #require(try await passwordGrant(base).json?["access_token"]?.stringValue)
    }

    static func upload2(_ base: URL, token: String, folder: String, name: String, length: Int, method: String,
                        overwrite: Bool = false) async throws -> HTTPResult {
        try await BSF.call("POST", api(base, "/Items(\(folder))/Upload2"), token: token, json: """
            {"Method":"\(method)","Raw":true,"FileName":"\(name)","FileSize":\(length),"Overwrite":\(overwrite),"Unzip":false}
            """)
    }

    @Test("password and refresh grants, bad password, 401 shape after expire-tokens, authorization code")
    func tokens() async throws {
        try await BSF.withSandbox { base, _ in
            let r = try await Self.passwordGrant(base)
            #expect(r.status == 200)
            let json = try #require(r.json)
            #expect(json["token_type"] == .string("bearer"))
            #expect(json["appcp"] == .string("sharefile.com"))
            #expect(json["apicp"] == .string("sf-api.com"))
            #expect(json["subdomain"] == .string("sandbox"))
            #expect(json["expires_in"] == .int(3600))
            let refresh = try #require(json["refresh_token"]?.stringValue)
            let access = try #require(json["access_token"]?.stringValue)

            let bad = try await Self.passwordGrant(base, password: "wrong")
            #expect(bad.status == 400)
            #expect(bad.json?["error"] == .string("invalid_grant"))

            _ = try await TestHTTP.send("POST", BSF.url(base, "/_sandbox/expire-tokens"))
            let expired = try await BSF.call("GET", Self.api(base, "/Items"), token: access)
            #expect(expired.status == 401)
            #expect(expired.json == .object([("code", .string("Unauthorized")),
                                             ("message", .object([("lang", .string("en-US")), ("value", .string("Unauthorized"))])),
                                             ("reason", .string("Unauthorized"))]))
            for _ in 0..<2 {  // ShareFile refresh tokens are reusable
                let refreshed = try await BSF.postForm(Self.tokenURL(base), [
                    ("grant_type", "refresh_token"), ("refresh_token", refresh),
                    ("client_id", "sandbox-sharefile-client"), ("client_secret", "sandbox-sharefile-secret"),
                ])
                #expect(refreshed.status == 200)
                #expect(refreshed.json?["refresh_token"] == .string(refresh))
                let fresh = try #require(refreshed.json?["access_token"]?.stringValue)
                #expect(try await BSF.call("GET", Self.api(base, "/Items"), token: fresh).status == 200)
            }

            let page = try await TestHTTP.send("GET", BSF.url(base, "/sharefile/oauth/authorize?response_type=code&client_id=sandbox-sharefile-client&state=xyz"))
            let text = page.text
            let start = try #require(text.range(of: #"<code id="auth-code">"#))
            let end = try #require(text.range(of: "</code>", range: start.upperBound..<text.endIndex))
            let code = String(text[start.upperBound..<end.lowerBound])
            let exchange: [(String, String)] = [("grant_type", "authorization_code"), ("code", code),
                                                ("client_id", "sandbox-sharefile-client"), ("client_secret", "sandbox-sharefile-secret")]
            #expect(try await BSF.postForm(Self.tokenURL(base), exchange).status == 200)
            #expect(try await BSF.postForm(Self.tokenURL(base), exchange).json?["error"] == .string("invalid_grant"))
        }
    }

    @Test("home, ByPath, folder create, 409 Conflict, overwrite=true answers the existing folder, bad names, children")
    func folders() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await Self.token(base)
            let home = try await BSF.call("GET", Self.api(base, "/Items"), token: token)
            #expect(home.status == 200)
            #expect(home.json?["odata.type"] == .string("ShareFile.Api.Models.Folder"))
            let homeId = try #require(home.json?["Id"]?.stringValue)
            #expect(homeId.hasPrefix("fo"))
            // Absolute paths start at the account root, above the home folder.
            let root = try await BSF.call("GET", Self.api(base, "/Items/ByPath?path=/"), token: token)
            #expect(root.json?["Id"] != nil && root.json?["Id"] != .string(homeId))
            let homeByPath = try await BSF.call("GET", Self.api(base, "/Items/ByPath?path=/My%20Files%20%26%20Folders"), token: token)
            #expect(homeByPath.json?["Id"] == .string(homeId))

            let created = try await BSF.call("POST", Self.api(base, "/Items(\(homeId))/Folder?overwrite=false"), token: token,
                                             json: #"{"Name":"evidence","Description":"archive"}"#)
            #expect(created.status == 200)
            let folderId = try #require(created.json?["Id"]?.stringValue)
            let dup = try await BSF.call("POST", Self.api(base, "/Items(\(homeId))/Folder?overwrite=false"), token: token,
                                         json: #"{"Name":"Evidence"}"#)
            #expect(dup.status == 409)
            #expect(dup.json?["code"] == .string("Conflict"))
            #expect(dup.json?["message"]?["value"] == .string("A folder with the same name already exists"))
            #expect(dup.json?["message"]?["lang"] == .string("en-US"))
            let existing = try await BSF.call("POST", Self.api(base, "/Items(\(homeId))/Folder?overwrite=true"), token: token,
                                              json: #"{"Name":"evidence"}"#)
            #expect(existing.json?["Id"] == .string(folderId))
            for bad in ["a:b", "a*b", "a?b", "a<b", "a|b", "a\\\"b"] {
                let r = try await BSF.call("POST", Self.api(base, "/Items(\(homeId))/Folder"), token: token, json: #"{"Name":"\#(bad)"}"#)
                #expect(r.status == 400, "\(bad)")
                #expect(r.json?["code"] == .string("BadRequest"))
            }
            let sub = try await BSF.call("POST", Self.api(base, "/Items(\(folderId))/Folder"), token: token, json: #"{"Name":"2026"}"#)
            let subId = try #require(sub.json?["Id"]?.stringValue)
            let byPath = try await BSF.call("GET", Self.api(base, "/Items(\(homeId))/ByPath?path=/EVIDENCE/2026"), token: token)
            #expect(byPath.json?["Id"] == .string(subId))
            let notAbsolute = try await BSF.call("GET", Self.api(base, "/Items/ByPath?path=/evidence/2026"), token: token)
            #expect(notAbsolute.status == 404, "absolute paths start above the home folder")
            let missing = try await BSF.call("GET", Self.api(base, "/Items(\(homeId))/ByPath?path=/evidence/nope"), token: token)
            #expect(missing.status == 404)
            #expect(missing.json?["code"] == .string("NotFound"))
            let children = try await BSF.call("GET", Self.api(base, "/Items(\(folderId))/Children"), token: token)
            guard case .array(let values)? = children.json?["value"] else { Issue.record("no value array"); return }
            #expect(values.count == 1)
            #expect(values.first?["Name"] == .string("2026"))
            #expect(try await BSF.call("DELETE", Self.api(base, "/Items(\(subId))"), token: token).status == 204)
            #expect(try await BSF.call("GET", Self.api(base, "/Items(\(subId))"), token: token).status == 404)
        }
    }

    @Test("Standard upload: MD5 Hash, overwrite false → 409, download by 302, uploads_by_path; corruption changes the Hash")
    func standardUpload() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await Self.token(base)
            let homeId = try #require(try await BSF.call("GET", Self.api(base, "/Items"), token: token).json?["Id"]?.stringValue)
            let folder = try await BSF.call("POST", Self.api(base, "/Items(\(homeId))/Folder"), token: token, json: #"{"Name":"evidence"}"#)
            let folderId = try #require(folder.json?["Id"]?.stringValue)
            let data = BSF.bytes(300_000, seed: 5)
            let md5 = try await BSF.md5(data)

            let spec = try await Self.upload2(base, token: token, folder: folderId, name: "clip.mp4", length: data.count, method: "Standard")
            #expect(spec.status == 200)
            #expect(spec.json?["odata.type"] == .string("ShareFile.Api.Models.UploadSpecification"))
            #expect(spec.json?["IsResume"] == .bool(false))
            let chunkURI = try #require(spec.json?["ChunkUri"]?.stringValue)
            let stored = try await TestHTTP.send("POST", URL(string: chunkURI + "&fmt=json")!, body: data)
            #expect(stored.status == 200)
            #expect(stored.json?["error"] == .bool(false))
            let value = try #require(stored.json?["value"]?.bsfFirst)
            #expect(value["md5"] == .string(md5))
            #expect(value["size"] == .int(300_000))
            let fileId = try #require(value["id"]?.stringValue)
            #expect(fileId.hasPrefix("fi"))

            let item = try await BSF.call("GET", Self.api(base, "/Items(home)/ByPath?path=/evidence/clip.mp4"), token: token)
            #expect(item.json?["Hash"] == .string(md5))
            #expect(item.json?["FileSizeBytes"] == .int(300_000))
            #expect(item.json?["odata.type"] == .string("ShareFile.Api.Models.File"))

            let conflict = try await Self.upload2(base, token: token, folder: folderId, name: "CLIP.mp4", length: data.count, method: "Standard")
            #expect(conflict.status == 409)
            #expect(conflict.json?["code"] == .string("Conflict"))

            let redirect = try await BSF.noRedirect(Self.api(base, "/Items(\(fileId))/Download"), token: token)
            #expect(redirect.status == 302)
            let location = try #require(redirect.header("Location"))
            #expect(try await TestHTTP.send("GET", URL(string: location)!).body == data)

            _ = try await TestHTTP.send("POST", BSF.url(base, "/_sandbox/corrupt-next-upload?provider=sharefile"))
            let spec2 = try await Self.upload2(base, token: token, folder: folderId, name: "clip.mp4", length: data.count,
                                               method: "Standard", overwrite: true)
            let chunk2 = try #require(spec2.json?["ChunkUri"]?.stringValue)
            let corrupted = try await TestHTTP.send("POST", URL(string: chunk2 + "&fmt=json")!, body: data)
            #expect(corrupted.json?["error"] == .bool(false))
            #expect(corrupted.json?["value"]?.bsfFirst?["md5"]?.stringValue != md5)

            let counters = try await BSF.counters(base)
            #expect(counters["uploads_by_path"]?["sharefile:/evidence/clip.mp4"] == .int(2))
        }
    }

    @Test("Threaded upload: chunk MD5 check, chunks in any order, finish with a gap or a wrong filehash is HTTP 200 error:true, resume, share")
    func threadedUploadAndShare() async throws {
        try await BSF.withSandbox { base, _ in
            let token = try await Self.token(base)
            let homeId = try #require(try await BSF.call("GET", Self.api(base, "/Items"), token: token).json?["Id"]?.stringValue)
            let chunkSize = 1_000_000
            let data = BSF.bytes(chunkSize * 3 + 12_345, seed: 11)
            let md5 = try await BSF.md5(data)
            let spec = try await Self.upload2(base, token: token, folder: homeId, name: "big.mov", length: data.count, method: "Threaded")
            #expect(spec.status == 200)
            let chunkURI = try #require(spec.json?["ChunkUri"]?.stringValue)
            let finishURI = try #require(spec.json?["FinishUri"]?.stringValue)

            func post(_ index: Int, _ offset: Int, hash: String? = nil) async throws -> HTTPResult {
                let chunk = data.subdata(in: offset..<min(offset + chunkSize, data.count))
                var h = hash ?? ""
                if hash == nil { h = try await BSF.md5(chunk) }
                return try await TestHTTP.send("POST", URL(string: chunkURI + "&index=\(index)&byteOffset=\(offset)&hash=\(h)")!, body: chunk)
            }
            let badHash = try await post(0, 0, hash: String(repeating: "0", count: 32))
            #expect(badHash.status == 200)
            #expect(badHash.json?["error"] == .bool(true))
            #expect(try await post(0, 0).json?["error"] == .bool(false))
            #expect(try await post(1, chunkSize).json?["error"] == .bool(false))
            // Threaded chunks travel in parallel: one past a gap is taken and kept.
            let ahead = try await post(3, chunkSize * 3)
            #expect(ahead.status == 200)
            #expect(ahead.json?["error"] == .bool(false))

            let early = try await TestHTTP.send("POST", URL(string: finishURI + "&respformat=json&filehash=\(md5)")!)
            #expect(early.status == 200)
            #expect(early.json?["error"] == .bool(true))
            #expect(early.json?["expectedByteOffset"] == .int(Int64(chunkSize * 2)), "the first missing byte")

            // The client "crashed": a new Upload2 for the same file resumes the same upload.
            let resumed = try await Self.upload2(base, token: token, folder: homeId, name: "big.mov", length: data.count, method: "Threaded")
            #expect(resumed.json?["IsResume"] == .bool(true))
            #expect(resumed.json?["ResumeOffset"] == .int(Int64(chunkSize * 2)))
            #expect(resumed.json?["ResumeIndex"] == .int(2))
            #expect(resumed.json?["ResumeFileHash"] == .string(try await BSF.md5(data.subdata(in: 0..<(chunkSize * 2)))))
            #expect(resumed.json?["ChunkUri"] == .string(chunkURI))
            #expect(try await post(2, chunkSize * 2).json?["error"] == .bool(false))
            #expect(try await post(3, chunkSize * 3).json?["error"] == .bool(false))

            let wrong = try await TestHTTP.send("POST", URL(string: finishURI + "&respformat=json&filehash=\(String(repeating: "a", count: 32))")!)
            #expect(wrong.status == 200)
            #expect(wrong.json?["error"] == .bool(true))
            #expect(wrong.json?["errorMessage"]?.stringValue != nil)
            #expect(wrong.json?["errorCode"] != nil)
            let done = try await TestHTTP.send("POST", URL(string: finishURI + "&respformat=json&filehash=\(md5)")!)
            #expect(done.json?["error"] == .bool(false))
            let value = try #require(done.json?["value"]?.bsfFirst)
            #expect(value["md5"] == .string(md5))
            let fileId = try #require(value["id"]?.stringValue)

            let share = try await BSF.call("POST", Self.api(base, "/Shares?notify=false"), token: token, json: """
                {"ShareType":"Send","Title":"evidence","Items":[{"Id":"\(fileId)"}],"ExpirationDate":"2026-12-01T00:00:00Z","RequireLogin":false,"RequireUserInfo":false}
                """)
            #expect(share.status == 200)
            #expect(share.json?["odata.type"] == .string("ShareFile.Api.Models.Share"))
            let shareId = try #require(share.json?["Id"]?.stringValue)
            #expect(shareId.hasPrefix("s"))
            #expect(share.json?["Uri"] == .string("https://sandbox.sharefile.com/d-\(shareId)"))
            #expect(share.json?["ExpirationDate"] == .string("2026-12-01T00:00:00.000Z"))
            let list = try await BSF.call("GET", Self.api(base, "/Shares"), token: token)
            let first = try #require(list.json?["value"]?.bsfFirst)
            #expect(first["Id"] == .string(shareId))
            #expect(first["Items"]?.bsfFirst?["Id"] == .string(fileId))

            let counters = try await BSF.counters(base)
            #expect(counters["uploads_by_path"]?["sharefile:/big.mov"] == .int(1))
        }
    }
}
