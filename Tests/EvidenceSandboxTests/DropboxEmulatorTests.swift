import EvidenceSandbox
import EvidenceTesting
import Foundation
import Testing

@Suite("Dropbox emulation")
struct DropboxEmulatorTests {
    static let mib = 1024 * 1024

    @Test("refresh grant, account, 401 expired_access_token after expire-tokens, OAuth errors")
    func tokens() async throws {
        try await withProviderSandbox { base in
            var dbx = try await DropboxClient(base: base).refreshed()
            #expect(dbx.token.hasPrefix("sl."))
            let account = try await dbx.rpc("users/get_current_account", "null")
            #expect(account.status == 200)
            #expect(account.json?["name"]?["display_name"] == .string("Sandbox User"))
            #expect(try await dbx.rpc("users/get_current_account", nil).status == 200)

            _ = try await TestHTTP.send("POST", dbx.url("/_sandbox/expire-tokens"))
            let expired = try await dbx.rpc("users/get_current_account", "null")
            #expect(expired.status == 401)
            #expect(expired.text == #"{"error_summary":"expired_access_token/","error":{".tag":"expired_access_token"}}"#)
            dbx.token = "sl.nonsense"
            #expect(try await dbx.rpc("users/get_current_account", "null").json?["error"]?[".tag"] == .string("invalid_access_token"))
            dbx = try await dbx.refreshed()
            #expect(try await dbx.rpc("users/get_current_account", "null").status == 200)

            // Basic client authentication works too; bad credentials and grants are 400s.
            let basic = Data("\(DropboxClient.key):\(DropboxClient.secret)".utf8).base64EncodedString()
            let viaBasic = try await dbx.form("/dropbox/api/oauth2/token", [("grant_type", "refresh_token"), ("refresh_token", DropboxClient.refresh)],
                                              headers: ["Authorization": "Basic \(basic)"])
            #expect(viaBasic.status == 200)
            #expect(viaBasic.json?["token_type"] == .string("bearer"))
            #expect(viaBasic.json?["expires_in"] == .int(3600))
            let badGrant = try await dbx.form("/dropbox/api/oauth2/token", [("grant_type", "refresh_token"), ("refresh_token", "nope"),
                                                                           ("client_id", DropboxClient.key), ("client_secret", DropboxClient.secret)])
            #expect(badGrant.status == 400)
            #expect(badGrant.text == #"{"error":"invalid_grant","error_description":"refresh token is invalid or revoked"}"#)
            let badClient = try await dbx.form("/dropbox/api/oauth2/token", [("grant_type", "refresh_token"), ("refresh_token", DropboxClient.refresh),
                                                                            ("client_id", DropboxClient.key), ("client_secret", "wrong")])
            #expect(badClient.status == 400)
            #expect(badClient.json?["error"] == .string("invalid_client"))
            let badType = try await dbx.form("/dropbox/api/oauth2/token", [("grant_type", "password")])
            #expect(badType.json?["error"] == .string("unsupported_grant_type"))
        }
    }

