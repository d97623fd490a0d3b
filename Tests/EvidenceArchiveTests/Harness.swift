import EvidenceBlocking
import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Logging
import Testing

/// Where SwiftPM put the `evidence-sandbox` binary: next to the test bundle.
let sandboxExecutable = URL(fileURLWithPath: CommandLine.arguments[0])
    .deletingLastPathComponent().appendingPathComponent("evidence-sandbox")

/// The providers the conformance suite runs against: a local folder, ownCloud's client on a
/// real WebDAV server, and the four sandbox emulations (one fresh `evidence-sandbox` process each).
enum ProviderUnderTest: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case local, webdav, dropbox, box, sharefile, owncloud

    var testDescription: String {
        switch self {
        case .local: return "local folder"
        case .webdav: return "ownCloud provider on a real WebDAV server (rclone serve webdav)"
        default: return "\(rawValue) (sandbox emulation)"
        }
    }

    var emulated: Bool { ![.local, .webdav].contains(self) }
    static let emulations: [ProviderUnderTest] = [.dropbox, .box, .sharefile, .owncloud]
    static let oauth: [ProviderUnderTest] = [.dropbox, .box, .sharefile]

    /// Sizes around this provider's chunk boundary (what the client is configured with, or
    /// the service imposes), and a "large" one.
    var boundarySizes: [Int] {
        switch self {
        case .dropbox: return [4 << 20, (4 << 20) + 1, 9 << 20]            // chunk_size 4 MiB (Dropbox's unit)
        case .box: return [19_999_999, 20_000_000, (16 << 20) + 4_000_001]   // sessions from 20 MB, parts of 8 MiB
        case .sharefile: return [1 << 20, (1 << 20) + 1, (3 << 20) + 17]    // chunk_size 1 MiB
        default: return [1 << 20, (1 << 20) + 1, 5 << 20]
        }
    }

    /// Starts what the provider needs (a WebDAV server, a sandbox) and builds the client.
    func make(sandboxArguments: [String] = []) async throws -> Harness {
        let dir = TempDir()
        switch self {
        case .local:
            return Harness(provider: LocalProvider(account: "vault", root: dir.path), root: dir.path, dir: dir, stop: {})
        case .webdav:
            let server = try WebDAVServer(root: dir.path + "/dav")
            let p = OwnCloudProvider(account: "office", url: server.url, user: WebDAVServer.user, password: WebDAVServer.password,
                                     baseURL: server.url, http: httpClient())
            return Harness(provider: p, root: dir.path + "/dav", dir: dir, stop: { server.stop() })
        case .dropbox, .box, .sharefile, .owncloud:
            let sandbox = try await SandboxProcess.start(executable: sandboxExecutable, stateDirectory: dir.path + "/sandbox",
                                                         arguments: sandboxArguments)
            let s = sandbox.baseURL.absoluteString
            let http = httpClient()
            let tokens = dir.path + "/tokens/\(rawValue).json"
            let resume = dir.path + "/uploads/\(rawValue)"
            let provider: any ArchiveProvider
            var session: OAuthSession?
            switch self {
            case .dropbox:
                let o = OAuthSession(account: "dbx", tokenURL: "\(s)/dropbox/api/oauth2/token", clientID: "sandbox-dropbox-key",
                                     clientSecret: "sandbox-dropbox-secret", grant: .refreshToken(initial: "sandbox-dropbox-refresh"),
                                     tokenFile: tokens, http: http)
                session = o
                provider = DropboxProvider(account: "dbx", session: o, http: http, baseURL: "\(s)/dropbox/api",
                                           uploadURL: "\(s)/dropbox/content", resumeDirectory: resume, chunkSize: 4 << 20)
            case .box:
                let o = OAuthSession(account: "box", tokenURL: "\(s)/box/api/oauth2/token", clientID: "sandbox-box-client",
                                     clientSecret: "sandbox-box-secret",
                                     grant: .clientCredentials(extra: [("box_subject_type", "enterprise"), ("box_subject_id", "sandbox-enterprise")]),
                                     tokenFile: tokens, http: http)
                session = o
                provider = BoxProvider(account: "box", session: o, http: http, baseURL: "\(s)/box/api/2.0",
                                       uploadURL: "\(s)/box/upload/api/2.0", resumeDirectory: resume)
            case .sharefile:
                let o = OAuthSession(account: "sf", tokenURL: "\(s)/sharefile/oauth/token", clientID: "sandbox-sharefile-client",
                                     clientSecret: "sandbox-sharefile-secret",
                                     grant: .password(username: "sandbox@example.org", password: "sandbox-password"),
                                     tokenFile: tokens, http: http)
                session = o
                provider = ShareFileProvider(account: "sf", session: o, http: http, baseURL: "\(s)/sharefile/sf/v3",
                                             resumeDirectory: resume, chunkSize: 1 << 20)
            default:
                provider = OwnCloudProvider(account: "oc", url: "\(s)/owncloud", user: "sandbox", password: "sandbox-app-password",
                                            baseURL: nil, http: http, chunkSize: 1 << 20)
            }
            return Harness(provider: provider, root: nil, dir: dir, sandbox: sandbox, session: session, resumeDirectory: resume,
                           stop: { await sandbox.stop() })
        }
    }
}

