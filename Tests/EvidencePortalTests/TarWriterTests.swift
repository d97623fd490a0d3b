@testable import EvidencePortal
import Foundation
import Testing

@Suite("tar writer")
struct TarWriterTests {
    @Test("GNU tar lists and extracts long and non-ASCII names and contents exactly")
    func roundTrip() throws {
        let dir = NSTemporaryDirectory() + "/tar-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/x", withIntermediateDirectories: true)
        let long = String(repeating: "very-long-name-", count: 12) + "日本語 📷.mp4"
        let big = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        _ = FileManager.default.createFile(atPath: dir + "/a", contents: big)
        _ = FileManager.default.createFile(atPath: dir + "/b", contents: Data("hello\n".utf8))
        _ = FileManager.default.createFile(atPath: dir + "/t.tar", contents: nil)
        let out = try #require(FileHandle(forWritingAtPath: dir + "/t.tar"))
        let tar = TarWriter(writingTo: out)
        try tar.addDirectory("top")
        try tar.addFile("top/" + long, from: dir + "/a")
        try tar.addFile("top/short.txt", from: dir + "/b")
        try tar.finish()
        try out.close()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dir + "/t.tar")[.size] as? Int)
        #expect(size % 512 == 0)
        let list = try run(["tar", "-tf", dir + "/t.tar"])
        #expect(list.status == 0)
        #expect(list.out.split(separator: "\n") == ["top/", "top/" + long, "top/short.txt"].map { Substring($0) })
        #expect(try run(["tar", "-xf", dir + "/t.tar", "-C", dir + "/x"]).status == 0)
        #expect(FileManager.default.contents(atPath: dir + "/x/top/" + long) == big)
        #expect(FileManager.default.contents(atPath: dir + "/x/top/short.txt") == Data("hello\n".utf8))
    }

    @Test("pax records count their own length")
    func paxLength() {
        let r = TarWriter.paxRecord("path", "abc")
        #expect(r == "12 path=abc\n")
        #expect(r.utf8.count == 12)
        let long = TarWriter.paxRecord("path", String(repeating: "x", count: 92))
        #expect(long.utf8.count == Int(long.prefix(while: { $0 != " " }))!)
    }
}