    @Test("PKCE paste-back flow: authorize page shows a single-use code; a wrong verifier is invalid_grant")
    func pkce() async throws {
        try await withProviderSandbox { base in
            let dbx = DropboxClient(base: base)
            let verifier = String(repeating: "v3rifier-", count: 6)
            let challenge = "k9jO6c2sVwlF2Y6bH6c9wZmB_pqZ1NnXDm8BkR8aQ0c"  // not derived from `verifier` on purpose
            func code(_ challenge: String) async throws -> String {
                let page = try await TestHTTP.send("GET", dbx.url("/dropbox/oauth2/authorize?client_id=\(DropboxClient.key)&response_type=code&code_challenge=\(challenge)&code_challenge_method=S256&token_access_type=offline"))
                #expect(page.status == 200)
                let text = page.text
                let start = try #require(text.range(of: "<code id=\"auth-code\">"))
                let end = try #require(text.range(of: "</code>", range: start.upperBound..<text.endIndex))
                return String(text[start.upperBound..<end.lowerBound])
            }
            let wrong = try await code(challenge)
            let refused = try await dbx.form("/dropbox/api/oauth2/token", [("grant_type", "authorization_code"), ("code", wrong),
                                                                          ("code_verifier", verifier), ("client_id", DropboxClient.key)])
            #expect(refused.status == 400)
            #expect(refused.json?["error"] == .string("invalid_grant"))

            let good = try await code(try await s256WithOpenSSL(verifier))
            let ok = try await dbx.form("/dropbox/api/oauth2/token", [("grant_type", "authorization_code"), ("code", good),
                                                                     ("code_verifier", verifier), ("client_id", DropboxClient.key)])
            #expect(ok.status == 200)
            let refresh = try #require(ok.json?["refresh_token"]?.stringValue)
            #expect(ok.json?["account_id"]?.stringValue?.hasPrefix("dbid:") == true)
            let reused = try await dbx.form("/dropbox/api/oauth2/token", [("grant_type", "authorization_code"), ("code", good),
                                                                         ("code_verifier", verifier), ("client_id", DropboxClient.key)])
            #expect(reused.json?["error"] == .string("invalid_grant"))
            // A PKCE refresh token refreshes with the client id alone.
            let again = try await dbx.form("/dropbox/api/oauth2/token", [("grant_type", "refresh_token"), ("refresh_token", refresh),
                                                                        ("client_id", DropboxClient.key)])
            #expect(again.status == 200)
        }
    }

