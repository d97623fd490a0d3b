import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Testing

/// A share link is never made more open than the rule asks: a setting the plan refuses
/// leads to a stricter link (recorded as such) or to a failed share, never to an open one.
@Suite("Share links are never widened")
struct ShareStrictnessTests {
    static let asked = ShareRequest(access: .open, expires: Date().addingTimeInterval(86400), password: "s3cret-pass")

    @Test("Dropbox on a free plan refuses a password and an expiry: the link is members-only, and says what was asked")
    func dropboxStricter() async throws {
        try await withInProcessSandbox { s in
            let p = s.dropbox()
            let local = s.file("d.bin", bytes: 10)
            _ = try await p.upload(local: local, size: 10, hash: try hex(local, .dropbox), to: "d.bin", progress: nil)
            let link = try await p.share("d.bin", Self.asked)
            #expect(link.audience == "no_one", "made \(link.audience ?? "?")")
            #expect(link.fallback?.contains("asked access open, a password") == true, "\(link.fallback ?? "")")
            #expect(link.fallback?.contains("s3cret-pass") == false)
        }
    }

    @Test("Dropbox: an existing public link is not reused for a rule that asks a password; the share fails saying why")
    func dropboxNoOpenReuse() async throws {
        try await withInProcessSandbox { s in
            let p = s.dropbox()
            let local = s.file("e.bin", bytes: 10)
            _ = try await p.upload(local: local, size: 10, hash: try hex(local, .dropbox), to: "e.bin", progress: nil)
            let open = try await p.share("e.bin", ShareRequest(access: .open))
            #expect(open.audience == "public")
            let error = await #expect(throws: ArchiveError.self) { _ = try await p.share("e.bin", Self.asked) }
            #expect(error?.retryable == false && error?.message.contains("more open than asked") == true, "\(error?.message ?? "")")
        }
    }

    @Test("Box on a free plan refuses a password and an expiry: the link is for collaborators only, never open")
    func boxStricter() async throws {
        try await withInProcessSandbox { s in
            s.server.providerControl.arm(.freePlan, count: nil)
            let p = s.box()
            let local = s.file("b.bin", bytes: 10)
            _ = try await p.upload(local: local, size: 10, hash: try hex(local, .sha1), to: "b.bin", progress: nil)
            let link = try await p.share("b.bin", Self.asked)
            #expect(link.audience == "collaborators", "made \(link.audience ?? "?")")
            #expect(link.fallback?.contains("asked access open, a password") == true, "\(link.fallback ?? "")")
            // Asked again: the collaborators-only link is strict enough and is reused as it is.
            #expect(try await p.share("b.bin", Self.asked).url == link.url)
        }
    }

    @Test("Box: company access on a personal account becomes collaborators-only, not open")
    func boxCompany() async throws {
        try await withInProcessSandbox { s in
            let p = s.box()
            let local = s.file("c.bin", bytes: 10)
            _ = try await p.upload(local: local, size: 10, hash: try hex(local, .sha1), to: "c.bin", progress: nil)
            let link = try await p.share("c.bin", ShareRequest(access: .company))
            #expect(link.audience == "collaborators", "made \(link.audience ?? "?")")
        }
    }

    @Test("Box: an open link is tightened, not reused, when the rule asks for company access")
    func boxNoOpenReuse() async throws {
        try await withInProcessSandbox { s in
            let p = s.box()
            let local = s.file("r.bin", bytes: 10)
            _ = try await p.upload(local: local, size: 10, hash: try hex(local, .sha1), to: "r.bin", progress: nil)
            _ = try await p.share("r.bin", ShareRequest(access: .open))
            let tightened = try await p.share("r.bin", ShareRequest(access: .collaborators))
            #expect(tightened.audience == "collaborators")
        }
    }
}
