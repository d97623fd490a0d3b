import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import Testing
import EvidenceTesting

@Suite("Content-addressed store: staging and group commit")
struct GroupCommitStoreTests {
    @Test("a committed batch puts every object in place, read-only, and leaves tmp/ empty; duplicates are not new objects")
    func batchCommit() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let shared = randomData(5000)
        let sources = (0..<20).map { dir.file("f\($0)", $0 < 18 ? randomData(1000 + $0) : shared) }
        let staged = try sources.map { try store.stage(path: $0) }
        #expect(staged.allSatisfy { !store.contains($0.digest) }, "nothing is in the store before the commit")
        let results = store.commit(staged).map { try? $0.get() }
        #expect(results.allSatisfy { $0 != nil })
        for (src, r) in zip(sources, results) {
            guard let r else { continue }
            #expect(r.digest.hex == sha256sum(src))
            #expect(FileManager.default.contents(atPath: store.objectPath(r.digest)) == FileManager.default.contents(atPath: src))
            var st = stat()
            #expect(stat(store.objectPath(r.digest), &st) == 0 && st.st_mode & 0o222 == 0, "objects must be read-only")
        }
        #expect(results.filter { $0?.newObject == true }.count == 19, "the two copies of one content are one new object")
        #expect(store.check().objects == 19)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDir).isEmpty)
    }

    @Test("a staged file dropped without a commit leaves nothing behind")
    func dropUncommitted() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let src = dir.file("clip.bin", randomData(3000))
        var staged: StagedObject? = try store.stage(path: src)
        #expect(FileManager.default.fileExists(atPath: staged!.stagedPath))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDir).count == 1)
        let digest = staged!.digest
        staged = nil
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDir).isEmpty)
        #expect(!store.contains(digest))
    }

    /// A home in `dir` whose store was opened once (its `tmp/` made), and 4,000 random bytes
    /// with their SHA-256 in hex.
    static func homeAndContent(in dir: TempDir) throws -> (home: String, data: Data, hex: String) {
        let home = dir.path + "/home"
        _ = try ObjectStore(home: home)
        let data = randomData(4000)
        return (home, data, sha256sum(dir.file("src", data)))
    }

    @Test("an object made durable in tmp/ by a writer that died before moving it is put in place when the store opens")
    func recoversDurableObjectOfDeadWriter() throws {
        let dir = TempDir()
        let (home, data, hex) = try Self.homeAndContent(in: dir)
        // pid 2^22+1 is above Linux's pid_max default range of live processes here.
        let left = home + "/tmp/\(hex).4194305.77.obj"
        #expect(FileManager.default.createFile(atPath: left, contents: data, attributes: [.posixPermissions: 0o440]))
        let live = home + "/tmp/\(String(repeating: "a", count: 64)).\(getpid()).78.obj"
        #expect(FileManager.default.createFile(atPath: live, contents: Data("in flight".utf8)))
        let store = try ObjectStore(home: home)
        let digest = SHA256Digest(hex: hex)!
        #expect(FileManager.default.contents(atPath: store.objectPath(digest)) == data)
        #expect(!FileManager.default.fileExists(atPath: left))
        #expect(FileManager.default.fileExists(atPath: live), "a live writer's commit is its own")
        #expect(store.check().problems.isEmpty)
    }

    @Test("a store folder shared by several hosts: another host's temp files and durable objects are left to it (a pid means nothing across hosts) until a day old; this host's dead writers' are cleaned")
    func anotherHostsTempFilesAreItsOwn() throws {
        let dir = TempDir()
        let (home, data, hex) = try Self.homeAndContent(in: dir)
        // pid 2^22+1 is no live process here, but may well be one on host-b.
        let otherTemp = home + "/tmp/4194305@host-b.11.tmp"
        let otherObject = home + "/tmp/\(hex).4194305@host-b.12.obj"
        let oldTemp = home + "/tmp/4194305@host-c.13.tmp"
        let mineDead = home + "/tmp/4194305@\(TempWriter.host).14.tmp"
        let mineLive = home + "/tmp/\(TempWriter.tag).15.tmp"
        for p in [otherTemp, oldTemp, mineDead, mineLive] { #expect(FileManager.default.createFile(atPath: p, contents: Data("in flight".utf8))) }
        #expect(FileManager.default.createFile(atPath: otherObject, contents: data, attributes: [.posixPermissions: 0o440]))
        var old = [timespec(tv_sec: time(nil) - 2 * 86_400, tv_nsec: 0), timespec(tv_sec: time(nil) - 2 * 86_400, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, oldTemp, &old, 0) == 0)

        var store = try ObjectStore(home: home)
        #expect(FileManager.default.fileExists(atPath: otherTemp), "host-b's temp file removed while host-b may be writing it")
        #expect(FileManager.default.fileExists(atPath: otherObject), "host-b's durable object taken from under its rename")
        #expect(!store.contains(SHA256Digest(hex: hex)!))
        #expect(!FileManager.default.fileExists(atPath: oldTemp), "a temp file two days old is a dead writer's on any host")
        #expect(!FileManager.default.fileExists(atPath: mineDead))
        #expect(FileManager.default.fileExists(atPath: mineLive))

        // A day later host-b's object is a dead writer's: it is put in place, checked by its hash.
        #expect(utimensat(AT_FDCWD, otherObject, &old, 0) == 0)
        store = try ObjectStore(home: home)
        #expect(FileManager.default.contents(atPath: store.objectPath(SHA256Digest(hex: hex)!)) == data)
        #expect(!FileManager.default.fileExists(atPath: otherObject))
        #expect(TempWriter.mayBeAlive("4194305", modified: nil) == false, "a name from before the host was in it is this host's")
        #expect(TempWriter.mayBeAlive("not-a-pid@host-b", modified: nil) == false)
    }

    @Test("a dead writer's tmp/ object whose content is not its name is removed, not put in place")
    func doesNotRecoverAMisnamedObject() throws {
        let dir = TempDir()
        let home = dir.path + "/home"
        _ = try ObjectStore(home: home)
        let hex = sha256sum(dir.file("src", randomData(4000)))
        let left = home + "/tmp/\(hex).4194305.79.obj"
        #expect(FileManager.default.createFile(atPath: left, contents: randomData(4000), attributes: [.posixPermissions: 0o440]))
        let store = try ObjectStore(home: home)
        #expect(!store.contains(SHA256Digest(hex: hex)!), "content put under a name it does not hash to")
        #expect(!FileManager.default.fileExists(atPath: left))
        #expect(store.check().problems.isEmpty)
    }
}
