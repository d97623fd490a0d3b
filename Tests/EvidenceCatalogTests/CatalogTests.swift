import EvidenceCatalog
import EvidenceCore
import Foundation
import GRDB
import Testing
import EvidenceTesting

func record(_ hex: Character, path: String, size: Int64 = 10, inode: UInt64 = 1, mtime: Int64 = 1_000_000_000,
            media: MediaInfo? = nil) -> IngestRecord {
    IngestRecord(sha256: SHA256Digest(hex: String(repeating: hex, count: 64))!, size: size, path: path, rule: "bodycam",
                 device: 1, inode: inode, mtimeNanos: mtime, media: media, newObject: true, actor: "test")
}

@Suite("Catalog")
struct CatalogTests {
    @Test("first sight creates an ingested item with its source and an `ingested` event", arguments: Backend.allCases)
    func create(_ backend: Backend) throws {
        let c = try backend.make()
        let media = MediaInfo(container: "mov,mp4", creationTime: Date(timeIntervalSince1970: 1_714_555_800))
        let o = try c.recordIngest(record("a", path: "/drop/clip.mp4", media: media))
        guard case .created(let item) = o else { Issue.record("expected created, got \(o)"); return }
        #expect(item.state == .ingested)
        #expect(item.media == media)
        #expect(item.dateTaken == media.creationTime)
        #expect(try c.sources(itemID: item.id).map(\.path) == ["/drop/clip.mp4"])
        #expect(try c.events(itemID: item.id).map(\.kind) == ["ingested"])
    }

    @Test("the same content under another name is a duplicate: one item, two sources", arguments: Backend.allCases)
    func duplicate(_ backend: Backend) throws {
        let c = try backend.make()
        _ = try c.recordIngest(record("a", path: "/drop/one.mp4"))
        let o = try c.recordIngest(record("a", path: "/drop/two.mp4", inode: 2))
        guard case .duplicate(let item) = o else { Issue.record("expected duplicate, got \(o)"); return }
        #expect(try c.allItems().count == 1)
        #expect(try c.sources(itemID: item.id).map(\.name) == ["one.mp4", "two.mp4"])
        #expect(try c.events(itemID: item.id).map(\.kind) == ["ingested", "seen-again"])
    }

    @Test("every source is read in id order for the custody cross-check, and a notary event records the proof's link (\"\" for none)",
          arguments: Backend.allCases)
    func sourcesAndProofLinkForTheCrossCheck(_ backend: Backend) throws {
        let c = try backend.make()
        _ = try c.recordIngest(record("a", path: "/drop/one.mp4"))
        _ = try c.recordIngest(record("b", path: "/drop/two.mp4", inode: 2))
        _ = try c.recordIngest(record("a", path: "/drop/again.mp4", inode: 3))
        #expect(try c.allSources().map { "\($0.id) \($0.itemID) \($0.name)" } == ["1 1 one.mp4", "2 2 two.mp4", "3 1 again.mp4"])
        try c.saveProof(Proof(itemID: 1, notary: "qed", kind: .qed, state: .pending, remoteID: "slug")) { _, _ in nil }
        try c.saveProof(Proof(itemID: 1, notary: "qed", kind: .qed, state: .confirmed, remoteID: "slug",
                              receipt: SHA256Digest(hex: String(repeating: "e", count: 64)), txHash: "0xabc",
                              link: "https://explorer.example/tx/0xabc")) { _, _ in nil }
        let notary = try c.events(itemID: 1).filter { $0.kind.hasPrefix("notary-") }
            .map { try JSONDecoder().decode([String: String].self, from: Data($0.details.utf8))["link"] }
        #expect(notary == ["", "https://explorer.example/tx/0xabc"])
    }

