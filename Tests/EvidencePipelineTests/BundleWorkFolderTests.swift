import EvidenceCore
import EvidencePipeline
import EvidenceTesting
import Foundation
import Glibc
import Testing

@Suite("Bundle work folder")
struct BundleWorkFolderTests {
    @Test("a bundle is built in a fresh mkdtemp folder: a symlink planted at the old predictable name is neither followed nor touched")
    func plantedSymlinkIsIgnored() throws {
        let dir = TempDirectory("bundle-work")
        let home = try EvidenceHome(path: dir.path + "/home")
        let source = dir.write("drop/clip.txt", "bundle me\n")
        guard case .ingested(let outcome) = Ingestor(home: home, actor: "test").ingest(path: source) else {
            Issue.record("not ingested"); return
        }
        let target = dir.file("out")
        let elsewhere = dir.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let planted = target + ".partial-\(getpid())"
        #expect(symlink(elsewhere, planted) == 0)

        try BundleWriter.write(home: home, item: outcome.item, to: target, tsaCAFiles: [:])

        #expect(FileManager.default.fileExists(atPath: target + "/manifest.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty, "files went through the planted link")
        var st = stat()
        #expect(lstat(planted, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK, "the planted link was removed or replaced")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("out.partial-") && $0 != "out.partial-\(getpid())" }
        #expect(leftovers.isEmpty, "work folder left behind: \(leftovers)")
    }
}
