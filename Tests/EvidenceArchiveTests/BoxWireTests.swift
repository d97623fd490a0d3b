import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Testing

/// Box upload sessions as the real service answers them: `parts_mismatch` right after the
/// last part, parts that cannot be sent twice, part lists in pages, and single-use refresh
/// tokens shared by two processes.
@Suite("Box client: wire behaviour")
struct BoxWireTests {
    static let size = (32 << 20) + 1000   // five parts of 8 MiB

    @Test("a commit answered 400 parts_mismatch right after the last part is committed again, not failed")
    func partsMismatch() async throws {
        try await withInProcessSandbox { s in
            let p = s.box()
            let local = s.file("a.bin", bytes: 20_000_000)
            s.server.providerControl.arm(.boxPartsMismatch, count: 1)
            let sha1 = try hex(local, .sha1)
            let stored = try await p.upload(local: local, size: 20_000_000, hash: sha1, to: "a.bin", progress: nil)
            #expect(stored.hash == sha1)
            #expect(!s.server.providerControl.isArmed(.boxPartsMismatch), "the mismatch was met")
        }
    }

    @Test("409 name_temporarily_reserved / operation_blocked_temporary is waited out and tried again, never the conflict path: the file keeps its name, the session survives")
    func temporaryConflict() async throws {
        try await withInProcessSandbox { s in
            let p = s.box()
            // A small file: the direct upload is answered 409 name_temporarily_reserved twice.
            let small = s.file("c.bin", bytes: 20_000)
            s.server.providerControl.arm(.boxTemporaryConflict, count: 2)
            let one = try await p.upload(local: small, size: 20_000, hash: try hex(small, .sha1), to: "c.bin", progress: nil)
            #expect(one.path == "c.bin", "stored under its own name, not the alternate: \(one.path)")
            #expect(!s.server.providerControl.isArmed(.boxTemporaryConflict))
            // A large one: the session creation and then the commit are each answered it once.
            let large = s.file("d.bin", bytes: 20_000_000)
            s.server.providerControl.arm(.boxTemporaryConflict, count: 2)
            let sha1 = try hex(large, .sha1)
            let two = try await p.upload(local: large, size: 20_000_000, hash: sha1, to: "d.bin", progress: nil)
            #expect(two.path == "d.bin" && two.hash == sha1, "\(two)")
            #expect(!s.server.providerControl.isArmed(.boxTemporaryConflict), "both temporary answers were met")
        }
    }

    @Test("a download answered 202 Accepted + Retry-After (not ready yet) is waited out, then read; before, it was refused as 'expected a redirect'")
    func downloadNotReady() async throws {
        try await withInProcessSandbox { s in
            let p = s.box()
            let local = s.file("r.bin", bytes: 30_000)
            let sha1 = try hex(local, .sha1)
            _ = try await p.upload(local: local, size: 30_000, hash: sha1, to: "r.bin", progress: nil)
            s.server.providerControl.arm(.boxDownloadNotReady, count: 2)
            let back = s.dir + "/r.back"
            let started = ContinuousClock.now
            try await p.download("r.bin", to: back)
            #expect(!s.server.providerControl.isArmed(.boxDownloadNotReady), "both 202s were met")
            #expect(ContinuousClock.now - started >= .seconds(1.9), "Retry-After: 1 waited each time")
            #expect(try hex(back, .sha1) == sha1)
        }
    }

    @Test("a part whose answer was lost is not sent as a conflict: the parts are listed again and the upload goes on")
    func resentPart() async throws {
        try await withInProcessSandbox { s in
            let p = s.box()
            let local = s.file("b.bin", bytes: 20_000_000)
            s.server.providerControl.arm(.boxPartAnswerLost, count: 1)
            let stored = try await p.upload(local: local, size: 20_000_000, hash: try hex(local, .sha1), to: "b.bin", progress: nil)
            let sha1 = try hex(local, .sha1)
            #expect(stored.path == "b.bin" && stored.hash == sha1)
            #expect(try await p.stat("b.bin")?.size == 20_000_000)
            #expect(s.uploads() == ["box:/b.bin": 1], "one file, under its own name: \(s.uploads())")
        }
    }

    @Test("a resumed upload reads every page of the part list (Box pages it), sending no part twice")
    func partsPaging() async throws {
        try await withInProcessSandbox { s in
            let p = s.box()
            let local = s.file("c.bin", bytes: Self.size)
            let hash = try hex(local, .sha1)
            s.server.providerControl.arm(.boxSmallPartPages, count: nil)
            let holder = TaskHolder()
            // Stop in the fourth part: the first three are at Box, over two pages of the list.
            let first = Task {
                try await p.upload(local: local, size: Int64(Self.size), hash: hash, to: "c.bin", progress: { sent in
                    if sent > (3 << 23) + 4096 { holder.cancel() }
                })
            }
            holder.set(first)
            let interrupted = await first.result
            #expect(throws: (any Error).self) { try interrupted.get() }
            let resumedAt = MinBox()
            let stored = try await p.upload(local: local, size: Int64(Self.size), hash: hash, to: "c.bin",
                                            progress: { resumedAt.note($0) })
            #expect(stored.hash == hash)
            #expect(resumedAt.value >= 3 << 23, "resumed after the three listed parts, at \(resumedAt.value)")
        }
    }

    @Test("a refresh token rotated by another process is taken from the token file, not the spent one re-sent")
    func rotatedElsewhere() async throws {
        try await withInProcessSandbox { s in
            let file = s.tokens + "/box-rt.json"
            let grant = OAuthSession.Grant.refreshToken(initial: "sandbox-box-refresh")
            let stale = s.boxSession(grant: grant, tokenFile: file)
            _ = try await stale.current()                      // this process read the (empty) token file
            let other = s.boxSession(grant: grant, tokenFile: file)
            _ = try await s.box(session: other).whoami()        // another one spent the refresh token
            _ = try await s.box(session: stale).whoami()
            s.server.providerControl.expireTokens()
            _ = try await s.box(session: stale).whoami()        // and now it rotates on from the saved one
            _ = try await s.box(session: other).whoami()
        }
    }

    @Test("a refresh whose answer never came (and the token file holds nothing newer) is sent once more and works")
    func lostRefreshAnswer() async throws {
        try await withInProcessSandbox { s in
            let file = s.tokens + "/box-lost.json"
            let a = s.boxSession(grant: .refreshToken(initial: "sandbox-box-refresh"), tokenFile: file)
            _ = try await s.box(session: a).whoami()
            s.server.providerControl.expireTokens()
            s.server.misbehaviour.arm(prefix: "/box/api/oauth2/token", mode: .truncated, count: 1)
            _ = try await s.box(session: a).whoami()
            #expect(s.server.misbehaviour.pending.isEmpty, "the refresh answer was lost once")
            #expect(await a.refreshCount == 2)
        }
    }
}