    @Test("a notary's proofs in one state are read a page at a time, by item, with nothing skipped or repeated",
          arguments: Backend.allCases)
    func proofsPaged(_ backend: Backend) throws {
        let c = try backend.make()
        let hexes = Array("0123456789abc")
        for (i, hex) in hexes.enumerated() { _ = try c.recordIngest(record(hex, path: "/drop/f\(i).bin", inode: UInt64(i + 1))) }
        // Items 1…13: tsa confirmed on the odd ones, pending on the even ones; qed confirmed on all.
        for id in Int64(1)...Int64(hexes.count) {
            try c.saveProof(Proof(itemID: id, notary: "tsa", kind: .rfc3161, state: id % 2 == 1 ? .confirmed : .pending,
                                  remoteID: "r\(id)")) { _, _ in nil }
            try c.saveProof(Proof(itemID: id, notary: "qed", kind: .qed, state: .confirmed, remoteID: "q\(id)")) { _, _ in nil }
        }
        var pages: [[Int64]] = []
        var after: Int64 = 0
        while true {
            let page = try c.proofs(notary: "tsa", state: .confirmed, afterItem: after, limit: 3)
            if page.isEmpty { break }
            #expect(page.allSatisfy { $0.notary == "tsa" && $0.state == .confirmed })
            pages.append(page.map(\.itemID))
            after = page.last!.itemID
        }
        #expect(pages == [[1, 3, 5], [7, 9, 11], [13]])
        #expect(try c.proofs(notary: "tsa", state: .pending, afterItem: 8, limit: 10).map(\.itemID) == [10, 12])
        #expect(try c.proofs(notary: "none", state: .confirmed, afterItem: 0, limit: 10).isEmpty)
    }

    @Test("a batch member's proof is saved only while it is pending in that batch; the batch's members are found by key, and woken by kind",
          arguments: Backend.allCases)
    func conditionalProofSave(_ backend: Backend) throws {
        let c = try backend.make()
        _ = try c.recordIngest(record("a", path: "/drop/one.mp4"))
        _ = try c.recordIngest(record("b", path: "/drop/two.mp4", inode: 2))
        for id: Int64 in [1, 2] {
            try c.saveProof(Proof(itemID: id, notary: "tsa", kind: .rfc4998, state: .pending, remoteID: "tsa@1-2")) { _, _ in nil }
        }
        #expect(try c.proofs(notary: "tsa", remoteID: "tsa@1-2").map(\.itemID) == [1, 2])
        #expect(try c.proofs(notary: "tsa", remoteID: "tsa@3-4").isEmpty)
        let receipt = SHA256Digest(hex: String(repeating: "e", count: 64))
        let confirmed = Proof(itemID: 1, notary: "tsa", kind: .rfc4998, state: .confirmed, remoteID: "0a", receipt: receipt)
        #expect(try c.saveProof(confirmed, ifCurrent: .pending, remoteID: "tsa@1-2", receipt: nil) { _, _ in nil } != nil)
        // The same window's job again, or a member's failure after it was confirmed: nothing is written.
        let failed = Proof(itemID: 1, notary: "tsa", kind: .rfc4998, state: .failed, remoteID: "tsa@1-2", error: "late")
        #expect(try c.saveProof(failed, ifCurrent: .pending, remoteID: "tsa@1-2", receipt: nil) { _, _ in nil } == nil)
        #expect(try c.proofs(itemID: 1).first?.state == .confirmed)
        // Another window's key: nothing either.
        #expect(try c.saveProof(confirmed, ifCurrent: .pending, remoteID: "tsa@5-6", receipt: nil) { _, _ in nil } == nil)
        #expect(try c.events(itemID: 1).filter { $0.kind.hasPrefix("notary-") }.map(\.kind) == ["notary-pending", "notary-confirmed"])
        // A renewal saves over the record it read, not over one another renewal saved meanwhile.
        var renewed = confirmed
        renewed.receipt = SHA256Digest(hex: String(repeating: "f", count: 64))
        #expect(try c.saveProof(renewed, ifCurrent: .confirmed, remoteID: "0a", receipt: SHA256Digest(hex: String(repeating: "d", count: 64))) { _, _ in nil } == nil)
        #expect(try c.saveProof(renewed, ifCurrent: .confirmed, remoteID: "0a", receipt: receipt) { _, _ in nil } != nil)
        #expect(try c.proofs(itemID: 1).first?.receipt == renewed.receipt)
        // Waking an item's jobs by kind leaves its other jobs where they are.
        let later = Date().addingTimeInterval(3600)
        let notarize = try c.enqueue(JobSpec(.notarize(rule: "bodycam", notary: "tsa"), runAt: later), itemID: 2, dedupeKey: "n2")
        let after = try c.enqueue(JobSpec(.share(rule: "bodycam"), runAt: later), itemID: 2, dedupeKey: "s2")
        #expect(try c.wakeQueuedJobs(itemID: 2, kinds: [.notarize], now: Date()) == 1)
        let jobs = try c.jobs(itemID: 2)
        #expect(jobs.first { $0.id == notarize.id }.map { $0.nextRunAt < later } == true)
        #expect(jobs.first { $0.id == after.id }.map { abs($0.nextRunAt.timeIntervalSince(later)) < 1 } == true)
    }

