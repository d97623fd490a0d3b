import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import Foundation
import EvidenceSandbox
import Testing

/// One suite every provider passes (like rclone's fstests): the per-provider part is
/// `ProviderUnderTest.make()`. Bytes are checked independently of the provider where files
/// land in a local folder (local, WebDAV), and by reading back through the provider everywhere.
@Suite("Archive provider conformance")
struct ConformanceTests {
    @Test("nested folders are made, and making existing ones again is fine", arguments: ProviderUnderTest.allCases)
    func folders(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            try await p.makeFolders("evidence/cam/2026/11/23")
            try await p.makeFolders("evidence/cam/2026/11/23")
            try await p.makeFolders("evidence/cam/2026/12")
            try await p.makeFolders("evidence")
            let a = h.dir.file("a", bytes: 3)
            _ = try await p.upload(local: a, size: 3, hash: try hex(a, p.hashKind), to: "evidence/cam/2026/11/23/a.bin", progress: nil)
            #expect(try await p.stat("evidence/cam/2026/11/23/a.bin")?.size == 3)
            if let root = h.root {
                var isDir: ObjCBool = false
                #expect(FileManager.default.fileExists(atPath: root + "/evidence/cam/2026/12", isDirectory: &isDir) && isDir.boolValue)
            }
            // A folder where a file is expected is reported, not mistaken for the file.
            await #expect(throws: ArchiveError.self) { _ = try await p.stat("evidence/cam") }
        }
    }

    @Test("empty, 1-byte, 1 MiB and 1 MiB+1 files arrive byte for byte; stat reports size and the provider's hash",
          arguments: ProviderUnderTest.allCases)
    func uploads(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            try await roundTrip(h, sizes: [0, 1, 1 << 20, (1 << 20) + 1])
        }
    }

    @Test("sizes at the chunk boundary and a large chunked file arrive whole, verified by the provider's hash",
          arguments: ProviderUnderTest.allCases)
    func chunkBoundaries(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            try await roundTrip(h, sizes: which.boundarySizes)
        }
    }

    func roundTrip(_ h: Harness, sizes: [Int]) async throws {
        let p = h.provider
        try await p.makeFolders("up")
        for size in sizes {
            let local = h.dir.file("f\(size).bin", bytes: size)
            let hash = try hex(local, p.hashKind)
            let stored = try await p.upload(local: local, size: Int64(size), hash: hash, to: "up/f\(size).bin", progress: nil)
            #expect(stored.size == Int64(size))
            let st = try #require(try await p.stat("up/f\(size).bin"))
            #expect(st.size == Int64(size))
            // Emulated services always report their hash; a plain WebDAV server may not.
            if h.sandbox != nil { #expect(st.hash == hash, "\(size) bytes: provider hash") }
            else if let remote = st.hash { #expect(remote == hash) }
            if let root = h.root { #expect(FileManager.default.contentsEqual(atPath: local, andPath: root + "/up/f\(size).bin")) }
            let back = h.dir.path + "/back-\(size)"
            try await p.download("up/f\(size).bin", to: back)
            #expect(try hex(back, .sha256) == (try hex(local, .sha256)), "\(size) bytes read back")
        }
        if h.sandbox != nil {
            let counts = try await h.uploads()
            #expect(counts.values.allSatisfy { $0 == 1 }, "one upload per path: \(counts)")
        }
    }

    @Test("uploading onto an existing file is a conflict and leaves it untouched", arguments: ProviderUnderTest.allCases)
    func conflict(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let a = h.dir.file("a", bytes: 100), b = h.dir.file("b", bytes: 200)
            _ = try await p.upload(local: a, size: 100, hash: try hex(a, p.hashKind), to: "x.bin", progress: nil)
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await p.upload(local: b, size: 200, hash: try hex(b, p.hashKind), to: "x.bin", progress: nil)
            }
            #expect(error?.kind == .conflict, "\(error?.message ?? "")")
            #expect(try await p.stat("x.bin")?.size == 100)
            if let root = h.root { #expect(FileManager.default.contentsEqual(atPath: a, andPath: root + "/x.bin")) }
        }
    }

    @Test("stat of nothing is nil; delete removes; deleting nothing is fine", arguments: ProviderUnderTest.allCases)
    func statDelete(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            #expect(try await p.stat("nothing/here.bin") == nil)
            let a = h.dir.file("a", bytes: 10)
            _ = try await p.upload(local: a, size: 10, hash: try hex(a, p.hashKind), to: "gone.bin", progress: nil)
            try await p.delete("gone.bin")
            #expect(try await p.stat("gone.bin") == nil)
            try await p.delete("gone.bin")
        }
    }

    @Test("unicode and awkward names arrive; traversal in a name or template cannot leave the root",
          arguments: ProviderUnderTest.allCases)
    func names(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let a = h.dir.file("a", bytes: 5)
            for raw in ["Ünïcødé résumé 日本 🎥.mp4", "with space and 'quote' & amp #1 %20.txt", "a:b?c*d<e>f|g\"h.txt",
                        "../../escape.txt", "trailing dot.", " leading space.txt", String(repeating: "é", count: 200) + ".mov"] {
                let path = RemotePath.sanitized("case/" + raw, for: p)
                let components = path.split(separator: "/").map(String.init)
                #expect(!components.contains("..") && !components.contains("."))
                try await p.makeFolders(RemotePath.parent(path))
                _ = try await p.upload(local: a, size: 5, hash: try hex(a, p.hashKind), to: path, progress: nil)
                #expect(try await p.stat(path)?.size == 5, "\(path)")
                #expect(path.utf8.count < 300 && (raw.hasSuffix(".mov") ? path.hasSuffix(".mov") : true), "\(path)")
                if let root = h.root {
                    let real = (root + "/" + path as NSString).standardizingPath
                    #expect(real.hasPrefix(root), "\(real) is inside \(root)")
                    #expect(FileManager.default.fileExists(atPath: real))
                }
            }
            if let root = h.root { #expect(!FileManager.default.fileExists(atPath: (root as NSString).deletingLastPathComponent + "/escape.txt")) }
        }
    }

    @Test("a share link is made once and reused", arguments: ProviderUnderTest.allCases.filter { $0 != .webdav })
    func shareReuse(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let a = h.dir.file("a", bytes: 10)
            try await p.makeFolders("s")
            _ = try await p.upload(local: a, size: 10, hash: try hex(a, p.hashKind), to: "s/clip.mp4", progress: nil)
            let first = try await p.share("s/clip.mp4", ShareRequest(access: .open))
            let second = try await p.share("s/clip.mp4", ShareRequest(access: .open))
            #expect(!first.url.isEmpty)
            #expect(first.url == second.url)
        }
    }

    /// Not ownCloud: its public links open for anyone holding them, so a rule asking
    /// collaborators gets no link there rather than a more open one (`shareNeverWidened`).
    @Test("a share setting the plan refuses falls back to a plain link and says why",
          arguments: [ProviderUnderTest.dropbox, .box, .sharefile])
    func shareFallback(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let a = h.dir.file("a", bytes: 10)
            _ = try await p.upload(local: a, size: 10, hash: try hex(a, p.hashKind), to: "clip.mp4", progress: nil)
            let link = try await p.share("clip.mp4", ShareRequest(access: .collaborators, expires: Date().addingTimeInterval(86400 * 30),
                                                                 password: "s3cret-pass"))
            #expect(!link.url.isEmpty)
            if let why = link.fallback { #expect(!why.contains("s3cret-pass")) }
            if which == .dropbox { #expect(link.fallback != nil, "the sandbox Dropbox account is on the free plan") }
        }
    }

    @Test("an upload killed mid-way resumes from the provider's acknowledged offset, with one remote copy",
          arguments: [ProviderUnderTest.dropbox, .box, .sharefile, .owncloud])
    func resume(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let size = which.boundarySizes.last!
            let chunk = Int64(which == .box ? 8 << 20 : which == .dropbox ? 4 << 20 : 1 << 20)
            let local = h.dir.file("big.bin", bytes: size)
            let hash = try hex(local, p.hashKind)
            let holder = TaskHolder()
            let first = Task {
                try await p.upload(local: local, size: Int64(size), hash: hash, to: "big.bin", progress: { sent in
                    if sent > chunk + 4096 { holder.cancel() }
                })
            }
            holder.set(first)
            let interrupted = await first.result
            #expect(throws: (any Error).self) { try interrupted.get() }
            #expect(try await p.stat("big.bin") == nil)
            let resumedAt = MinBox()
            _ = try await p.upload(local: local, size: Int64(size), hash: hash, to: "big.bin", progress: { resumedAt.note($0) })
            #expect(resumedAt.value >= chunk, "resumed at \(resumedAt.value), not from 0")
            #expect(try await p.stat("big.bin")?.hash == hash)
            #expect(try await h.uploads().filter { $0.key.hasSuffix("/big.bin") }.values.reduce(0, +) == 1)
            let left = (try? FileManager.default.contentsOfDirectory(atPath: h.resumeDirectory ?? "")) ?? []
            #expect(left.isEmpty, "resume state is removed once the file is there: \(left)")
        }
    }

    @Test("bytes corrupted on the way are caught by the provider's hash", arguments: ProviderUnderTest.emulations)
    func corruption(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            let a = h.dir.file("a", bytes: 5000)
            let hash = try hex(a, p.hashKind)
            try await h.control("corrupt-next-upload?provider=\(which.rawValue)")
            do {
                _ = try await p.upload(local: a, size: 5000, hash: hash, to: "c.bin", progress: nil)
                // Stored despite the damage: the provider's hash must show it.
                let st = try #require(try await p.stat("c.bin"))
                #expect(st.hash != hash, "a corrupted copy must not verify")
            } catch let e as ArchiveError {
                #expect(e.retryable, "\(e.message)")
            }
        }
    }
}

/// Cancels a task from a progress callback (a transfer thread), even one that fires before
/// the task is known.
final class TaskHolder: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<RemoteFile, any Error>?
    private var wanted = false

    func set(_ t: Task<RemoteFile, any Error>) {
        lock.lock(); task = t; let cancelNow = wanted; lock.unlock()
        if cancelNow { t.cancel() }
    }

    func cancel() {
        lock.lock(); wanted = true; let t = task; lock.unlock()
        t?.cancel()
    }
}

final class MinBox: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var value = Int64.max
    func note(_ v: Int64) { lock.lock(); value = min(value, v); lock.unlock() }
}
