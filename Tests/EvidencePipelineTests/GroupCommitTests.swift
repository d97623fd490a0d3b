@testable import EvidencePipeline
import EvidenceCatalog
import EvidenceCore
import EvidenceTesting
import Foundation
import Synchronization
import Testing

@Suite("Ingest: group commit")
struct GroupCommitTests {
    @Test("a burst of files read while others commit is made durable in far fewer batches than files, each recorded once")
    func burstIsBatched() async throws {
        let dir = TempDirectory("group-commit")
        let home = try EvidenceHome(path: dir.path + "/home")
        let ingestor = Ingestor(home: home, actor: "test")
        let paths = (0..<300).map { dir.write("drop/f\($0).bin", "file \($0)\n") }
        let outcomes = await withTaskGroup(of: Ingestor.Outcome.self) { group in
            for path in paths {
                group.addTask {
                    guard case .staged(let staged) = await onIOThread({ ingestor.stage(path: path) }) else {
                        return .failed(reason: "not staged: \(path)")
                    }
                    return await ingestor.commit(staged)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter(\.isSuccess).count == 300)
        #expect(try home.catalog.allItems().count == 300)
        #expect(try home.catalog.verifyChain().problems.isEmpty)
        #expect(ingestor.committer.batches < 150, "300 files took \(ingestor.committer.batches) commits")
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.store.tmpDir).isEmpty)
    }

    @Test("a file is acknowledged only once its object is in the store and its item and custody event are recorded")
    func acknowledgedWhenDurable() throws {
        let dir = TempDirectory("group-commit-ack")
        let home = try EvidenceHome(path: dir.path + "/home")
        let ingestor = Ingestor(home: home, actor: "test")
        let seen = Mutex<[String]>([])
        let done = DispatchGroup()
        for i in 0..<50 {
            let path = dir.write("drop/a\(i).bin", "content \(i)\n")
            guard case .staged(let staged) = ingestor.stage(path: path) else { Issue.record("not staged: \(path)"); continue }
            #expect(!home.store.contains(staged.digest), "in the store before its commit")
            done.enter()
            ingestor.commit(staged) { outcome in
                defer { done.leave() }
                guard case .ingested(let o) = outcome else { seen.withLock { $0.append("\(path): \(outcome)") }; return }
                let stored = home.store.contains(o.item.sha256)
                let events = (try? home.catalog.events(itemID: o.item.id).map(\.kind)) ?? []
                if !stored || events != ["ingested"] { seen.withLock { $0.append("\(path): stored \(stored), events \(events)") } }
            }
        }
        done.wait()
        #expect(seen.withLock { $0 } == [])
    }
}