    @Test("the same version of the same path again records nothing", arguments: Backend.allCases)
    func alreadyKnown(_ backend: Backend) throws {
        let c = try backend.make()
        _ = try c.recordIngest(record("a", path: "/drop/one.mp4"))
        let o = try c.recordIngest(record("a", path: "/drop/one.mp4"))
        guard case .alreadyKnown = o else { Issue.record("expected alreadyKnown, got \(o)"); return }
        #expect(try c.allEvents().count == 1)
        #expect(try c.itemForSource(path: "/drop/one.mp4", device: 1, inode: 1, size: 10, mtimeNanos: 1_000_000_000) != nil)
        #expect(try c.itemForSource(path: "/drop/one.mp4", device: 1, inode: 1, size: 10, mtimeNanos: 2) == nil)
    }

    @Test("items are found by id, hash prefix and source path", arguments: Backend.allCases)
    func lookup(_ backend: Backend) throws {
        let c = try backend.make()
        _ = try c.recordIngest(record("a", path: "/drop/one.mp4"))
        _ = try c.recordIngest(record("b", path: "/drop/two.mp4", inode: 2))
        #expect(try c.items(matching: "2").map(\.sha256.short) == ["bbbbbbbb"])
        #expect(try c.items(matching: "aaaa").map(\.id) == [1])
        #expect(try c.items(matching: "/drop/two.mp4").map(\.id) == [2])
        #expect(try c.items(matching: "cccc").isEmpty)
    }

    @Test("quarantine is recorded and resolved when the path later ingests fine", arguments: Backend.allCases)
    func quarantine(_ backend: Backend) throws {
        let c = try backend.make()
        _ = try c.recordQuarantine(path: "/drop/x.mp4", rule: nil, reason: "/drop/x.mp4: permission denied")
        #expect(try c.quarantine(includeResolved: false).count == 1)
        #expect(try c.summary().quarantined == 1)
        _ = try c.recordIngest(record("a", path: "/drop/x.mp4"))
        #expect(try c.quarantine(includeResolved: false).isEmpty)
    }

    @Test("summary counts items per state and per rule", arguments: Backend.allCases)
    func summary(_ backend: Backend) throws {
        let c = try backend.make()
        _ = try c.recordIngest(record("a", path: "/a", size: 5))
        let b = try c.recordIngest(record("b", path: "/b", size: 7, inode: 2)).item
        try apply(JobTransition(state: .failed, event: .failed, reason: "notary said no"), to: b.id, in: c, failing: "notary said no")
        let s = try c.summary()
        #expect(s.items == 2 && s.bytes == 12)
        #expect(s.byState == ["ingested": 1, "failed": 1])
        #expect(s.byRule["bodycam"] == ["ingested": 1, "failed": 1])
    }

