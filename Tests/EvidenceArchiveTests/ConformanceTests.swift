import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import Foundation
import EvidenceTesting
import Testing

/// One suite every provider passes (like rclone's fstests): the whole per-provider part is the
/// factory below. Each factory returns the provider, the local folder where its files land (to
/// check bytes independently of the provider), and a clean-up.
enum ProviderUnderTest: String, CaseIterable, CustomTestStringConvertible {
    case local, webdav

    var testDescription: String { rawValue == "webdav" ? "ownCloud provider on a real WebDAV server (rclone serve webdav)" : "local folder" }

    func make() throws -> (provider: any ArchiveProvider, root: String, cleanup: () -> Void) {
        let dir = TempDir()
        switch self {
        case .local:
            return (LocalProvider(account: "vault", root: dir.path), dir.path, dir.cleanup)
        case .webdav:
            let server = try WebDAVServer(root: dir.path)
            let p = OwnCloudProvider(account: "office", url: server.url, user: WebDAVServer.user, password: WebDAVServer.password,
                                     baseURL: server.url, http: httpClient())
            return (p, dir.path, { server.stop(); dir.cleanup() })
        }
    }
}

@Suite("Archive provider conformance")
struct ConformanceTests {
    @Test("nested folders are made, and making existing ones again is fine", arguments: ProviderUnderTest.allCases)
    func folders(_ which: ProviderUnderTest) async throws {
        let (p, root, cleanup) = try which.make()
        defer { cleanup() }
        try await p.makeFolders("evidence/cam/2026/11/23")
        try await p.makeFolders("evidence/cam/2026/11/23")
        try await p.makeFolders("evidence/cam/2026/12")
        var isDir: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: root + "/evidence/cam/2026/11/23", isDirectory: &isDir) && isDir.boolValue)
        #expect(FileManager.default.fileExists(atPath: root + "/evidence/cam/2026/12", isDirectory: &isDir) && isDir.boolValue)
    }

    @Test("empty, 1-byte, 1 MiB and 1 MiB+1 files upload byte for byte; stat reports size (and hash where the provider has one)",
          arguments: ProviderUnderTest.allCases)
    func uploads(_ which: ProviderUnderTest) async throws {
        let (p, root, cleanup) = try which.make()
        defer { cleanup() }
        let src = TempDir()
        defer { src.cleanup() }
        try await p.makeFolders("up")
        for size in [0, 1, 1 << 20, (1 << 20) + 1] {
            let local = src.file("f\(size).bin", bytes: size)
            let h = try hex(local, p.hashKind)
            let stored = try await p.upload(local: local, size: Int64(size), hash: h, to: "up/f\(size).bin", progress: nil)
            #expect(stored.size == Int64(size))
            let st = try #require(try await p.stat("up/f\(size).bin"))
            #expect(st.size == Int64(size))
            if let remoteHash = st.hash { #expect(remoteHash == h) }
            #expect(FileManager.default.contentsEqual(atPath: local, andPath: root + "/up/f\(size).bin"))
            let back = src.path + "/back-\(size)"
            try await p.download("up/f\(size).bin", to: back)
            #expect(try hex(back, .sha256) == (try hex(local, .sha256)))
        }
    }

    @Test("uploading onto an existing file is a conflict and leaves it untouched", arguments: ProviderUnderTest.allCases)
    func conflict(_ which: ProviderUnderTest) async throws {
        let (p, root, cleanup) = try which.make()
        defer { cleanup() }
        let src = TempDir()
        defer { src.cleanup() }
        let a = src.file("a", bytes: 100), b = src.file("b", bytes: 200)
        _ = try await p.upload(local: a, size: 100, hash: try hex(a, p.hashKind), to: "x.bin", progress: nil)
        let error = await #expect(throws: ArchiveError.self) {
            _ = try await p.upload(local: b, size: 200, hash: try hex(b, p.hashKind), to: "x.bin", progress: nil)
        }
        #expect(error?.kind == .conflict, "\(error?.message ?? "")")
        #expect(FileManager.default.contentsEqual(atPath: a, andPath: root + "/x.bin"))
    }

    @Test("stat of nothing is nil; delete removes; deleting nothing is fine", arguments: ProviderUnderTest.allCases)
    func statDelete(_ which: ProviderUnderTest) async throws {
        let (p, _, cleanup) = try which.make()
        defer { cleanup() }
        let src = TempDir()
        defer { src.cleanup() }
        #expect(try await p.stat("nothing/here.bin") == nil)
        let a = src.file("a", bytes: 10)
        _ = try await p.upload(local: a, size: 10, hash: try hex(a, p.hashKind), to: "gone.bin", progress: nil)
        try await p.delete("gone.bin")
        #expect(try await p.stat("gone.bin") == nil)
        try await p.delete("gone.bin")
    }

    @Test("unicode and awkward names arrive; traversal in a name or template cannot leave the root",
          arguments: ProviderUnderTest.allCases)
    func names(_ which: ProviderUnderTest) async throws {
        let (p, root, cleanup) = try which.make()
        defer { cleanup() }
        let src = TempDir()
        defer { src.cleanup() }
        let a = src.file("a", bytes: 5)
        for raw in ["Ünïcødé résumé 日本 🎥.mp4", "with space and 'quote' & amp #1.txt", "a:b?c*d<e>f|g\"h.txt",
                    "../../escape.txt", "trailing dot.", String(repeating: "é", count: 200) + ".mov"] {
            let path = RemotePath.sanitized("case/" + raw, for: p)
            let components = path.split(separator: "/").map(String.init)
            #expect(!components.contains("..") && !components.contains("."))
            try await p.makeFolders(RemotePath.parent(path))
            _ = try await p.upload(local: a, size: 5, hash: try hex(a, p.hashKind), to: path, progress: nil)
            #expect(try await p.stat(path)?.size == 5, "\(path)")
            #expect(path.utf8.count < 300 && (raw.hasSuffix(".mov") ? path.hasSuffix(".mov") : true), "\(path)")
            let real = (root + "/" + path as NSString).standardizingPath
            #expect(real.hasPrefix(root), "\(real) is inside \(root)")
            #expect(FileManager.default.fileExists(atPath: real))
        }
        #expect(!FileManager.default.fileExists(atPath: (root as NSString).deletingLastPathComponent + "/escape.txt"))
    }
}

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
