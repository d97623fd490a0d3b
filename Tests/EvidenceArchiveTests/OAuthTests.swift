import EvidenceArchive
import EvidenceHTTP
import EvidenceSandbox
import Foundation
import Testing
import EvidenceTesting

@Suite("OAuth accounts against the sandbox's authorization servers", .serialized)
struct OAuthTests {
    @Test("an expired access token (401) is refreshed once, for all concurrent callers", arguments: ProviderUnderTest.oauth)
    func refreshOn401(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let session = try #require(h.session)
            #expect(try await p.stat("none.bin") == nil)
            #expect(await session.refreshCount == 1)
            try await h.control("expire-tokens")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<8 { group.addTask { _ = try await p.stat("none-\(i).bin") } }
                try await group.waitForAll()
            }
            #expect(await session.refreshCount == 2, "one refresh for eight callers that all met 401")
            let file = h.dir.path + "/tokens/\(which.rawValue).json"
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600)
            let text = try String(contentsOfFile: file, encoding: .utf8)
            #expect(!text.contains("sandbox-password") && !text.contains("secret"), "the token file holds tokens, not credentials")
        }
    }

    @Test("Box refresh tokens are single-use: each new one is saved before use, and a restart goes on with it")
    func boxRotation() async throws {
        try await withProvider(.box) { h in
            let s = h.sandbox!.baseURL.absoluteString
            let file = h.dir.path + "/box-rt.json"
            func session() -> OAuthSession {
                OAuthSession(account: "box", tokenURL: "\(s)/box/api/oauth2/token", clientID: "sandbox-box-client",
                             clientSecret: "sandbox-box-secret", grant: .refreshToken(initial: "sandbox-box-refresh"),
                             tokenFile: file, http: httpClient())
            }
            func provider(_ o: OAuthSession) -> BoxProvider {
                BoxProvider(account: "box", session: o, http: httpClient(), baseURL: "\(s)/box/api/2.0",
                            uploadURL: "\(s)/box/upload/api/2.0", resumeDirectory: nil)
            }
            let first = session()
            _ = try await provider(first).whoami()
            let saved1 = try #require(try TokenStore.load(file, account: "box")?.refreshToken)
            #expect(saved1 != "sandbox-box-refresh", "the rotated refresh token is saved")
            try await h.control("expire-tokens")
            // A new process (new session on the same token file) refreshes with the saved token.
            let second = session()
            _ = try await provider(second).whoami()
            let saved2 = try #require(try TokenStore.load(file, account: "box")?.refreshToken)
            #expect(saved2 != saved1)
            // The spent one is refused, with a message that says what to do.
            try TokenStore.save(TokenRecord(refreshToken: saved1), to: file, account: "box")
            let error = await #expect(throws: ArchiveError.self) { _ = try await provider(session()).whoami() }
            #expect(error?.message.contains("invalid_grant") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains(saved1) == false, "never the token itself")
        }
    }

    @Test("a token file others can read is refused")
    func readableTokenFile() throws {
        let dir = TempDir()
        defer { dir.cleanup() }
        let file = dir.path + "/t.json"
        try TokenStore.save(TokenRecord(accessToken: "a", refreshToken: "r"), to: file, account: "x")
        chmod(file, 0o644)
        let error = #expect(throws: ArchiveError.self) { _ = try TokenStore.load(file, account: "x") }
        #expect(error?.message.contains("chmod 600") == true)
    }

    @Test("wrong client credentials name the account and the field to check, never the secret", arguments: ProviderUnderTest.oauth)
    func wrongClient(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let s = h.sandbox!.baseURL.absoluteString
            let token = ["dropbox": "\(s)/dropbox/api/oauth2/token", "box": "\(s)/box/api/oauth2/token", "sharefile": "\(s)/sharefile/oauth/token"][which.rawValue]!
            let grant: OAuthSession.Grant = which == .box
                ? .clientCredentials(extra: [("box_subject_type", "enterprise"), ("box_subject_id", "sandbox-enterprise")])
                : which == .sharefile ? .password(username: "sandbox@example.org", password: "sandbox-password")
                : .refreshToken(initial: "sandbox-dropbox-refresh")
            let o = OAuthSession(account: "acct", tokenURL: token, clientID: "wrong-client", clientSecret: "wrong-secret-77",
                                 grant: grant, tokenFile: h.dir.path + "/t.json", http: httpClient())
            let error = await #expect(throws: ArchiveError.self) { _ = try await o.accessToken() }
            #expect(error?.message.hasPrefix("acct:") == true)
            #expect(error?.message.contains("wrong-secret-77") == false)
            #expect(error?.retryable == false, "\(error?.message ?? "")")
        }
    }

    @Test("429 and 5xx from the provider are retried (honouring Retry-After) until the work is done",
          arguments: ProviderUnderTest.oauth)
    func faults(_ which: ProviderUnderTest) async throws {
        let prefix = ["dropbox": "/dropbox/api/2/files/get_metadata", "box": "/box/api/2.0/folders/",
                      "sharefile": "/sharefile/sf/v3/Items(fo"][which.rawValue]!
        try await withProvider(which, sandboxArguments: ["--fail-rate", "0.4", "--fault-path", prefix, "--seed", "11", "--retry-after", "1"]) { h in
            let p = h.provider
            try await p.makeFolders("f/g")
            for i in 0..<4 {
                let a = h.dir.file("a\(i)", bytes: 100 + i)
                _ = try await p.upload(local: a, size: Int64(100 + i), hash: try hex(a, p.hashKind), to: "f/g/a\(i).bin", progress: nil)
                #expect(try await p.stat("f/g/a\(i).bin")?.size == Int64(100 + i))
            }
            #expect(try await h.faults() > 0, "faults were injected")
            #expect(try await h.uploads().values.allSatisfy { $0 == 1 })
        }
    }
}

