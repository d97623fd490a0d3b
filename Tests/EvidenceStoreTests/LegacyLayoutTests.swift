import EvidenceCore
@testable import EvidenceStore
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Homes made before the store had one fan-out level keep objects at `objects/sha256/ab/cd/<hex>`:
/// opening the store moves them up to `objects/sha256/ab/<hex>` once, without losing one.
@Suite("Object store: homes of the two-level layout")
struct LegacyLayoutTests {
    /// A store with `count` objects, then turned into a home of the former layout: each object
    /// renamed to `ab/cd/<hex>` and `objects/layout` removed, as a home written before the change.
    static func legacyHome(_ dir: TempDir, count: Int) throws -> (home: String, objects: [SHA256Digest: Data]) {
        let home = dir.path + "/home"
        var objects: [SHA256Digest: Data] = [:]
        do {
            let store = try ObjectStore(home: home)
            for i in 0..<count {
                let data = randomData(1_000 + i)
                objects[try store.put(data).digest] = data
            }
        }
        for d in objects.keys { try moveDown(home, d) }
        #expect(unlink(home + "/objects/layout") == 0)
        return (home, objects)
    }

    static func flatPath(_ home: String, _ d: SHA256Digest) -> String { "\(home)/objects/sha256/\(d.hex.prefix(2))/\(d.hex)" }
    static func oldPath(_ home: String, _ d: SHA256Digest) -> String {
        "\(home)/objects/sha256/\(d.hex.prefix(2))/\(d.hex.dropFirst(2).prefix(2))/\(d.hex)"
    }
    static func moveDown(_ home: String, _ d: SHA256Digest) throws {
        let old = oldPath(home, d)
        try FileManager.default.createDirectory(atPath: (old as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(rename(flatPath(home, d), old) == 0)
    }
    static func exists(_ path: String) -> Bool { var st = stat(); return lstat(path, &st) == 0 }
    /// The two-level folders left in the store.
    static func leaves(_ home: String) -> [String] {
        (FileManager.default.enumerator(atPath: home + "/objects/sha256")?.allObjects as? [String] ?? [])
            .filter { var st = stat(); return $0.split(separator: "/").count == 2 && lstat(home + "/objects/sha256/" + $0, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR }
    }

    @Test("opening a home of the two-level layout moves every object up one level, once, and the store checks clean")
    func movesObjectsUp() throws {
        let dir = TempDir()
        let (home, objects) = try Self.legacyHome(dir, count: 40)
        #expect(objects.keys.allSatisfy { Self.exists(Self.oldPath(home, $0)) && !Self.exists(Self.flatPath(home, $0)) })
        let store = try ObjectStore(home: home)
        #expect(!store.legacyLayout)
        for (d, data) in objects {
            #expect(Self.exists(Self.flatPath(home, d)) && !Self.exists(Self.oldPath(home, d)), "\(d.hex) not moved up")
            #expect(try store.read(d) == data)
            var st = stat()
            #expect(stat(Self.flatPath(home, d), &st) == 0 && st.st_mode & 0o777 == 0o440 && st.st_nlink == 1)
        }
        #expect(Self.leaves(home).isEmpty, "two-level folders left: \(Self.leaves(home))")
        #expect(Self.exists(home + "/objects/layout"))
        let report = store.check()
        #expect(report.problems.isEmpty, "\(report.problems)")
        #expect(report.objects == objects.count)
        // Opened again: nothing to move, nothing changed.
        let again = try ObjectStore(home: home)
        #expect(!again.legacyLayout && again.check().objects == objects.count)
    }

    @Test("a move that died between the new name and the removal of the old one is finished by the next open")
    func finishesAnInterruptedMove() throws {
        let dir = TempDir()
        let (home, objects) = try Self.legacyHome(dir, count: 3)
        let d = objects.keys.first!
        // The state a crash after linkat and before unlinkat leaves: one inode, both names.
        #expect(link(Self.oldPath(home, d), Self.flatPath(home, d)) == 0)
        let store = try ObjectStore(home: home)
        #expect(!store.legacyLayout)
        #expect(!Self.exists(Self.oldPath(home, d)) && Self.exists(Self.flatPath(home, d)))
        #expect(try store.read(d) == objects[d])
        let report = store.check()
        #expect(report.problems.isEmpty && report.objects == 3, "\(report.problems)")
    }

    @Test("an old-place file whose new name another file holds stays where it is, and fsck names it misplaced and corrupt")
    func keepsAConflictForFsck() throws {
        let dir = TempDir()
        let (home, objects) = try Self.legacyHome(dir, count: 2)
        let d = objects.keys.first!
        // A good copy at the new place, and a different (damaged) file at the old one.
        #expect(rename(Self.oldPath(home, d), Self.flatPath(home, d)) == 0)
        dir.write("damaged", "not the object's bytes")
        #expect(rename(dir.path + "/damaged", Self.oldPath(home, d)) == 0)
        let store = try ObjectStore(home: home)
        #expect(try store.read(d) == objects[d], "the good copy was replaced")
        #expect(Self.exists(Self.oldPath(home, d)), "the conflicting file was removed, not left for fsck")
        let problems = store.check().problems
        #expect(problems.contains { $0.kind == .misplaced && $0.path == Self.oldPath(home, d) }, "\(problems)")
        #expect(problems.contains { $0.kind == .hashMismatch && $0.path == Self.oldPath(home, d) }, "\(problems)")
    }

    @Test("a home whose objects cannot be moved up is read at both places; new objects go to the new one, without copies of old ones")
    func readsBothPlacesWhenNotMoved() throws {
        let dir = TempDir()
        let (home, objects) = try Self.legacyHome(dir, count: 5)
        let store = try ObjectStore(home: home, hooks: .init(), moveLegacyObjects: false)
        #expect(store.legacyLayout)
        for (d, data) in objects {
            #expect(store.contains(d))
            #expect(try store.read(d) == data)
            #expect(store.location(of: d) == Self.oldPath(home, d))
            #expect(try store.hashObject(d).digest == d)
        }
        // The same content again is no new object (deduplicated against the old place).
        let (d0, data0) = objects.first!
        #expect(try store.put(data0).newObject == false)
        let staged = try store.stage(path: dir.file("again.bin", data0))
        #expect(try store.commit([staged])[0].get().newObject == false)
        #expect(!Self.exists(Self.flatPath(home, d0)))
        let fresh = randomData(2_345)
        let d = try store.put(fresh).digest
        #expect(Self.exists(Self.flatPath(home, d)))
        let report = store.check()
        #expect(report.problems.isEmpty, "\(report.problems)")
        #expect(report.objects == objects.count + 1)
    }

    @Test("a new store is of the one-level layout from the start and records it")
    func newStoreIsFlat() throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        #expect(!store.legacyLayout)
        #expect(Self.exists(dir.path + "/home/objects/layout"))
        let d = try store.put(Data("one".utf8)).digest
        #expect(store.objectPath(d) == Self.flatPath(dir.path + "/home", d))
        #expect(Self.leaves(dir.path + "/home").isEmpty)
    }
}
