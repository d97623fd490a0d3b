import EvidenceArchive
import EvidenceTesting
import Foundation
import Testing

@Suite("ownCloud provider on a real WebDAV server")
struct WebDAVSpecificTests {
    @Test("a wrong app password is an authorization error that names the account, never the password")
    func wrongPassword() async throws {
        let dir = TempDir()
        defer { dir.cleanup() }
        let server = try WebDAVServer(root: dir.path)
        defer { server.stop() }
        let p = OwnCloudProvider(account: "office", url: server.url, user: WebDAVServer.user, password: "wrong-secret-42",
                                 baseURL: server.url, http: httpClient())
        let error = await #expect(throws: ArchiveError.self) { try await p.makeFolders("a") }
        #expect(error?.kind == .unauthorized)
        #expect(error?.message.hasPrefix("office:") == true)
        #expect(error?.message.contains("wrong-secret-42") == false)
    }

    @Test("a server without the OCS share API: share says links need ownCloud")
    func noOCS() async throws {
        let dir = TempDir()
        defer { dir.cleanup() }
        let server = try WebDAVServer(root: dir.path)
        defer { server.stop() }
        let p = OwnCloudProvider(account: "office", url: server.url, user: WebDAVServer.user, password: WebDAVServer.password,
                                 baseURL: server.url, http: httpClient())
        let error = await #expect(throws: ArchiveError.self) { _ = try await p.share("x.bin", ShareRequest(access: .open)) }
        #expect(error?.kind == .unsupported || error?.kind == .notFound, "\(error?.message ?? "")")
    }
}