    @Test("new content at a path taken before under the same rule supersedes the earlier item, with an event naming its successor",
          arguments: Backend.allCases)
    func supersedes(_ backend: Backend) throws {
        let c = try backend.make()
        func version(_ hex: Character, size: Int64, _ policy: IngestRecord.Supersedes = .all, rule: String? = "bodycam",
                     path: String = "/drop/upload.mov") -> IngestRecord {
            var r = record(hex, path: path, size: size, mtime: size)
            r.rule = rule
            r.supersedes = policy
            return r
        }
        let first = try c.recordIngest(version("a", size: 100)).item
        let second = try c.recordIngest(version("b", size: 200)).item
        let third = try c.recordIngest(version("c", size: 300)).item
        #expect(try c.item(id: first.id)?.supersededBy == second.id, "each names its own successor")
        #expect(try c.item(id: second.id)?.supersededBy == third.id)
        #expect(try c.item(id: third.id)?.supersededBy == nil)
        let events = try c.events(itemID: first.id)
        #expect(events.map(\.kind) == ["ingested", "superseded"])
        let details = try JSONDecoder().decode([String: String].self, from: Data(events[1].details.utf8))
        #expect(details["by"] == String(second.id) && details["path"] == "/drop/upload.mov" && details["sha256"] == second.sha256.hex)
        let s = try c.summary()
        #expect(s.byState == ["superseded": 2, "ingested": 1])
        #expect(s.byRule["bodycam"] == ["superseded": 2, "ingested": 1])
        #expect(try c.pendingItems(olderThan: nil).map(\.id) == [third.id], "a superseded item is not waiting for anything")

        // Content seen before (a duplicate) supersedes nothing; nor does a manual ingest, or another rule's.
        _ = try c.recordIngest(version("a", size: 100, path: "/drop/other.mov"))
        _ = try c.recordIngest(version("d", size: 400, .none, rule: nil))
        _ = try c.recordIngest(version("e", size: 500, rule: "office"))
        #expect(try c.item(id: third.id)?.supersededBy == nil)

        // Under a rule that deletes its files once done, a done item's name coming back is new evidence.
        let done = try c.recordIngest(version("f", size: 600, .unfinished, path: "/drop/VID0001.MP4")).item
        try apply(JobTransition(state: .done, event: .archived), to: done.id, in: c)
        let again = try c.recordIngest(version("0", size: 700, .unfinished, path: "/drop/VID0001.MP4")).item
        #expect(try c.item(id: done.id)?.supersededBy == nil)
        let pending = try c.recordIngest(version("1", size: 800, .unfinished, path: "/drop/VID0001.MP4")).item
        #expect(try c.item(id: again.id)?.supersededBy == pending.id, "one not done yet is superseded")
        #expect(try c.summary().empty == 0)
        _ = try c.recordIngest(version("2", size: 0, path: "/drop/empty.mov"))
        #expect(try c.summary().empty == 1)
    }
}

@Suite("Custody chain")
struct CustodyChainTests {
    /// A catalog on disk with three events, and a raw connection that bypasses the API.
    func makeCatalog(_ dir: String) throws -> (SQLiteCatalog, DatabaseQueue) {
        let c = try SQLiteCatalog(path: dir + "/catalog.sqlite")
        _ = try c.recordIngest(record("a", path: "/a"))
        _ = try c.recordIngest(record("b", path: "/b", inode: 2))
        _ = try c.recordIngest(record("c", path: "/c", inode: 3))
        try c.flushHead()
        #expect(try c.verifyChain().ok)
        let raw = try DatabaseQueue(path: dir + "/catalog.sqlite")
        try raw.write { db in
            try db.execute(sql: "DROP TRIGGER custody_event_no_update; DROP TRIGGER custody_event_no_delete")
        }
        return (c, raw)
    }

    @Test("an item row with a state this version does not know is an error naming the item, not shown as quarantined")
    func unknownState() throws {
        let dir = TempDirectory()
        let c = try SQLiteCatalog(path: dir.path + "/catalog.sqlite")
        guard case .created(let item) = try c.recordIngest(record("a", path: "/a")) else { Issue.record("not created"); return }
        let raw = try DatabaseQueue(path: dir.path + "/catalog.sqlite")
        try raw.write { try $0.execute(sql: "UPDATE item SET state = 'sealed' WHERE id = ?", arguments: [item.id]) }
        do {
            let read = try c.item(id: item.id)
            Issue.record("read as \(String(describing: read?.state))")
        } catch {
            #expect("\(error)".contains("item \(item.id) has the unknown state \"sealed\""), "\(error)")
        }
        #expect(throws: CatalogError.self) { try c.allItems() }
    }

