import EvidenceArchive
import EvidenceHTTP
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Logging

/// One provider client against a sandbox running in this process (no child process): the
/// wire-behaviour tests arm quirks on `server.providerControl` directly.
struct InProcessProvider: Sendable {
    let server: SandboxServer
    let url: String
    let dir: String
    let http: HTTPClient

    var tokens: String { dir + "/tokens" }
    var resume: String { dir + "/uploads" }

    func dropbox(chunkSize: Int64 = 4 << 20) -> DropboxProvider {
        let o = OAuthSession(account: "dbx", tokenURL: "\(url)/dropbox/api/oauth2/token", clientID: "sandbox-dropbox-key",
                             clientSecret: "sandbox-dropbox-secret", grant: .refreshToken(initial: "sandbox-dropbox-refresh"),
                             tokenFile: tokens + "/dbx.json", http: http)
        return DropboxProvider(account: "dbx", session: o, http: http, baseURL: "\(url)/dropbox/api",
                               uploadURL: "\(url)/dropbox/content", resumeDirectory: resume + "/dbx", chunkSize: chunkSize)
    }

    func boxSession(grant: OAuthSession.Grant? = nil, tokenFile: String? = nil) -> OAuthSession {
        OAuthSession(account: "box", tokenURL: "\(url)/box/api/oauth2/token", clientID: "sandbox-box-client",
                     clientSecret: "sandbox-box-secret",
                     grant: grant ?? .clientCredentials(extra: [("box_subject_type", "enterprise"), ("box_subject_id", "sandbox-enterprise")]),
                     tokenFile: tokenFile ?? tokens + "/box.json", http: http)
    }

    func box(session: OAuthSession? = nil) -> BoxProvider {
        BoxProvider(account: "box", session: session ?? boxSession(), http: http, baseURL: "\(url)/box/api/2.0",
                    uploadURL: "\(url)/box/upload/api/2.0", resumeDirectory: resume + "/box")
    }

    func shareFileSession() -> OAuthSession {
        OAuthSession(account: "sf", tokenURL: "\(url)/sharefile/oauth/token", clientID: "sandbox-sharefile-client",
                     clientSecret: "sandbox-sharefile-secret",
                     grant: .password(username: "sandbox@example.org", password: "sandbox-password"),
                     tokenFile: tokens + "/sf.json", http: http)
    }

    func shareFile(chunkSize: Int64 = 1 << 20) -> ShareFileProvider {
        ShareFileProvider(account: "sf", session: shareFileSession(), http: http, baseURL: "\(url)/sharefile/sf/v3",
                          resumeDirectory: resume + "/sf", chunkSize: chunkSize)
    }

    /// A file of `bytes` random bytes in the test's folder.
    func file(_ name: String, bytes: Int) -> String {
        randomFile(at: dir + "/" + name, bytes: bytes)
    }

    func uploads() -> [String: Int] { server.counters.snapshot.uploadsByPath }
}

/// Runs `body` with a fresh in-process sandbox and its own temporary folder.
func withInProcessSandbox<T: Sendable>(retry: RetryPolicy = RetryPolicy(maxAttempts: 5, base: 0.05, cap: 0.2),
                                       _ body: @Sendable (InProcessProvider) async throws -> T) async throws -> T {
    let dir = TempDir()
    defer { dir.cleanup() }
    let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir.path + "/sandbox"))
    let http = HTTPClient(configuration: HTTPClientConfiguration(retry: retry), logger: Logger(label: "archive-tests"))
    return try await server.withRunning { url in
        try await body(InProcessProvider(server: server, url: url.absoluteString, dir: dir.path, http: http))
    }
}