/// One provider under test and what it runs on.
final class Harness: @unchecked Sendable {
    let provider: any ArchiveProvider
    /// The local folder the files land in (local, WebDAV), to check bytes without the provider.
    let root: String?
    let dir: TempDir
    let sandbox: SandboxProcess?
    let session: OAuthSession?
    let resumeDirectory: String?
    private let stopper: () async -> Void

    init(provider: any ArchiveProvider, root: String?, dir: TempDir, sandbox: SandboxProcess? = nil, session: OAuthSession? = nil,
         resumeDirectory: String? = nil, stop: @escaping () async -> Void) {
        self.provider = provider; self.root = root; self.dir = dir; self.sandbox = sandbox; self.session = session
        self.resumeDirectory = resumeDirectory; self.stopper = stop
    }

    func stop() async {
        await stopper()
        dir.cleanup()
    }

    /// A sandbox control call (`expire-tokens`, `corrupt-next-upload?provider=…`).
    func control(_ path: String) async throws {
        guard let sandbox else { return }
        let r = try await httpClient().send(HTTPRequest(method: "POST", url: sandbox.baseURL.absoluteString + "/_sandbox/" + path))
        precondition(r.isSuccess, "control \(path): \(r.status)")
    }

    /// `uploads_by_path` from the sandbox counters.
    func uploads() async throws -> [String: Int] {
        guard let sandbox else { return [:] }
        let r = try await httpClient().send(HTTPRequest(url: sandbox.baseURL.absoluteString + "/_sandbox/counters"))
        let j = try JSONSerialization.jsonObject(with: r.body) as? [String: Any]
        return (j?["uploads_by_path"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.intValue }
    }

    func faults() async throws -> Int {
        guard let sandbox else { return 0 }
        let r = try await httpClient().send(HTTPRequest(url: sandbox.baseURL.absoluteString + "/_sandbox/counters"))
        let j = try JSONSerialization.jsonObject(with: r.body) as? [String: Any]
        let f = j?["faults"] as? [String: Any] ?? [:]
        return f.values.compactMap { ($0 as? NSNumber)?.intValue }.reduce(0, +)
    }
}

/// Harnesses alive at once, across every suite of this target: each may start a sandbox process
/// (60 conformance cases starting theirs together starved 2 cores, so that suite once ran one
/// case at a time, 91 s of the services pass). Waiters are suspended, holding no thread.
let harnessSlots = AsyncGate(3)

/// Runs `body` with a fresh harness, stopping it whatever happens.
func withProvider(_ which: ProviderUnderTest, sandboxArguments: [String] = [],
                  _ body: (Harness) async throws -> Void) async throws {
    await harnessSlots.acquire()
    defer { harnessSlots.release() }
    let h = try await which.make(sandboxArguments: sandboxArguments)
    do {
        try await body(h)
        await h.stop()
    } catch {
        await h.stop()
        throw error
    }
}