    @Test("create_folder_v2: parents created, exact conflict shapes, case-insensitive paths, bad content type")
    func folders() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let made = try await dbx.rpc("files/create_folder_v2", #"{"path":"/Evidence/2026","autorename":false}"#)
            #expect(made.status == 200)
            #expect(made.json?["metadata"]?["path_display"] == .string("/Evidence/2026"))
            #expect(made.json?["metadata"]?["path_lower"] == .string("/evidence/2026"))
            let again = try await dbx.rpc("files/create_folder_v2", #"{"path":"/evidence/2026","autorename":false}"#)
            #expect(again.status == 409)
            #expect(again.text == #"{"error_summary":"path/conflict/folder/..","error":{".tag":"path","path":{".tag":"conflict","conflict":{".tag":"folder"}}}}"#)
            let parent = try await dbx.rpc("files/get_metadata", #"{"path":"/EVIDENCE"}"#)
            #expect(parent.json?[".tag"] == .string("folder"))
            #expect(parent.json?["path_display"] == .string("/Evidence"))

            _ = try await dbx.content("files/upload", arg: #"{"path":"/Evidence/note.txt","mode":"add"}"#, body: Data("hi".utf8))
            let underFile = try await dbx.rpc("files/create_folder_v2", #"{"path":"/Evidence/note.txt/sub"}"#)
            #expect(underFile.status == 409)
            #expect(underFile.json?["error_summary"] == .string("path/conflict/file/.."))

            let missing = try await dbx.rpc("files/get_metadata", #"{"path":"/nothing/here"}"#)
            #expect(missing.status == 409)
            #expect(missing.text == #"{"error_summary":"path/not_found/..","error":{".tag":"path","path":{".tag":"not_found"}}}"#)

            let wrongType = try await dbx.rpc("files/get_metadata", #"{"path":"/Evidence"}"#, contentType: "application/x-www-form-urlencoded")
            #expect(wrongType.status == 400)
            #expect(wrongType.text.hasPrefix(#"Error in call to API function "files/get_metadata": Bad HTTP "Content-Type" header"#))
            let badPath = try await dbx.rpc("files/get_metadata", #"{"path":"Evidence"}"#)
            #expect(badPath.status == 400)

            let deleted = try await dbx.rpc("files/delete_v2", #"{"path":"/evidence/NOTE.txt"}"#)
            #expect(deleted.json?["metadata"]?[".tag"] == .string("file"))
            let gone = try await dbx.rpc("files/delete_v2", #"{"path":"/evidence/note.txt"}"#)
            #expect(gone.text == #"{"error_summary":"path_lookup/not_found/..","error":{".tag":"path_lookup","path_lookup":{".tag":"not_found"}}}"#)
        }
    }

    @Test("upload 9 MiB: content_hash equals an independent computation; add conflicts; download; counted once")
    func uploadAndHash() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let body = testBytes(9 * Self.mib, seed: 1)
            let expected = try await dropboxHashWithOpenSSL(body)
            let up = try await dbx.content("files/upload", arg: #"{"path":"/Evidence/2026/a.mp4","mode":"add","autorename":false,"mute":true,"strict_conflict":false}"#, body: body)
            #expect(up.status == 200)
            #expect(up.json?["content_hash"] == .string(expected))
            #expect(up.json?["size"] == .int(Int64(body.count)))
            let meta = try await dbx.rpc("files/get_metadata", #"{"path":"/evidence/2026/A.MP4"}"#)
            #expect(meta.json?["content_hash"] == .string(expected))
            #expect(meta.json?[".tag"] == .string("file"))
            #expect(meta.json?["id"]?.stringValue?.hasPrefix("id:") == true)

            // Same content again with mode add: Dropbox sees no conflict (strict_conflict=false).
            let same = try await dbx.content("files/upload", arg: #"{"path":"/Evidence/2026/a.mp4","mode":"add"}"#, body: body)
            #expect(same.status == 200)
            #expect(same.json?["rev"] == up.json?["rev"])
            // Different content: conflict, with an upload session holding the bytes.
            let other = try await dbx.content("files/upload", arg: #"{"path":"/Evidence/2026/a.mp4","mode":"add"}"#, body: Data("other".utf8))
            #expect(other.status == 409)
            #expect(other.json?["error_summary"] == .string("path/conflict/file/.."))
            #expect(other.json?["error"]?["reason"] == .object([(".tag", .string("conflict")), ("conflict", .object([(".tag", .string("file"))]))]))
            let session = try #require(other.json?["error"]?["upload_session_id"]?.stringValue)
            let elsewhere = try await dbx.content("files/upload_session/finish",
                                                  arg: #"{"cursor":{"session_id":"\#(session)","offset":5},"commit":{"path":"/Evidence/2026/other.txt","mode":"add"}}"#)
            #expect(elsewhere.status == 200)
            #expect(elsewhere.json?["size"] == .int(5))
            let strict = try await dbx.content("files/upload", arg: #"{"path":"/Evidence/2026/a.mp4","mode":"add","strict_conflict":true}"#, body: body)
            #expect(strict.status == 409)

            let down = try await dbx.content("files/download", arg: #"{"path":"/Evidence/2026/a.mp4"}"#, contentType: "")
            #expect(down.status == 200)
            #expect(down.body == body)
            let result = try #require(down.header("Dropbox-API-Result"))
            #expect(try JSONValue.parse(Data(result.utf8))["content_hash"] == .string(expected))

            let counts = try await dbx.counters()
            #expect(counts["uploads_by_path"]?["dropbox:/Evidence/2026/a.mp4"] == .int(1))
            #expect(counts["uploads_by_path"]?["dropbox:/Evidence/2026/other.txt"] == .int(1))
        }
    }

    @Test("upload session: incorrect_offset gives correct_offset, a sequential session takes a piece of any length, resume after restart, finish")
    func sessions() async throws {
        let dir = try makeTemporaryDirectory("dbxsess")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let block = 4 * Self.mib
        let body = testBytes(2 * block + 1000, seed: 2)
        let expected = try await dropboxHashWithOpenSSL(body)
        let session: String = try await withProviderSandbox(stateDirectory: dir) { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let start = try await dbx.content("files/upload_session/start", arg: #"{"close":false}"#, body: body.subdata(in: 0..<block))
            #expect(start.status == 200)
            let id = try #require(start.json?["session_id"]?.stringValue)
            // A client that lost track and resends from 0 is told where to resume.
            let wrong = try await dbx.content("files/upload_session/append_v2", arg: #"{"cursor":{"session_id":"\#(id)","offset":0},"close":false}"#,
                                              body: body.subdata(in: 0..<block))
            #expect(wrong.status == 409)
            #expect(wrong.text == #"{"error_summary":"incorrect_offset/..","error":{".tag":"incorrect_offset","correct_offset":\#(block)}}"#)
            // Only concurrent sessions need 4 MiB pieces (rclone's 1 MiB chunks go in a sequential one).
            let odd = try await dbx.content("files/upload_session/append_v2", arg: #"{"cursor":{"session_id":"\#(id)","offset":\#(block)},"close":false}"#,
                                            body: body.subdata(in: block..<(block + 1000)))
            #expect(odd.status == 200)
            #expect(odd.text == "null")
            let unknown = try await dbx.content("files/upload_session/append_v2", arg: #"{"cursor":{"session_id":"nope","offset":0},"close":false}"#)
            #expect(unknown.text == #"{"error_summary":"not_found/..","error":{".tag":"not_found"}}"#)
            return id
        }
        // The session survives a restart: resume at the offset the server reports.
        try await withProviderSandbox(stateDirectory: dir) { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let probe = try await dbx.content("files/upload_session/append_v2", arg: #"{"cursor":{"session_id":"\#(session)","offset":0},"close":false}"#)
            let resumeAt = try #require(probe.json?["error"]?["correct_offset"])
            #expect(resumeAt == .int(Int64(block + 1000)))
            let append = try await dbx.content("files/upload_session/append_v2", arg: #"{"cursor":{"session_id":"\#(session)","offset":\#(block + 1000)},"close":false}"#,
                                               body: body.subdata(in: (block + 1000)..<(2 * block)))
            #expect(append.status == 200)
            #expect(append.text == "null")
            let finishWrong = try await dbx.content("files/upload_session/finish",
                                                    arg: #"{"cursor":{"session_id":"\#(session)","offset":1},"commit":{"path":"/big.bin","mode":"add"}}"#)
            #expect(finishWrong.text == #"{"error_summary":"lookup_failed/incorrect_offset/..","error":{".tag":"lookup_failed","lookup_failed":{".tag":"incorrect_offset","correct_offset":\#(2 * block)}}}"#)
            let finish = try await dbx.content("files/upload_session/finish",
                                               arg: #"{"cursor":{"session_id":"\#(session)","offset":\#(2 * block)},"commit":{"path":"/Big.bin","mode":"add","autorename":false,"mute":false,"strict_conflict":false}}"#,
                                               body: body.subdata(in: (2 * block)..<body.count))
            #expect(finish.status == 200)
            #expect(finish.json?["content_hash"] == .string(expected))
            #expect(finish.json?["size"] == .int(Int64(body.count)))
            let after = try await dbx.content("files/upload_session/append_v2", arg: #"{"cursor":{"session_id":"\#(session)","offset":0},"close":false}"#)
            #expect(after.json?["error_summary"] == .string("not_found/.."))
            #expect(try await dbx.counters()["uploads_by_path"]?["dropbox:/Big.bin"] == .int(1))
        }
    }

    @Test("shared links: created once, shared_link_already_exists with metadata, settings_error on expiry, listed")
    func sharedLinks() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            _ = try await dbx.content("files/upload", arg: #"{"path":"/Evidence/clip.mp4"}"#, body: Data("video".utf8))
            let paid = try await dbx.rpc("sharing/create_shared_link_with_settings",
                                         #"{"path":"/Evidence/clip.mp4","settings":{"requested_visibility":"public","expires":"2026-12-01T00:00:00Z"}}"#)
            #expect(paid.status == 409)
            #expect(paid.text == #"{"error_summary":"settings_error/not_authorized/..","error":{".tag":"settings_error","settings_error":{".tag":"not_authorized"}}}"#)
            let team = try await dbx.rpc("sharing/create_shared_link_with_settings", #"{"path":"/Evidence/clip.mp4","settings":{"requested_visibility":"team_only"}}"#)
            #expect(team.json?["error_summary"] == .string("settings_error/not_authorized/.."))

            let made = try await dbx.rpc("sharing/create_shared_link_with_settings",
                                         #"{"path":"/Evidence/clip.mp4","settings":{"requested_visibility":"public","audience":"public","access":"viewer"}}"#)
            #expect(made.status == 200)
            let url = try #require(made.json?["url"]?.stringValue)
            #expect(url.hasPrefix("https://www.dropbox.com/scl/fi/"))
            #expect(url.hasSuffix("/clip.mp4?rlkey=" + (url.components(separatedBy: "rlkey=").last ?? "")))
            #expect(made.json?["link_permissions"]?["resolved_visibility"]?[".tag"] == .string("public"))

            let twice = try await dbx.rpc("sharing/create_shared_link_with_settings", #"{"path":"/evidence/CLIP.mp4"}"#)
            #expect(twice.status == 409)
            #expect(twice.json?["error_summary"] == .string("shared_link_already_exists/metadata/.."))
            #expect(twice.json?["error"]?["shared_link_already_exists"]?["metadata"]?["url"] == .string(url))

            let listed = try await dbx.rpc("sharing/list_shared_links", #"{"path":"/Evidence/clip.mp4","direct_only":true}"#)
            #expect(listed.json?["has_more"] == .bool(false))
            if case .array(let links)? = listed.json?["links"] {
                #expect(links.count == 1)
                #expect(links.first?["url"] == .string(url))
            } else {
                Issue.record("links missing: \(listed.text)")
            }
            let missing = try await dbx.rpc("sharing/create_shared_link_with_settings", #"{"path":"/none.mp4"}"#)
            #expect(missing.json?["error_summary"] == .string("path/not_found/.."))
        }
    }

    @Test("Dropbox-API-Arg must be ASCII: raw UTF-8 refused with 400, \\u escapes accepted")
    func nonASCIIHeader() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let port = try #require(base.port)
            let conn = try RawHTTPConnection(port: port)
            var request = Array("POST /dropbox/content/2/files/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(dbx.token)\r\nContent-Type: application/octet-stream\r\nContent-Length: 2\r\nDropbox-API-Arg: ".utf8)
            request += Array(#"{"path":"/Müller.txt"}"#.utf8)
            request += Array("\r\n\r\nhi".utf8)
            try conn.send(request)
            let refused = try await conn.readResponse()
            #expect(refused.status == 400)
            #expect(refused.text == #"Error in call to API function "files/upload": HTTP header "Dropbox-API-Arg": could not decode input as JSON"#)

            let ok = try await dbx.content("files/upload", arg: #"{"path":"/M\u00fcller.txt"}"#, body: Data("hi".utf8))
            #expect(ok.status == 200)
            #expect(ok.json?["name"] == .string("Müller.txt"))
            let down = try await dbx.content("files/download", arg: #"{"path":"/m\u00dcller.txt"}"#, contentType: "")
            #expect(down.header("Dropbox-API-Result")?.contains("\\u00fc") == true)
        }
    }

    @Test("corrupt-next-upload: the stored hash differs, or content_hash_mismatch when the client sent one")
    func corruption() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let body = testBytes(Self.mib, seed: 3)
            let local = try await dropboxHashWithOpenSSL(body)
            _ = try await TestHTTP.send("POST", dbx.url("/_sandbox/corrupt-next-upload?provider=dropbox"))
            let up = try await dbx.content("files/upload", arg: #"{"path":"/c1.bin"}"#, body: body)
            #expect(up.status == 200)
            let meta = try await dbx.rpc("files/get_metadata", #"{"path":"/c1.bin"}"#)
            #expect(meta.json?["content_hash"] != .string(local))
            #expect(meta.json?["size"] == .int(Int64(body.count)))

            _ = try await TestHTTP.send("POST", dbx.url("/_sandbox/corrupt-next-upload?provider=dropbox"))
            let checked = try await dbx.content("files/upload", arg: #"{"path":"/c2.bin","content_hash":"\#(local)"}"#, body: body)
            #expect(checked.status == 409)
            #expect(checked.text == #"{"error_summary":"content_hash_mismatch/..","error":{".tag":"content_hash_mismatch"}}"#)
            #expect(try await dbx.rpc("files/get_metadata", #"{"path":"/c2.bin"}"#).status == 409)
            let retry = try await dbx.content("files/upload", arg: #"{"path":"/c2.bin","content_hash":"\#(local)"}"#, body: body)
            #expect(retry.status == 200)
            #expect(retry.json?["content_hash"] == .string(local))
            let counts = try await dbx.counters()
            #expect(counts["uploads_by_path"]?["dropbox:/c2.bin"] == .int(1))
        }
    }

    @Test("the exchange log (for the schema oracle): each call's argument and answer as the wire had them, a download's Dropbox-API-Result, cleared by reset")
    func exchangeLog() async throws {
        try await withProviderSandbox { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let missing = try await dbx.rpc("files/get_metadata", #"{"path":"/nope"}"#)
            let up = try await dbx.content("files/upload", arg: #"{"path":"/a.txt"}"#, body: Data("hello".utf8))
            let down = try await dbx.content("files/download", arg: #"{"path":"/a.txt"}"#)
            #expect(down.text == "hello")
            func lines() async throws -> [JSONValue] {
                let log = try await TestHTTP.send("GET", dbx.url("/_sandbox/dropbox/exchanges"))
                return log.text.split(separator: "\n").compactMap { try? JSONValue.parse(Data($0.utf8)) }
            }
            let seen = try await lines()
            // The token grant is not an API route: not there.
            #expect(seen.map { $0["route"] } == [.string("files/get_metadata"), .string("files/upload"), .string("files/download")])
            #expect(seen.first?["arg"] == .string(#"{"path":"/nope"}"#))
            #expect(seen.first?["status"] == .int(409) && seen.first?["answer"] == .string(missing.text))
            #expect(seen.dropFirst().first?["arg"] == .string(#"{"path":"/a.txt"}"#) && seen.dropFirst().first?["answer"] == .string(up.text))
            #expect(seen.last?["answer_from"] == .string("header") && seen.last?["answer"] == down.header("Dropbox-API-Result").map(JSONValue.string))
            _ = try await TestHTTP.send("POST", dbx.url("/_sandbox/reset"))
            #expect(try await lines().isEmpty)
        }
    }

    @Test("the exchange log keeps the newest calls within its count and bytes, and says how many it let go")
    func exchangeLogBound() {
        let log = DropboxExchangeLog(capacity: 2, budget: 40)
        for n in 1...3 { log.add(route: "r\(n)", arg: "{}", status: 200, answer: "null", fromHeader: false) }
        var lines = log.jsonLines().split(separator: "\n").map(String.init)
        #expect(lines.first == #"{"dropped":1}"#)
        #expect(lines.dropFirst().map { $0.contains(#""route":"r2""#) || $0.contains(#""route":"r3""#) } == [true, true])
        log.add(route: "big", arg: nil, status: 200, answer: String(repeating: "x", count: 39), fromHeader: false)
        lines = log.jsonLines().split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0] == #"{"dropped":3}"# && lines[1].contains(#""route":"big""#))
    }

    @Test("two overlapping writes: the second gets 429 too_many_write_operations with Retry-After")
    func overlappingWrites() async throws {
        let state = try makeTemporaryDirectory("prov")
        defer { try? FileManager.default.removeItem(atPath: state) }
        try await withProviderSandbox(stateDirectory: state) { base in
            let dbx = try await DropboxClient(base: base).refreshed()
            let port = try #require(base.port)
            let slow = try RawHTTPConnection(port: port)
            try slow.send("POST /dropbox/content/2/files/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(dbx.token)\r\nContent-Type: application/octet-stream\r\nDropbox-API-Arg: {\"path\":\"/slow.bin\"}\r\nContent-Length: 10\r\n\r\nhello")
            // The slow upload holds the write gate once its body's temp file is there: the
            // emulation opens it as soon as the gate let the upload in.
            let receiving = await waitUntil(timeout: 30) {
                !((try? FileManager.default.contentsOfDirectory(atPath: state + "/dropbox/tmp")) ?? []).isEmpty
            }
            #expect(receiving, "the slow upload never got past the write gate")
            let second = try await dbx.rpc("files/create_folder_v2", #"{"path":"/x"}"#)
            #expect(second.status == 429)
            #expect(second.header("Retry-After") == "1")
            #expect(second.text == #"{"error_summary":"too_many_write_operations/..","error":{"reason":{".tag":"too_many_write_operations"},"retry_after":1}}"#)
            try slow.send("world")
            let first = try await slow.readResponse()
            #expect(first.status == 200)
            #expect(try await dbx.rpc("files/create_folder_v2", #"{"path":"/x"}"#).status == 200)
        }
    }
}
