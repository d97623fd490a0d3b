import EvidenceArchive
import EvidenceSandbox
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

/// Found by `make fuzz`: Foundation's XMLParser on Linux traps on an element name with invalid
/// UTF-8, so a broken or hostile WebDAV server could kill `evidence run` with one PROPFIND answer.
@Suite("ownCloud PROPFIND answers")
struct PropfindAnswerTests {
    static let invalidUTF8 = Data("<?xml version=\"1.0\"?>\n<d:multistatus".utf8) + Data([0xEB])
        + Data(" xmlns:d=\"DAV:\"><d:response><d:href>/a</d:href></d:response></d:multistatus>".utf8)

    @Test("an answer that is not UTF-8 is unreadable, not a crash")
    func invalidUTF8IsRefused() {
        #expect(OwnCloudAPI.parsePropfind(Self.invalidUTF8) == nil)
        #expect(OwnCloudAPI.parseListing(Self.invalidUTF8) == nil)
    }

    @Test("a processing instruction without data is unreadable, not a crash",
          arguments: ["<?x?>", "<?xml?>", "<?pi \n ?>"])
    func emptyProcessingInstructionIsRefused(_ pi: String) {
        let xml = Data("\(pi)<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href>/a</d:href></d:response></d:multistatus>".utf8)
        #expect(OwnCloudAPI.parsePropfind(xml) == nil)
        #expect(OwnCloudAPI.parseListing(xml) == nil)
    }

    @Test("a UTF-8 answer is still read")
    func utf8IsRead() throws {
        let xml = Data("""
            <?xml version="1.0" encoding="utf-8"?><d:multistatus xmlns:d="DAV:"><d:response><d:href>/f/caf%C3%A9.mp4</d:href>\
            <d:propstat><d:prop><d:getcontentlength>12</d:getcontentlength></d:prop></d:propstat></d:response></d:multistatus>
            """.utf8)
        #expect(OwnCloudAPI.parsePropfind(xml)?.size == 12)
        let listing = try #require(OwnCloudAPI.parseListing(xml))
        #expect(listing.map(\.name) == ["café.mp4"])
    }
}