@Suite("ShareFile share settings")
struct ShareFileShareTests {
    @Test("a password asked for on a ShareFile link (which takes none) makes it RequireLogin, as the note says")
    func passwordBecomesRequireLogin() async throws {
        try await withProvider(.sharefile) { h in
            let p = h.provider
            let a = h.dir.file("a", bytes: 10)
            _ = try await p.upload(local: a, size: 10, hash: try hex(a, p.hashKind), to: "clip.mp4", progress: nil)
            let link = try await p.share("clip.mp4", ShareRequest(access: .open, password: "pw-123456"))
            #expect(link.fallback?.contains("RequireLogin was set instead") == true)
            let token = try await h.session!.accessToken()
            let r = try await httpClient().send(HTTPRequest(url: h.sandbox!.baseURL.absoluteString + "/sharefile/sf/v3/Shares",
                                                            headers: [("Authorization", "Bearer \(token)")]))
            let shares = (try JSONSerialization.jsonObject(with: r.body) as? [String: Any])?["value"] as? [[String: Any]] ?? []
            #expect(shares.count == 1 && shares.first?["RequireLogin"] as? Bool == true, "\(shares)")
        }
    }
}

@Suite("OAuth: the code pasted back")
struct PastedCodeTests {
    @Test("the code is read from a redirect address, its query alone, or bare; anything else is nil")
    func pastedCode() {
        #expect(AuthorizationRequest.code(fromPasted: "  4/0AbC-d_e  \n") == "4/0AbC-d_e")
        #expect(AuthorizationRequest.code(fromPasted: "http://127.0.0.1:53682/?state=s&code=4%2F0Ab%2Bc") == "4/0Ab+c")
        #expect(AuthorizationRequest.code(fromPasted: "https://localhost/cb?code=xyz#frag") == "xyz")
        #expect(AuthorizationRequest.code(fromPasted: "code=abc&state=1") == "abc")
        #expect(AuthorizationRequest.code(fromPasted: "http://127.0.0.1/?error=access_denied&code=") == nil)
        #expect(AuthorizationRequest.code(fromPasted: "http://127.0.0.1/?mycode=abc") == nil, "not a parameter named code")
        #expect(AuthorizationRequest.code(fromPasted: "two words") == nil)
        #expect(AuthorizationRequest.code(fromPasted: "") == nil)
    }
}