    @Test("the schema refuses updates and deletes of custody events")
    func appendOnly() throws {
        let dir = TempDirectory()
        let c = try SQLiteCatalog(path: dir.path + "/catalog.sqlite")
        _ = try c.recordIngest(record("a", path: "/a"))
        let raw = try DatabaseQueue(path: dir.path + "/catalog.sqlite")
        #expect(throws: DatabaseError.self) {
            try raw.write { try $0.execute(sql: "UPDATE custody_event SET kind = 'x'") }
        }
        #expect(throws: DatabaseError.self) {
            try raw.write { try $0.execute(sql: "DELETE FROM custody_event") }
        }
    }

    @Test("an edited event is detected")
    func edited() throws {
        let dir = TempDirectory()
        let (c, raw) = try makeCatalog(dir.path)
        try raw.write { try $0.execute(sql: "UPDATE custody_event SET details = replace(details, '/b', '/z') WHERE seq = 2") }
        let r = try c.verifyChain()
        #expect(!r.ok)
        #expect(r.problems.contains { $0.seq == 2 && $0.detail.contains("edited") })
    }

    @Test("a deleted event is detected")
    func deleted() throws {
        let dir = TempDirectory()
        let (c, raw) = try makeCatalog(dir.path)
        try raw.write { try $0.execute(sql: "DELETE FROM custody_event WHERE seq = 2") }
        let r = try c.verifyChain()
        #expect(r.problems.contains { $0.seq == 3 && $0.detail.contains("missing") })
    }

    @Test("reordered events are detected")
    func reordered() throws {
        let dir = TempDirectory()
        let (c, raw) = try makeCatalog(dir.path)
        try raw.write { db in
            try db.execute(sql: "UPDATE custody_event SET seq = 100 WHERE seq = 2")
            try db.execute(sql: "UPDATE custody_event SET seq = 2 WHERE seq = 3")
            try db.execute(sql: "UPDATE custody_event SET seq = 3 WHERE seq = 100")
        }
        #expect(!(try c.verifyChain().ok))
    }

    @Test("a removed tail is detected through the head anchor")
    func truncatedTail() throws {
        let dir = TempDirectory()
        let (c, raw) = try makeCatalog(dir.path)
        try raw.write { try $0.execute(sql: "DELETE FROM custody_event WHERE seq = 3") }
        let r = try c.verifyChain()
        #expect(r.problems.contains { $0.detail.contains("tail removed") })
    }

    @Test("an event forged with a recomputed hash still breaks the head anchor or the next link")
    func forgedMiddle() throws {
        let dir = TempDirectory()
        let (c, raw) = try makeCatalog(dir.path)
        // Rewrite event 2's hash consistently with edited details: event 3's prev link breaks.
        try raw.write { db in
            try db.execute(sql: "UPDATE custody_event SET details = '{}', hash = ? WHERE seq = 2",
                           arguments: [String(repeating: "f", count: 64)])
        }
        let r = try c.verifyChain()
        #expect(r.problems.contains { $0.seq == 3 && $0.detail.contains("link broken") })
    }
}


@Suite("Catalog: batched ingest records")
struct CatalogBatchTests {
    @Test("recordIngests gives, in one transaction, the outcomes recording one by one gives: created, duplicate, already known",
          arguments: Backend.allCases)
    func batchMatchesOneByOne(_ backend: Backend) throws {
        let batch = [record("a", path: "/drop/one.mp4"), record("a", path: "/drop/two.mp4", inode: 2),
                     record("a", path: "/drop/one.mp4"), record("b", path: "/drop/three.mp4", inode: 3)]
        let c = try backend.make()
        let outcomes = try c.recordIngests(batch).map { try $0.get() }
        let one = try backend.make()
        let expected = try batch.map { try one.recordIngest($0) }
        #expect(outcomes.map(\.label) == expected.map(\.label))
        #expect(outcomes.map(\.item.id) == expected.map(\.item.id))
        #expect(try c.allEvents().map(\.kind) == ["ingested", "seen-again", "ingested"])
        #expect(try c.verifyChain().problems.isEmpty)
        #expect(try c.recordIngests([]).isEmpty)
    }

    @Test("a record the database refuses fails alone: the others of its batch are recorded, with an unbroken chain",
          arguments: Backend.allCases)
    func refusedRecordFailsAlone(_ backend: Backend) throws {
        let c = try backend.make()
        // The same version of one path (path, device, inode, size, mtime) under another hash: the
        // source row is refused as a duplicate key.
        let outcomes = try c.recordIngests([record("a", path: "/drop/one.mp4"), record("b", path: "/drop/one.mp4"),
                                            record("c", path: "/drop/two.mp4", inode: 2)])
        #expect(outcomes.map { (try? $0.get())?.label } == ["stored", nil, "stored"])
        #expect(try c.allItems().map(\.sha256.short) == ["aaaaaaaa", "cccccccc"])
        #expect(try c.allEvents().map(\.kind) == ["ingested", "ingested"])
        #expect(try c.verifyChain().problems.isEmpty)
    }
}
