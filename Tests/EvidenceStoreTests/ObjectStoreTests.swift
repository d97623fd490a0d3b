import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import Testing
import EvidenceTesting

@Suite("Content-addressed store")
struct ObjectStoreTests {
    @Test("ingest stores the bytes under their SHA-256, read-only, at the fan-out path")
    func ingestStores() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let data = randomData(3 << 20)
        let src = dir.file("clip.mp4", data)
        let r = try store.ingest(path: src)
        #expect(r.newObject)
        #expect(r.size == Int64(data.count))
        #expect(r.digest.hex == sha256sum(src))
        let obj = store.objectPath(r.digest)
        #expect(obj.hasSuffix("/objects/sha256/\(r.digest.hex.prefix(2))/\(r.digest.hex)"))
        #expect(FileManager.default.contents(atPath: obj) == data)
        var st = stat()
        #expect(stat(obj, &st) == 0)
        #expect(st.st_mode & 0o222 == 0, "objects must be read-only")
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDir).isEmpty)
    }

    @Test("the same content twice is one object and no second write")
    func dedupe() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let data = randomData(100_000)
        let a = try store.ingest(path: dir.file("a", data))
        let b = try store.ingest(path: dir.file("b", data))
        #expect(a.newObject && !b.newObject)
        #expect(a.digest == b.digest)
        #expect(store.check().objects == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDir).isEmpty)
    }

    @Test("a file that grows while read is refused, and nothing is stored")
    func changedDuringRead() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let src = dir.file("growing", randomData(3 << 20))
        var appended = false
        #expect {
            try store.ingest(path: src) { _ in
                guard !appended else { return }
                appended = true
                let h = FileHandle(forWritingAtPath: src)!
                h.seekToEndOfFile(); h.write(Data("more".utf8)); h.closeFile()
            }
        } throws: { e in
            guard case StoreError.changedDuringRead(let p, _) = e else { return false }
            return p == src && (e as! StoreError).isTransient
        }
        #expect(store.check().objects == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDir).isEmpty)
    }

    @Test("a file deleted while read is reported as vanished, and nothing is stored")
    func vanished() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let src = dir.file("going", randomData(3 << 20))
        #expect(throws: StoreError.vanished(path: src)) {
            try store.ingest(path: src) { _ in unlink(src) }
        }
        #expect(store.check().objects == 0)
    }

    @Test("symlinks are refused unless followed; FIFOs and directories are refused")
    func notRegular() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let target = dir.file("target", Data("x".utf8))
        let link = dir.path + "/link"
        #expect(symlink(target, link) == 0)
        #expect(throws: StoreError.symlink(path: link)) { try store.ingest(path: link) }
        #expect(try store.ingest(path: link, followSymlinks: true).digest.hex == sha256sum(target))
        let fifo = dir.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: StoreError.notRegularFile(path: fifo, kind: "FIFO")) { try store.ingest(path: fifo) }
        #expect(throws: StoreError.isDirectory(path: dir.path)) { try store.ingest(path: dir.path) }
    }

    @Test("temp files of dead writers are cleaned at start; a live writer's are kept")
    func staleTemps() throws {
        let dir = TempDir()
        let home = dir.path + "/home"
        _ = try ObjectStore(home: home)
        // pid 2^22+1 is above Linux's pid_max default range of live processes here.
        let dead = home + "/tmp/4194305.123.tmp"
        let live = home + "/tmp/\(getpid()).456.tmp"
        _ = FileManager.default.createFile(atPath: dead, contents: Data("partial".utf8))
        _ = FileManager.default.createFile(atPath: live, contents: Data("in flight".utf8))
        _ = try ObjectStore(home: home)
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live))
    }

    @Test("zero-byte files are valid evidence")
    func zeroBytes() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let r = try store.ingest(path: dir.file("empty", Data()))
        #expect(r.size == 0)
        #expect(r.digest.hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("check finds a modified object, a writable object and a stray file")
    func checkFindsDamage() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let r = try store.ingest(path: dir.file("a", randomData(5000)))
        #expect(store.check().problems.isEmpty)
        let obj = store.objectPath(r.digest)
        chmod(obj, 0o644)
        let h = FileHandle(forWritingAtPath: obj)!
        h.write(Data("X".utf8)); h.closeFile()
        _ = FileManager.default.createFile(atPath: store.objectsDir + "/junk", contents: Data())
        let kinds = Set(store.check().problems.map(\.kind))
        #expect(kinds == [.hashMismatch, .writable, .strayFile])
    }

    @Test("put stores in-memory bytes once")
    func put() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let a = try store.put(Data("receipt".utf8))
        let b = try store.put(Data("receipt".utf8))
        #expect(a.newObject && !b.newObject)
        #expect(try store.read(a.digest) == Data("receipt".utf8))
    }

    @Test("a file bigger than the store's free space is refused before copying: clear error, temp removed, nothing stored",
          .enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
    func diskFull() throws {
        let dir = TempDir()
        let mnt = dir.path + "/small"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        guard run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt]).status == 0 else {
            Issue.record("could not mount tmpfs at \(mnt)")
            return
        }
        defer { _ = run(["umount", mnt]) }
        let store = try ObjectStore(home: mnt + "/home")
        let src = dir.file("big", randomData(3 << 20))
        #expect {
            try store.ingest(path: src)
        } throws: { e in
            guard case StoreError.insufficientSpace(let p, _, let needed, _, _) = e else { return false }
            return p == src && needed == 3 << 20 && (e as! StoreError).description.contains("no space left")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDir).isEmpty)
        #expect(store.check().objects == 0)
    }

    @Test("a sparse file twice the size of the free space is refused at once, naming needed and free bytes; nothing is read")
    func sparseBeyondFreeSpace() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        var fs = statvfs()
        #expect(statvfs(store.tmpDir, &fs) == 0)
        let free = Int64(fs.f_bavail) * Int64(fs.f_frsize)
        let src = dir.path + "/sparse.bin"
        #expect(run(["truncate", "-s", String(2 * free), src]).status == 0)
        let start = Date()
        #expect {
            try store.ingest(path: src)
        } throws: { e in
            guard case StoreError.insufficientSpace(let p, _, let needed, let reported, _) = e else { return false }
            let text = (e as! StoreError).description
            return p == src && needed == 2 * free && reported > 0 && text.contains("needs \(2 * free) bytes")
                && text.contains("\(reported) free")
        }
        #expect(Date().timeIntervalSince(start) < 10, "refused before reading")
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDir).isEmpty)
        #expect(store.check().objects == 0)
    }
}
