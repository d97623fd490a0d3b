import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import Foundation
import EvidenceSandbox
import Testing

/// The conformance cases issue 19 adds: how uploads are assembled and verified, the services'
/// per-request caps and transient commit answers, and share links (expiry, never wider than
/// asked, lists read across pages). Where a case cannot apply to a provider, its arguments say
/// which and why; nothing is skipped silently.
extension ConformanceTests {
    /// A local folder copies in one piece: the same contract, without chunks.
    @Test("a chunked upload is assembled once under its own name; onto an existing file it is a conflict that leaves it untouched",
          arguments: ProviderUnderTest.allCases)
    func chunkedAssembly(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let size = which.boundarySizes.last!
            let small = h.dir.file("small.bin", bytes: 100)
            let big = h.dir.file("big.bin", bytes: size)
            let bigHash = try hex(big, p.hashKind)
            _ = try await p.upload(local: small, size: 100, hash: try hex(small, p.hashKind), to: "taken.bin", progress: nil)
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.upload(local: big, size: Int64(size), hash: bigHash, to: "taken.bin", progress: nil)
            }
            #expect(error?.kind == .conflict, "\(error?.message ?? "")")
            #expect(try await p.stat("taken.bin")?.size == 100, "the file there is untouched")
            if let root = h.root { #expect(FileManager.default.contentsEqual(atPath: small, andPath: root + "/taken.bin")) }

            let stored = try await p.upload(local: big, size: Int64(size), hash: bigHash, to: "free.bin", progress: nil)
            #expect(stored.size == Int64(size))
            let back = h.dir.path + "/back.bin"
            try await p.download("free.bin", to: back)
            #expect(try hex(back, .sha256) == (try hex(big, .sha256)), "assembled in order, byte for byte")
            if h.sandbox != nil {
                let counts = try await h.uploads()
                #expect(counts.filter { $0.key.hasSuffix("/free.bin") }.values.reduce(0, +) == 1, "\(counts)")
                #expect(counts.filter { $0.key.hasSuffix("/taken.bin") }.values.reduce(0, +) == 1, "\(counts)")
            }
        }
    }

    @Test("verification never trusts an echoed checksum: a hash claimed for other bytes is refused, or not reported back as the stored file's",
          arguments: ProviderUnderTest.allCases)
    func echoedChecksum(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            try await Self.claimsOtherBytes(h)
        }
    }

    @Test("Nextcloud stores the checksum a client sends: a hash claimed for other bytes must still not be reported back")
    func echoedChecksumNextcloud() async throws {
        try await withProvider(.owncloud, sandboxArguments: ["--owncloud-flavour", "nextcloud"]) { h in
            try await Self.claimsOtherBytes(h)
        }
    }

    static func claimsOtherBytes(_ h: Harness) async throws {
        let p = h.provider
        let real = h.dir.file("real.bin", bytes: 5000)
        let other = h.dir.file("other.bin", bytes: 5000)
        let claimed = try hex(other, p.hashKind)
        do throws(ArchiveError) {
            _ = try await p.upload(local: real, size: 5000, hash: claimed, to: "claimed.bin", progress: nil)
        } catch {
            // Refused for the mismatch: nothing wrong was stored under the claimed hash.
            #expect(try await p.stat("claimed.bin")?.hash != claimed, "\(error.message)")
            return
        }
        let st = try #require(try await p.stat("claimed.bin"))
        #expect(st.hash != claimed, "the provider reported the hash we sent, not one of the bytes it holds")
        if let hash = st.hash { #expect(hash == (try hex(real, p.hashKind))) }
    }

    /// Dropbox takes at most 150 MiB a call. The others have no cap a configured chunk size can
    /// pass: Box fixes the part size itself, ShareFile and ownCloud take any chunk size, a local
    /// folder is written in one piece.
    @Test("a chunk size over the service's per-request cap is capped, so a larger file goes up in calls it takes (Dropbox: 150 MiB)",
          arguments: [ProviderUnderTest.dropbox])
    func chunkCap(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let s = try #require(h.sandbox).baseURL.absoluteString
            let p = DropboxProvider(account: "dbx", session: try #require(h.session), http: httpClient(), baseURL: "\(s)/dropbox/api",
                                    uploadURL: "\(s)/dropbox/content", resumeDirectory: h.resumeDirectory, chunkSize: 256 << 20)
            let size = 160 << 20
            let big = h.dir.file("huge.bin", bytes: size)
            let hash = try hex(big, .dropbox)
            let stored = try await p.upload(local: big, size: Int64(size), hash: hash, to: "huge.bin", progress: nil)
            #expect(stored.size == Int64(size) && stored.hash == hash)
        }
    }

    /// The quirk each service has for "not yet, ask again" at the end of an upload. ownCloud's
    /// (423 Locked) is emulated only by path, and the chunk folder's name is the client's secret
    /// until it is made, so it has no case here; a local folder and rclone's WebDAV have none.
    static let commitQuirks: [ProviderUnderTest: String] = [
        .box: "box-parts-mismatch",              // 400 parts_mismatch right after the last part
        .dropbox: "dropbox-409-too-many-writes", // 409 path/too_many_write_operations on finish
        .sharefile: "sharefile-chunk-error-text", // HTTP 200 "ERROR: …" from the upload server
    ]

    @Test("a transient answer to the last step of a chunked upload is asked again (now or on the job's next attempt), and the file arrives once",
          arguments: [ProviderUnderTest.box, .dropbox, .sharefile])
    func transientCommit(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let size = which.boundarySizes.last!
            let big = h.dir.file("c.bin", bytes: size)
            let hash = try hex(big, p.hashKind)
            try await h.control("quirk?quirk=\(try #require(Self.commitQuirks[which]))&count=1")
            do throws(ArchiveError) {
                _ = try await p.upload(local: big, size: Int64(size), hash: hash, to: "c.bin", progress: nil)
            } catch {
                #expect(error.retryable, "a transient answer must not fail the file for good: \(error.message)")
                _ = try await p.upload(local: big, size: Int64(size), hash: hash, to: "c.bin", progress: nil)
            }
            #expect(try await p.stat("c.bin")?.hash == hash)
            #expect(try await h.uploads().filter { $0.key.hasSuffix("/c.bin") }.values.reduce(0, +) == 1)
        }
    }

    /// rclone's WebDAV server has no share API (the ownCloud client says so: `.unsupported`).
    static let sharing: [ProviderUnderTest] = [.local, .dropbox, .box, .sharefile, .owncloud]

    @Test("a share asked without expiry never expires: no provider default (ShareFile's 30 days) is let in", arguments: sharing)
    func shareWithoutExpiry(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let a = h.dir.file("a", bytes: 10)
            _ = try await p.upload(local: a, size: 10, hash: try hex(a, p.hashKind), to: "forever.mp4", progress: nil)
            let link = try await p.share("forever.mp4", ShareRequest(access: .open))
            #expect(link.expires == nil, "expires \(String(describing: link.expires))")
            #expect(try await p.share("forever.mp4", ShareRequest(access: .open)).expires == nil, "nor when reused")
        }
    }

    @Test("a share is never wider than asked: an open link is not reused (or made) for a rule asking collaborators and a password",
          arguments: sharing)
    func shareNeverWidened(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let a = h.dir.file("a", bytes: 10)
            _ = try await p.upload(local: a, size: 10, hash: try hex(a, p.hashKind), to: "w.mp4", progress: nil)
            let open = try await p.share("w.mp4", ShareRequest(access: .open))
            let strict = ShareRequest(access: .collaborators, password: "s3cret-pass")
            let made: ShareLink
            do throws(ArchiveError) { made = try await p.share("w.mp4", strict) } catch {
                #expect(!error.retryable, "refusing to widen is the provider's final word: \(error.message)")
                #expect(!error.message.contains("s3cret-pass"))
                return
            }
            #expect(!Self.isOpen(made), "made \(made.audience ?? "an open link") for a rule asking collaborators: \(made)")
            if Self.isOpen(open) { #expect(made.url != open.url || made.audience != open.audience, "the open link was reused") }
            #expect(!(made.fallback ?? "").contains("s3cret-pass"))
        }
    }

    /// A link anyone holding it can open, by what the provider said of it.
    static func isOpen(_ link: ShareLink) -> Bool {
        guard let audience = link.audience else { return !link.passwordProtected }
        return ["public", "open", "anyone", "password"].contains(audience) && !link.passwordProtected
    }

    /// The lists our clients page through: ShareFile's share list (OData `nextLink`) and Box's
    /// upload-session parts (`limit`/`offset`). Dropbox's link list is asked for one file
    /// (`direct_only`) and ownCloud's share list for one path: one page each, nothing to page;
    /// a local folder and rclone's WebDAV are not listed.
    @Test("a list longer than a page is read to its end: what is on a later page is found", arguments: [ProviderUnderTest.sharefile, .box])
    func pagedLists(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            switch which {
            case .sharefile:
                var urls: [String: String] = [:]
                for name in ["p1.bin", "p2.bin", "p3.bin"] {
                    let local = h.dir.file(name, bytes: 10)
                    _ = try await p.upload(local: local, size: 10, hash: try hex(local, p.hashKind), to: name, progress: nil)
                    urls[name] = try await p.share(name, ShareRequest(access: .open)).url
                }
                try await h.control("quirk?quirk=sharefile-small-pages&count=always")
                #expect(try await p.share("p3.bin", ShareRequest(access: .open)).url == urls["p3.bin"], "found on the third page")
            default:
                // Stop in the fourth of five parts, then resume with the part list two to a page.
                let size = (32 << 20) + 1000
                let local = h.dir.file("paged.bin", bytes: size)
                let hash = try hex(local, p.hashKind)
                try await h.control("quirk?quirk=box-small-part-pages&count=always")
                let holder = TaskHolder()
                let first = Task {
                    try await p.upload(local: local, size: Int64(size), hash: hash, to: "paged.bin", progress: { sent in
                        if sent > (3 << 23) + 4096 { holder.cancel() }
                    })
                }
                holder.set(first)
                _ = await first.result
                let resumedAt = MinBox()
                let stored = try await p.upload(local: local, size: Int64(size), hash: hash, to: "paged.bin", progress: { resumedAt.note($0) })
                #expect(stored.hash == hash)
                #expect(resumedAt.value >= 3 << 23, "resumed after the three listed parts, at \(resumedAt.value)")
            }
        }
    }
}
