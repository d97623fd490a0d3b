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

    @Test("an object made durable in tmp/ by a writer that died before moving it is put in place when the store opens")
    func recoversDurableObjectOfDeadWriter() throws {
        let dir = TempDir()
        let home = dir.path + "/home"
        _ = try ObjectStore(home: home)
        let data = randomData(4000)
        let hex = sha256sum(dir.file("src", data))
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
