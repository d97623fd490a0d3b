@testable import EvidencePipeline
import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Logging
import Testing

/// How the archive job proves a copy on ownCloud and on Nextcloud.
@Suite("Archive proof on ownCloud and Nextcloud")
struct ArchiveProofTests {
    @Test("on Nextcloud (which echoes the OC-Checksum it was sent) a copy corrupted on the server is refused; an intact one is proven by reading back",
          arguments: [OwnCloudFlavour.nextcloud, .owncloud])
    func nextcloudCopyIsReadBack(_ flavour: OwnCloudFlavour) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-proof-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir + "/sandbox", owncloudFlavour: flavour))
        try await server.withRunning { (url: URL) async throws -> Void in
            let p = OwnCloudProvider(account: "oc", url: url.absoluteString + "/owncloud", user: OwnCloudEmulator.user,
                                     password: OwnCloudEmulator.password, baseURL: nil,
                                     http: HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "proof")))
            let local = dir + "/clip.bin"
            try Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: URL(fileURLWithPath: local))
            let sha1 = try ProviderHashKind.sha1.digest(of: local)
            let sha256 = try FileHasher.hash(path: local).digest
            for corrupt in [true, false] {
                let path = corrupt ? "bad.bin" : "good.bin"
                if corrupt { server.providerControl.corruptNextUpload(provider: "owncloud") }
                do throws(ArchiveError) {
                    _ = try await p.upload(local: local, size: 40_000, hash: sha1, to: path, progress: nil)
                } catch {
                    // ownCloud checks OC-Checksum itself and refuses the damaged bytes: also caught.
                    #expect(flavour == .owncloud && corrupt && error.retryable, "\(error)")
                    continue
                }
                let stored = try #require(try await p.stat(path))
                let how = try await ArchiveHandler.proof(of: stored, at: path, size: 40_000, expected: sha1, sha256: sha256,
                                                         provider: p, scratch: dir)
                switch (flavour, corrupt) {
                case (.nextcloud, true): #expect(how == nil, "a corrupted copy was proven by \(how ?? "")")
                case (.nextcloud, false): #expect(how == "read-back sha256")
                case (.owncloud, _): #expect(how == (corrupt ? nil : "sha1:\(sha1)"))
                }
            }
        }
    }

    /// rclone's own WebDAV server, its ETags the SHA-1 of each file's bytes (`--etag-hash SHA1`),
    /// under an account that says so (`etag = "sha1"`), and under ones that say so wrongly.
    @Test("etag = \"sha1\" on rclone serve webdav --etag-hash SHA1: the PUT's answer and a stat carry the server's SHA-1 of the bytes (a copy changed on the server is refused, no read-back); a declared ETag that is not a SHA-1, or a SHA-1 that is not the bytes', stops with the setting's name")
    func etagDeclaredSHA1() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-etag-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir + "/dav", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let local = dir + "/clip.bin"
        try Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: local))
        let sha1 = try ProviderHashKind.sha1.digest(of: local)
        let sha256 = try FileHasher.hash(path: local).digest
        let http = HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "etag"))
        func provider(_ server: WebDAVServer, etag: Bool) -> OwnCloudProvider {
            OwnCloudProvider(account: "dav", url: server.url, user: WebDAVServer.user, password: WebDAVServer.password,
                             baseURL: server.url, http: http, etagIsSHA1: etag)
        }

        let hashed = try WebDAVServer(root: dir + "/dav", etagHash: "SHA1")
        defer { hashed.stop() }
        let p = provider(hashed, etag: true)
        #expect(await p.statReportsHash())
        try await p.makeFolders("a")
        try await p.makeFolders("b")
        let uploaded = try await p.upload(local: local, size: 40_000, hash: sha1, to: "a/clip.bin", progress: nil)
        #expect(uploaded.hash == sha1, "the PUT's ETag is the server's SHA-1 of what it stored")
        #expect(try await ArchiveHandler.proof(of: uploaded, at: "a/clip.bin", size: 40_000, expected: sha1, sha256: sha256,
                                               provider: p, scratch: dir) == "sha1:\(sha1)")
        #expect(try await p.stat("a/clip.bin")?.hash == sha1)
        // The same size, other bytes, written on the server's disk: its ETag says so, the copy is refused.
        var other = try Data(contentsOf: URL(fileURLWithPath: local)); other[100] ^= 0xFF
        try other.write(to: URL(fileURLWithPath: dir + "/dav/a/clip.bin"))
        let changed = try #require(try await p.stat("a/clip.bin"))
        #expect(changed.hash != sha1)
        #expect(try await ArchiveHandler.proof(of: changed, at: "a/clip.bin", size: 40_000, expected: sha1, sha256: sha256,
                                               provider: p, scratch: dir) == nil)
        // The attacker's (or a wrong configuration's) case: intact bytes under a "SHA-1" that is
        // not theirs. Never proven, never uploaded again and again: a permanent error naming etag.
        _ = try await p.upload(local: local, size: 40_000, hash: sha1, to: "b/clip.bin", progress: nil)
        let lying = RemoteFile(path: "b/clip.bin", size: 40_000, hash: String(repeating: "ab", count: 20))
        let refused = await #expect(throws: ArchiveError.self) {
            _ = try await ArchiveHandler.proof(of: lying, at: "b/clip.bin", size: 40_000, expected: sha1, sha256: sha256,
                                               provider: p, scratch: dir)
        }
        #expect(refused?.kind == .permanent && refused?.message.contains("etag") == true, "\(refused?.message ?? "")")
        hashed.stop()

        // The same server started without --etag-hash (its ETags are modification marks), the
        // account still declaring SHA-1s: the first stat stops, naming the setting.
        let plain = try WebDAVServer(root: dir + "/dav")
        defer { plain.stop() }
        let wrong = await #expect(throws: ArchiveError.self) { _ = try await provider(plain, etag: true).stat("a/clip.bin") }
        #expect(wrong?.kind == .permanent && wrong?.message.contains("etag-hash SHA1") == true, "\(wrong?.message ?? "")")
        // Undeclared, the ETag is never taken for a digest: no hash, the copy is read back.
        let undeclared = provider(plain, etag: false)
        #expect(try await undeclared.stat("a/clip.bin")?.hash == nil)
        #expect(!(await undeclared.statReportsHash()))
    }

    @Test("etag = \"sha1\" declared for ownCloud (whose ETags are change markers): refused before the PUT sends anything, naming the setting", arguments: [OwnCloudFlavour.owncloud, .nextcloud])
    func etagDeclaredOnOwnCloud(_ flavour: OwnCloudFlavour) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-etag-oc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir + "/sandbox", owncloudFlavour: flavour))
        try await server.withRunning { (url: URL) async throws -> Void in
            func provider(etag: Bool) -> OwnCloudProvider {
                OwnCloudProvider(account: "oc", url: url.absoluteString + "/owncloud", user: OwnCloudEmulator.user,
                                 password: OwnCloudEmulator.password, baseURL: nil,
                                 http: HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "etag-oc")), etagIsSHA1: etag)
            }
            let local = dir + "/clip.bin"
            try Data(repeating: 7, count: 5_000).write(to: URL(fileURLWithPath: local))
            let sha1 = try ProviderHashKind.sha1.digest(of: local)
            let refused = await #expect(throws: ArchiveError.self) {
                _ = try await provider(etag: true).upload(local: local, size: 5_000, hash: sha1, to: "clip.bin", progress: nil)
            }
            #expect(refused?.kind == .permanent && refused?.message.contains("whose ETags are not digests") == true, "\(refused?.message ?? "")")
            #expect(try await provider(etag: false).stat("clip.bin") == nil, "nothing was sent")
        }
    }
}
