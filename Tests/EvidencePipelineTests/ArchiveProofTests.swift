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
}
