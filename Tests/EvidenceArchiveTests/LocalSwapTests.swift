import EvidenceArchive
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// A local archive (a NAS mount, another officer's share) whose sub-folder is swapped for a
/// symbolic link at the exact moment between the provider's checks and its action (a hook, not a
/// sleep): nothing outside the archive's root is written, read or deleted.
@Suite("Local archive: a sub-folder swapped for a link between check and use")
struct LocalSwapTests {
    final class Once: @unchecked Sendable {
        private let lock = NSLock()
        private var done = false
        private let action: @Sendable () -> Void
        init(_ action: @escaping @Sendable () -> Void) { self.action = action }
        func fire() {
            lock.lock()
            let first = !done
            done = true
            lock.unlock()
            if first { action() }
        }
        var fired: Bool { lock.lock(); defer { lock.unlock() }; return done }
    }

    /// `<root>/cases` moved aside to `cases.real` and replaced by a link to `outside`.
    static func swap(_ dir: TempDirectory) {
        _ = rename(dir.file("root/cases"), dir.file("root/cases.real"))
        _ = symlink(dir.file("outside"), dir.file("root/cases"))
    }

    static func files(_ dir: String) -> [String] {
        (FileManager.default.enumerator(atPath: dir)?.allObjects as? [String] ?? [])
            .filter { var st = stat(); return lstat(dir + "/" + $0, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG }.sorted()
    }

    @Test("an upload while a sub-folder is swapped for a link writes nothing outside the archive")
    func uploadDoesNotFollowASwappedFolder() async throws {
        let dir = TempDirectory("local-swap")
        try FileManager.default.createDirectory(atPath: dir.file("root"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.file("outside/2026"), withIntermediateDirectories: true)
        let local = dir.write("clip.bin", "the evidence")
        let swap = Once { Self.swap(dir) }
        let provider = LocalProvider(account: "vault", root: dir.file("root"), beforeAct: { _ in swap.fire() })
        try await provider.makeFolders("cases/2026")
        _ = try? await provider.upload(local: local, size: 12, hash: "", to: "cases/2026/clip.bin", progress: nil)
        #expect(swap.fired)
        #expect(Self.files(dir.file("outside")).isEmpty, "written outside the archive: \(Self.files(dir.file("outside")))")
    }

    @Test("a delete while a sub-folder is swapped for a link deletes nothing outside the archive")
    func deleteDoesNotFollowASwappedFolder() async throws {
        let dir = TempDirectory("local-swap")
        dir.write("root/cases/2026/clip.bin", "ours")
        dir.write("outside/2026/clip.bin", "another officer's file")
        let swap = Once { Self.swap(dir) }
        let provider = LocalProvider(account: "vault", root: dir.file("root"), beforeAct: { _ in swap.fire() })
        try? await provider.delete("cases/2026/clip.bin")
        #expect(swap.fired)
        #expect(FileManager.default.contents(atPath: dir.file("outside/2026/clip.bin")) == Data("another officer's file".utf8))
    }

    @Test("a read-back while a sub-folder is swapped for a link reads nothing outside the archive")
    func downloadDoesNotFollowASwappedFolder() async throws {
        let dir = TempDirectory("local-swap")
        dir.write("root/cases/2026/clip.bin", "ours")
        dir.write("outside/2026/clip.bin", "someone else's secret")
        let swap = Once { Self.swap(dir) }
        let provider = LocalProvider(account: "vault", root: dir.file("root"), beforeAct: { _ in swap.fire() })
        let local = dir.file("readback.bin")
        try? await provider.download("cases/2026/clip.bin", to: local)
        #expect(swap.fired)
        #expect(FileManager.default.contents(atPath: local) != Data("someone else's secret".utf8))
    }

    @Test("a link already in place of a sub-folder is refused by stat, makeFolders and upload")
    func aLinkedFolderIsRefused() async throws {
        let dir = TempDirectory("local-swap")
        try FileManager.default.createDirectory(atPath: dir.file("outside/2026"), withIntermediateDirectories: true)
        dir.write("outside/2026/clip.bin", "theirs")
        try FileManager.default.createDirectory(atPath: dir.file("root"), withIntermediateDirectories: true)
        #expect(symlink(dir.file("outside"), dir.file("root/cases")) == 0)
        let provider = LocalProvider(account: "vault", root: dir.file("root"))
        await #expect(throws: ArchiveError.self) { _ = try await provider.stat("cases/2026/clip.bin") }
        await #expect(throws: ArchiveError.self) { try await provider.makeFolders("cases/2026/more") }
        let local = dir.write("clip.bin", "the evidence")
        await #expect(throws: ArchiveError.self) {
            _ = try await provider.upload(local: local, size: 12, hash: "", to: "cases/2026/new.bin", progress: nil)
        }
        #expect(Self.files(dir.file("outside")) == ["2026/clip.bin"])
        #expect(!FileManager.default.fileExists(atPath: dir.file("outside/2026/more")))
    }
}
