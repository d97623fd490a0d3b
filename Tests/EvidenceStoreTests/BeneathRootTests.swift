import EvidenceStore
import EvidenceTesting
import Foundation
import Glibc
import Testing

@Suite("BeneathRoot: a file's folder opened below the root, no link followed")
struct BeneathRootTests {
    @Test func aLinkOnTheWayIsRefusedAndNothingOutsideIsReached() throws {
        let dir = TempDirectory("beneath")
        dir.write("root/real/clip.bin", "inside")
        dir.write("outside/clip.bin", "outside")
        #expect(symlink(dir.file("outside"), dir.file("root/linked")) == 0)
        #expect(throws: BeneathRoot.Failure.symlink(path: dir.file("root/linked/clip.bin"))) {
            _ = try BeneathRoot(path: dir.file("root/linked/clip.bin"), root: dir.file("root"))
        }
        let inside = try BeneathRoot(path: dir.file("root/real/clip.bin"), root: dir.file("root"))
        #expect(try inside.stat().get().size == 6)
    }

    @Test func pathsNotBelowTheRootAreRefused() {
        let dir = TempDirectory("beneath")
        #expect(throws: BeneathRoot.Failure.self) { _ = try BeneathRoot(path: "/etc/passwd", root: dir.path) }
        #expect(throws: BeneathRoot.Failure.self) { _ = try BeneathRoot(path: dir.path + "/a/../../x", root: dir.path) }
    }

    @Test func theFolderStaysTheOneOpenedWhenItsPathIsSwappedForALink() throws {
        let dir = TempDirectory("beneath")
        dir.write("root/sub/clip.bin", "mine")
        dir.write("outside/clip.bin", "not mine")
        let folder = try BeneathRoot(path: dir.file("root/sub/clip.bin"), root: dir.file("root"))
        #expect(rename(dir.file("root/sub"), dir.file("root/sub.real")) == 0)
        #expect(symlink(dir.file("outside"), dir.file("root/sub")) == 0)
        #expect(folder.unlink() == nil)
        #expect(FileManager.default.fileExists(atPath: dir.file("outside/clip.bin")))
        #expect(!FileManager.default.fileExists(atPath: dir.file("root/sub.real/clip.bin")))
    }
}
