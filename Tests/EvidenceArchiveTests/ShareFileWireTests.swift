@testable import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Synchronization
import Testing

/// ShareFile as the real service and its SDK speak: `FileSize` in Upload2, paths relative to
/// the home folder, the API host from the token answer, shares that would expire after 30
/// days, OData paging, failures inside a 200, and the SDK's finish call.
@Suite("ShareFile client: wire behaviour")
struct ShareFileWireTests {
    @Test("a threaded upload names its size as FileSize, which the upload server holds it to")
    func fileSize() async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            let local = s.file("t.bin", bytes: (3 << 20) + 5)
            let md5 = try hex(local, .md5)
            let stored = try await p.upload(local: local, size: (3 << 20) + 5, hash: md5, to: "t.bin", progress: nil)
            #expect(stored.size == (3 << 20) + 5 && stored.hash == md5)
        }
    }

    @Test("folders and files live below the home folder, found relative to it, not from the account root")
    func homeRelative() async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            try await p.makeFolders("evidence/cam")
            let local = s.file("a.bin", bytes: 10)
            _ = try await p.upload(local: local, size: 10, hash: try hex(local, .md5), to: "evidence/cam/a.bin", progress: nil)
            #expect(try await p.stat("evidence/cam/a.bin")?.size == 10)
            #expect(s.uploads() == ["sharefile:/evidence/cam/a.bin": 1], "\(s.uploads())")
        }
    }

    @Test("without base_url the API host comes from the token answer's subdomain and apicp (an EU tenant: sf-api.eu)")
    func apiHostFromToken() async throws {
        try await withInProcessSandbox { s in
            s.server.providerControl.arm(.shareFileEUTenant, count: nil)
            let p = ShareFileProvider(account: "sf", session: s.shareFileSession(), http: s.http, baseURL: nil,
                                      subdomain: "configured", resumeDirectory: nil)
            let base = try await p.apiBase()
            #expect(base == "https://sandbox.sf-api.eu/sf/v3")
        }
    }

    @Test("refreshes go to the control plane the token answer names ({subdomain}.{appcp}: an EU tenant's to sharefile.eu, as the SDK's do); a password only to the configured endpoint")
    func tokenHostFromAnswer() async throws {
        #expect(ShareFileProvider.tokenURL(fromAnswer: ["subdomain": "acme", "appcp": "sharefile.eu"]) == "https://acme.sharefile.eu/oauth/token")
        #expect(ShareFileProvider.tokenURL(fromAnswer: ["subdomain": "acme"]) == nil)
        // Only ShareFile's own control planes: an answer (or a token file) naming another host
        // never receives the refresh token and client secret.
        for hostile in ["evil.example", "sharefile.eu.evil.example", "evil.example/x?", "sharefile.eu@evil.example", "a b", ""] {
            #expect(ShareFileProvider.tokenURL(fromAnswer: ["subdomain": "acme", "appcp": hostile]) == nil, "\(hostile)")
        }
        for label in ["ac/me", "127", ""] {
            #expect(ShareFileProvider.tokenURL(fromAnswer: ["subdomain": label, "appcp": "sharefile.eu"]) == nil, "\(label)")
        }
        try await withInProcessSandbox { s in
            s.server.providerControl.arm(.shareFileEUTenant, count: nil)
            // The named endpoint, mapped onto a path the sandbox does not serve (its host names do
            // not resolve here): the refresh sent there is refused, and the password the session
            // then falls back to goes to the configured endpoint, which answers.
            let named = "\(s.url)/sharefile/named-by-answer/token"
            let asked = Mutex(0)
            let session = OAuthSession(account: "sf", tokenURL: "\(s.url)/sharefile/oauth/token", clientID: "sandbox-sharefile-client",
                                       clientSecret: "sandbox-sharefile-secret",
                                       grant: .password(username: "sandbox@example.org", password: "sandbox-password"),
                                       tokenFile: s.dir + "/sf-eu.json", http: s.http,
                                       tokenURLFromAnswer: { extra in
                                           guard ShareFileProvider.tokenURL(fromAnswer: extra) == "https://sandbox.sharefile.eu/oauth/token" else { return nil }
                                           asked.withLock { $0 += 1 }
                                           return named
                                       })
            let first = try await session.accessToken()   // a password grant: the configured endpoint
            #expect(asked.withLock { $0 } == 0, "the password grant did not ask where the answer points")
            let second = try await session.rejected(first)
            #expect(asked.withLock { $0 } >= 1, "the refresh went where the answer points")
            #expect(second != first, "the password fallback reached the configured endpoint")
        }
    }

    @Test("a share asked without expiry never expires (ShareFile's own default is 30 days)")
    func shareNeverExpires() async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            let local = s.file("s.bin", bytes: 10)
            _ = try await p.upload(local: local, size: 10, hash: try hex(local, .md5), to: "s.bin", progress: nil)
            let link = try await p.share("s.bin", ShareRequest(access: .open))
            #expect(link.expires == nil, "expires \(String(describing: link.expires))")
        }
    }

    @Test("an expired share is not reused; a live one is found on a later page of the share list")
    func shareReuse() async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            for name in ["x.bin", "y.bin", "z.bin"] {
                let local = s.file(name, bytes: 10)
                _ = try await p.upload(local: local, size: 10, hash: try hex(local, .md5), to: name, progress: nil)
            }
            // A share that has already expired (as one made 30 days ago without ExpirationDate has).
            let old = try await p.share("x.bin", ShareRequest(access: .open, expires: Date().addingTimeInterval(-60)))
            _ = try await p.share("y.bin", ShareRequest(access: .open))
            let z = try await p.share("z.bin", ShareRequest(access: .open))
            s.server.providerControl.arm(.shareFileSmallPages, count: nil)
            #expect(try await p.share("z.bin", ShareRequest(access: .open)).url == z.url, "found on the third page")
            let again = try await p.share("x.bin", ShareRequest(access: .open))
            #expect(again.url != old.url, "the expired share is dead")
        }
    }

    @Test("the share list is asked without expired shares (includeExpired=false): a year of dead links is not paged through")
    func expiredSharesNotListed() async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            for name in ["a.bin", "b.bin", "c.bin", "d.bin"] {
                let local = s.file(name, bytes: 10)
                _ = try await p.upload(local: local, size: 10, hash: try hex(local, .md5), to: name, progress: nil)
            }
            for name in ["a.bin", "b.bin", "c.bin"] { _ = try await p.share(name, ShareRequest(access: .open, expires: Date().addingTimeInterval(86400))) }
            s.server.providerControl.advanceClock(by: 2 * 86400)
            s.server.providerControl.arm(.shareFileSmallPages, count: nil)
            let before = try String(contentsOfFile: s.server.requestLog.path, encoding: .utf8).split(separator: "\n").count
            _ = try await p.share("d.bin", ShareRequest(access: .open))
            let lists = try String(contentsOfFile: s.server.requestLog.path, encoding: .utf8).split(separator: "\n").dropFirst(before)
                .filter { $0.contains("\"method\":\"GET\"") && $0.contains("/Shares") }
            #expect(lists.count == 1, "one page, holding none of the three expired shares: \(lists)")
        }
    }

    @Test("a chunk answered HTTP 200 'ERROR: …' or {\"error\":true} is a retryable failure, and the next try completes",
          arguments: [ProviderControl.Quirk.shareFileChunkErrorText, .shareFileChunkErrorJSON])
    func chunkErrorIn200(_ quirk: ProviderControl.Quirk) async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            let local = s.file("e.bin", bytes: (2 << 20) + 1)
            let md5 = try hex(local, .md5)
            s.server.providerControl.arm(quirk, count: 1)
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.upload(local: local, size: (2 << 20) + 1, hash: md5, to: "e.bin", progress: nil)
            }
            #expect(error?.retryable == true, "\(error?.message ?? "")")
            #expect(try await p.stat("e.bin") == nil)
            let stored = try await p.upload(local: local, size: (2 << 20) + 1, hash: md5, to: "e.bin", progress: nil)
            #expect(stored.hash == md5)
        }
    }

    @Test("an upload id that expired mid-upload (200 with error 605 'Unrecognized Upload ID') is dropped: the next try asks for a new one and completes")
    func expiredUploadID() async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            let size = (3 << 20) + 7
            let local = s.file("x.bin", bytes: size)
            let md5 = try hex(local, .md5)
            s.server.providerControl.arm(.shareFileUploadExpired, count: 1)
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.upload(local: local, size: Int64(size), hash: md5, to: "x.bin", progress: nil)
            }
            #expect(error?.retryable == true && error?.message.contains("605") == true, "\(error?.message ?? "")")
            // Before, the saved upload was resumed on every try, and answered 605 for ever.
            let stored = try await p.upload(local: local, size: Int64(size), hash: md5, to: "x.bin", progress: nil)
            #expect(stored.hash == md5 && stored.size == Int64(size))
            #expect(s.uploads() == ["sharefile:/x.bin": 1], "\(s.uploads())")
        }
    }

    @Test("a client user without a home folder: a clear error naming root_folder_id; with it, folders and files live below that folder")
    func rootFolderID() async throws {
        try await withInProcessSandbox { s in
            // A folder another user shared with this one (made here while the home still answers).
            try await s.shareFile().makeFolders("shared/cases")
            let shared = try #require(try await s.shareFile().folderID("shared", create: false))
            s.server.providerControl.arm(.shareFileClientUser, count: nil)
            let homeless = s.shareFile()
            let error = await #expect(throws: ArchiveError.self) { _ = try await homeless.whoami() }
            #expect(error?.message.contains("root_folder_id") == true, "\(error?.message ?? "")")
            let p = ShareFileProvider(account: "sf", session: s.shareFileSession(), http: s.http, baseURL: "\(s.url)/sharefile/sf/v3",
                                      rootFolderID: shared, resumeDirectory: nil)
            #expect(try await p.whoami().contains(shared))
            try await p.makeFolders("cases/a")
            let local = s.file("r.bin", bytes: 2_000)
            let stored = try await p.upload(local: local, size: 2_000, hash: try hex(local, .md5), to: "cases/a/r.bin", progress: nil)
            #expect(stored.hash == (try hex(local, .md5)))
            #expect(try await p.stat("cases/a/r.bin")?.size == 2_000)
            #expect(s.uploads() == ["sharefile:/shared/cases/a/r.bin": 1], "\(s.uploads())")
            // An id that is not a folder this user sees is named as such.
            let wrong = ShareFileProvider(account: "sf", session: s.shareFileSession(), http: s.http, baseURL: "\(s.url)/sharefile/sf/v3",
                                          rootFolderID: "fo-nowhere", resumeDirectory: nil)
            let missing = await #expect(throws: ArchiveError.self) { _ = try await wrong.whoami() }
            #expect(missing?.message.contains("root_folder_id fo-nowhere is not a folder") == true, "\(missing?.message ?? "")")
        }
    }

    @Test("a storage zone that reports an empty Hash gives no digest (so the copy is read back), not one that never matches")
    func emptyHash() async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            let local = s.file("h.bin", bytes: 5_000)
            s.server.providerControl.arm(.shareFileEmptyHash, count: 1)
            let stored = try await p.upload(local: local, size: 5_000, hash: try hex(local, .md5), to: "h.bin", progress: nil)
            #expect(stored.hash == nil, "\(String(describing: stored.hash))")
            #expect(try await p.stat("h.bin")?.hash == nil)
            #expect(!s.server.providerControl.isArmed(.shareFileEmptyHash))
        }
    }

    @Test("a threaded upload is finished as the SDK finishes it (respformat=json), and the answer names the stored file")
    func finishFormat() async throws {
        try await withInProcessSandbox { s in
            let p = s.shareFile()
            let local = s.file("f.bin", bytes: (1 << 20) + 1)
            let md5 = try hex(local, .md5)
            let stored = try await p.upload(local: local, size: (1 << 20) + 1, hash: md5, to: "f.bin", progress: nil)
            #expect(stored.hash == md5 && stored.id != nil)
        }
    }
}
