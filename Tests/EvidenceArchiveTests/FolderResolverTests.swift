@testable import EvidenceArchive
import EvidenceHTTP
import Foundation
import Logging
import Synchronization
import Testing

/// Box and ShareFile address folders by id; one resolver turns paths into ids for both.
@Suite("Folder ids: one resolver for the id-addressed providers")
struct FolderResolverTests {
    /// A folder tree in memory that counts what it is asked; `hidden` names are found only
    /// after a create of them has conflicted (made meanwhile by someone else).
    final class Tree: FolderTree, @unchecked Sendable {
        let account = "test"
        let state = Mutex<(folders: [String: String], files: Set<String>, hidden: Set<String>, creates: Int, lookups: Int)>(
            ([:], [], [], 0, 0))

        func rootFolderID() async throws(ArchiveError) -> String { "root" }

        func folderChild(named name: String, in parent: String) async throws(ArchiveError) -> FolderChild? {
            try? await Task.sleep(for: .milliseconds(2))   // let concurrent callers interleave
            return state.withLock { s in
                s.lookups += 1
                let key = parent + "/" + name.lowercased()
                if s.files.contains(key) { return FolderChild(id: key, isFolder: false) }
                if s.hidden.contains(key) { return nil }
                return s.folders[key].map { FolderChild(id: $0, isFolder: true) }
            }
        }

        func createFolder(named name: String, in parent: String) async throws(ArchiveError) -> FolderCreation {
            try? await Task.sleep(for: .milliseconds(2))   // the same latency: creates interleave too
            return state.withLock { s in
                s.creates += 1
                let key = parent + "/" + name.lowercased()
                if s.hidden.remove(key) != nil { s.folders[key] = key; return .exists(id: nil) }
                if s.folders[key] != nil { return .exists(id: nil) }
                s.folders[key] = key
                return .created(id: key)
            }
        }
    }

    @Test("twenty workers making one path create each missing folder once, and agree on its id")
    func createdOnce() async throws {
        let tree = Tree()
        let resolver = FolderResolver()
        let ids = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<20 { group.addTask { try await resolver.folderID("evidence/cam/2026", create: true, in: tree) } }
            var out: [String?] = []
            for try await id in group { out.append(id) }
            return out
        }
        #expect(Set(ids) == ["root/evidence/cam/2026"])
        #expect(tree.state.withLock { $0.creates } == 3)
        // Known now: no more questions, and names compare without case.
        let before = tree.state.withLock { $0.lookups }
        #expect(try await resolver.folderID("Evidence/CAM/2026", create: false, in: tree) == "root/evidence/cam/2026")
        #expect(tree.state.withLock { $0.lookups } == before)
    }

    @Test("a folder made by someone else between the lookup and the create is found by looking again")
    func conflictReresolved() async throws {
        let tree = Tree()
        tree.state.withLock { $0.hidden = ["root/shared"] }
        #expect(try await FolderResolver().folderID("shared/x", create: true, in: tree) == "root/shared/x")
    }

    @Test("a file where a folder should be is a conflict; a missing path without create is nil")
    func fileInTheWay() async throws {
        let tree = Tree()
        tree.state.withLock { $0.files = ["root/clip.mp4"] }
        let error = await #expect(throws: ArchiveError.self) { _ = try await FolderResolver().folderID("clip.mp4/sub", create: true, in: tree) }
        #expect(error?.kind == .conflict)
        #expect(try await FolderResolver().folderID("not/there", create: false, in: tree) == nil)
    }

    @Test("on Box and ShareFile, concurrent uploads into one new folder create it once", arguments: [ProviderUnderTest.box, .sharefile])
    func createdOnceOnTheWire(_ which: ProviderUnderTest) async throws {
        try await withProvider(which) { h in
            let p = h.provider
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { try await p.makeFolders("evidence/cam/2026/11") } }
                try await group.waitForAll()
            }
            let log = try String(contentsOfFile: try #require(h.sandbox).stateDirectory + "/requests.log", encoding: .utf8)
            let creates = log.split(separator: "\n").filter { line in
                line.contains("\"POST\"") && (line.contains("/box/api/2.0/folders\"") || line.contains("/Folder"))
            }
            #expect(creates.count == 4, "one create per level: \(creates.count)")
        }
    }
}
