import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Testing

/// Dropbox as the real service answers now and then: write contention inside a 409, and the
/// 150 MiB ceiling of one upload call.
@Suite("Dropbox client: wire behaviour")
struct DropboxWireTests {
    @Test("409 path/too_many_write_operations on a folder, an upload and a finish is asked again, not a failure")
    func writeContention409() async throws {
        try await withInProcessSandbox { s in
            let p = s.dropbox()
            s.server.providerControl.arm(.dropboxWriteContention, count: 1)
            try await p.makeFolders("busy")
            let small = s.file("small.bin", bytes: 1000)
            s.server.providerControl.arm(.dropboxWriteContention, count: 1)
            _ = try await p.upload(local: small, size: 1000, hash: try hex(small, .dropbox), to: "busy/small.bin", progress: nil)
            let big = s.file("big.bin", bytes: (4 << 20) + 10)
            s.server.providerControl.arm(.dropboxWriteContention, count: 1)
            _ = try await p.upload(local: big, size: (4 << 20) + 10, hash: try hex(big, .dropbox), to: "busy/big.bin", progress: nil)
            #expect(try await p.stat("busy/small.bin")?.size == 1000)
            #expect(try await p.stat("busy/big.bin")?.size == (4 << 20) + 10)
            #expect(!s.server.providerControl.isArmed(.dropboxWriteContention), "each contention was met and answered")
        }
    }

    @Test("write contention that outlasts the retries is a retryable error, never permanent")
    func writeContentionPersisting() async throws {
        try await withInProcessSandbox { s in
            let p = s.dropbox()
            s.server.providerControl.arm(.dropboxWriteContention, count: nil)
            let error = await #expect(throws: ArchiveError.self) { try await p.makeFolders("busy") }
            #expect(error?.retryable == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("too_many_write_operations") == true)
        }
    }

    @Test("a chunk size over Dropbox's 150 MiB per call is capped, so a 160 MiB file goes up in calls Dropbox takes")
    func chunkCap() async throws {
        try await withInProcessSandbox { s in
            let p = s.dropbox(chunkSize: 256 << 20)
            let size = 160 << 20
            let big = s.file("huge.bin", bytes: size)
            let hash = try hex(big, .dropbox)
            let stored = try await p.upload(local: big, size: Int64(size), hash: hash, to: "huge.bin", progress: nil)
            #expect(stored.size == Int64(size) && stored.hash == hash)
        }
    }
}
