import EvidenceCore
import EvidenceStore
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Runs a swap once, at the first call of a hook (the hooks fire on every object).
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

/// Whoever can write in the store's folders swaps a fan-out folder (`objects/sha256/ab`) for a
/// symbolic link to a folder of their own at the exact moment between the store's checks and its
/// action (a hook, not a sleep): nothing outside the store is read, written, moved or deleted.
@Suite("Object store: a fan-out folder swapped for a link between check and use")
struct StoreSwapTests {
    /// `objects/sha256/<ab>` moved aside to `<ab>.real` and replaced by a link to `outside`.
    static func swap(_ home: String, _ digest: SHA256Digest, to outside: String) {
        let fanOut = home + "/objects/sha256/" + digest.hex.prefix(2)
        _ = rename(fanOut, fanOut + ".real")
        _ = symlink(outside, fanOut)
    }

    /// Every regular file below `dir`.
    static func files(_ dir: String) -> [String] {
        (FileManager.default.enumerator(atPath: dir)?.allObjects as? [String] ?? [])
            .filter { var st = stat(); return lstat(dir + "/" + $0, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG }
    }

    @Test("an object published while its fan-out folder is swapped for a link is not written outside the store")
    func publishDoesNotFollowASwappedFolder() throws {
        let dir = TempDirectory("swap")
        let home = dir.file("home"), outside = dir.file("outside")
        let data = randomData(10_000)
        let digest = SHA256Hasher.hash(data)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let swap = Once { Self.swap(home, digest, to: outside) }
        let store = try ObjectStore(home: home, hooks: .init(beforeUse: { step, _ in if step == .publish { swap.fire() } }))
        _ = try? store.put(data)
        #expect(swap.fired)
        #expect(Self.files(outside).isEmpty, "written outside the store: \(Self.files(outside))")
    }

    @Test("an ingested file published while its fan-out folder is swapped for a link is not written outside the store")
    func ingestDoesNotFollowASwappedFolder() throws {
        let dir = TempDirectory("swap")
        let home = dir.file("home"), outside = dir.file("outside")
        let data = randomData(50_000)
        let source = dir.write("drop/clip.bin", data)
        let digest = SHA256Hasher.hash(data)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let swap = Once { Self.swap(home, digest, to: outside) }
        let store = try ObjectStore(home: home, hooks: .init(beforeUse: { step, _ in if step == .publish { swap.fire() } }))
        _ = try? store.ingest(path: source)
        #expect(swap.fired)
        #expect(Self.files(outside).isEmpty, "written outside the store: \(Self.files(outside))")
    }

    @Test("a staged file whose fan-out folder is swapped for a link before its group commit is not written outside the store")
    func batchCommitDoesNotFollowAFolderSwappedAfterStaging() throws {
        let dir = TempDirectory("swap")
        let home = dir.file("home"), outside = dir.file("outside")
        let data = randomData(30_000)
        let source = dir.write("drop/clip.bin", data)
        let others = (0..<5).map { dir.write("drop/other\($0).bin", randomData(2_000 + $0)) }
        let digest = SHA256Hasher.hash(data)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let store = try ObjectStore(home: home)
        let staged = try ([source] + others).map { try store.stage(path: $0) }
        Self.swap(home, digest, to: outside)
        let results = store.commit(staged)
        #expect(Self.files(outside).isEmpty, "written outside the store: \(Self.files(outside))")
        #expect(throws: StoreError.self) { try results[0].get() }
        for (r, s) in zip(results.dropFirst(), staged.dropFirst()) where s.digest.hex.prefix(2) != digest.hex.prefix(2) {
            #expect((try? r.get())?.newObject == true, "the rest of the batch is stored")
        }
    }

    @Test("objects of a group commit published while a fan-out folder is swapped for a link are not written outside the store")
    func batchPublishDoesNotFollowASwappedFolder() throws {
        let dir = TempDirectory("swap")
        let home = dir.file("home"), outside = dir.file("outside")
        let sources = (0..<8).map { dir.write("drop/f\($0).bin", randomData(10_000 + $0)) }
        let first = SHA256Hasher.hash(FileManager.default.contents(atPath: sources[0])!)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let swap = Once { Self.swap(home, first, to: outside) }
        let store = try ObjectStore(home: home, hooks: .init(beforeUse: { step, _ in if step == .publish { swap.fire() } }))
        let staged = try sources.map { try store.stage(path: $0) }
        _ = store.commit(staged)
        #expect(swap.fired)
        #expect(Self.files(outside).isEmpty, "written outside the store: \(Self.files(outside))")
    }

    @Test("a group commit whose tmp/ is swapped for a link after staging moves and syncs nothing outside the store")
    func batchCommitDoesNotFollowASwappedTmp() throws {
        let dir = TempDirectory("swap")
        let home = dir.file("home"), outside = dir.file("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let sources = (0..<4).map { dir.write("drop/f\($0).bin", randomData(4_000 + $0)) }
        let store = try ObjectStore(home: home)
        let staged = try sources.map { try store.stage(path: $0) }
        _ = rename(home + "/tmp", home + "/tmp.real")
        _ = symlink(outside, home + "/tmp")
        let results = store.commit(staged)
        #expect(Self.files(outside).isEmpty, "written outside the store: \(Self.files(outside))")
        for (r, s) in zip(results, staged) {
            #expect((try? r.get())?.digest == s.digest)
            #expect(store.contains(s.digest))
        }
    }

    @Test("reading an object whose fan-out folder was swapped for a link returns nothing from outside the store")
    func readDoesNotFollowASwappedFolder() throws {
        let dir = TempDirectory("swap")
        let home = dir.file("home"), outside = dir.file("outside")
        let data = Data("the receipt".utf8)
        let digest = SHA256Hasher.hash(data)
        let planted = Data("a receipt of the attacker's".utf8)
        dir.write("outside/" + digest.hex, planted)
        let swap = Once { Self.swap(home, digest, to: outside) }
        let store = try ObjectStore(home: home, hooks: .init(beforeUse: { step, _ in if step == .read { swap.fire() } }))
        try store.put(data)
        let read = Result(catching: { () throws(StoreError) in try store.read(digest) })
        #expect(swap.fired)
        #expect((try? read.get()) != planted, "read the planted file outside the store")
        #expect(throws: StoreError.self) { try read.get() }
    }

    @Test("exporting an object (bundles) whose fan-out folder was swapped for a link reads nothing outside the store")
    func exportDoesNotFollowASwappedFolder() throws {
        let dir = TempDirectory("swap")
        let home = dir.file("home"), outside = dir.file("outside")
        let data = randomData(20_000)
        let digest = SHA256Hasher.hash(data)
        dir.write("outside/" + digest.hex, "not the evidence")
        let swap = Once { Self.swap(home, digest, to: outside) }
        let store = try ObjectStore(home: home, hooks: .init(beforeUse: { step, _ in if step == .export { swap.fire() } }))
        try store.put(data)
        try FileManager.default.createDirectory(atPath: dir.file("bundle"), withIntermediateDirectories: true)
        let target = dir.file("bundle/clip.bin")
        #expect(throws: StoreError.self) { _ = try store.copyObject(digest, to: target) }
        #expect(swap.fired)
        #expect(FileManager.default.contents(atPath: target) != Data("not the evidence".utf8))
    }

    @Test("fsck's check does not follow a fan-out folder that is a link, and names it")
    func checkNamesALinkedFolder() throws {
        let dir = TempDirectory("swap")
        let home = dir.file("home"), outside = dir.file("outside")
        let data = randomData(5_000)
        let digest = SHA256Hasher.hash(data)
        let store = try ObjectStore(home: home)
        try store.put(data)
        // A file outside with a store object's name and matching content: read, it would count as an object.
        let other = randomData(3_000)
        let otherDigest = SHA256Hasher.hash(other)
        dir.write("outside/" + otherDigest.hex, other)
        Self.swap(home, otherDigest, to: outside)
        let report = store.check()
        #expect(!report.digests.contains(otherDigest), "counted a file outside the store as an object")
        #expect(report.digests.contains(digest) || digest.hex.prefix(2) == otherDigest.hex.prefix(2))
        #expect(report.problems.contains { $0.detail.contains("symbolic link") }, "\(report.problems)")
    }
}
