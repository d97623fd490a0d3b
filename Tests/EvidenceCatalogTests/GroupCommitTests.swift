@testable import EvidenceCatalog
import EvidenceCore
import EvidenceTesting
import Foundation
import GRDB
import Synchronization
import Testing

/// Group commit of the SQLite catalog's writes (`CommitGroup`): writes queued while another
/// holds the write connection are committed together, each in a savepoint of its own; a write
/// never returns before its transaction is committed, and one reported committed is in the file.
@Suite("Catalog group commit")
struct GroupCommitTests {
    struct Refused: Error {}

    /// Opens a catalog on disk whose transactions' sizes are recorded, holds its write connection
    /// with one write while `writes` are started on threads of their own, and lets it go once all
    /// of them are queued: they then share one transaction. Returns each write's outcome (in the
    /// order given) and the sizes of the transactions committed.
    func heldThenReleased(_ c: SQLiteCatalog,
                          _ writes: [@Sendable (SQLiteCatalog) throws -> Void]) throws -> (outcomes: [Bool], sizes: [Int]) {
        let sizes = Mutex<[Int]>([])
        c.observeCommits { n in sizes.withLock { $0.append(n) } }
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), left = DispatchSemaphore(value: 0)
        let holder = Thread {
            _ = try? c.write { db in
                _ = try SQLiteCatalog.appendEvent(db, itemID: nil, kind: .ingested, actor: "holder", details: [:])
                entered.signal()
                release.wait()
            }
            left.signal()
        }
        holder.start()
        entered.wait()
        let outcomes = Mutex<[Int: Bool]>([:])
        let done = DispatchSemaphore(value: 0)
        for (i, write) in writes.enumerated() {
            Thread {
                let ok = (try? write(c)) != nil
                outcomes.withLock { $0[i] = ok }
                done.signal()
            }.start()
        }
        // Every write queued behind the holder, then the holder lets go.
        #expect(waitUntil(timeout: 30) { c.commits.waiting == writes.count })
        release.signal()
        for _ in writes { done.wait() }
        left.wait()  // its write has returned, the head anchor written after it
        let o = outcomes.withLock { $0 }
        return ((0..<writes.count).map { o[$0] ?? false }, sizes.withLock { $0 })
    }

    func actors(_ c: SQLiteCatalog) throws -> [String] {
        try c.allEvents().map(\.actor)
    }

    /// `count` writes, each appending an event by actor `w<index>`; the one at `failing` then runs `fail`.
    func eventWrites(_ count: Int, failing: Int,
                     _ fail: @escaping @Sendable (Database) throws -> Void) -> [@Sendable (SQLiteCatalog) throws -> Void] {
        (0..<count).map { i in
            { c in
                try c.write { db in
                    _ = try SQLiteCatalog.appendEvent(db, itemID: nil, kind: .ingested, actor: "w\(i)", details: [:])
                    if i == failing { try fail(db) }
                }
            }
        }
    }

    @Test("writes queued behind another share one transaction; one that throws is rolled back alone and gets its error")
    func queuedWritesShareATransaction() throws {
        let dir = TempDirectory()
        let c = try SQLiteCatalog(path: dir.path + "/catalog.sqlite")
        let writes = eventWrites(5, failing: 2) { _ in throw Refused() }
        let (outcomes, sizes) = try heldThenReleased(c, writes)
        #expect(outcomes == [true, true, false, true, true])
        // The holder alone, then the five queued behind it in one transaction.
        #expect(sizes == [1, 5])
        let actors = try actors(c)
        #expect(actors.first == "holder")
        #expect(Set(actors.dropFirst()) == ["w0", "w1", "w3", "w4"])
        let report = try c.verifyChain()
        #expect(report.ok, "\(report.problems)")
        // A catalog opened afresh reads the same: they were committed, not only seen by this connection.
        let reopened = try SQLiteCatalog(path: dir.path + "/catalog.sqlite")
        #expect(try reopened.allEvents().count == 5)
    }

    @Test("a write that ends the shared transaction fails every write of it: none is reported committed")
    func abortedTransactionFailsItsWrites() throws {
        let dir = TempDirectory()
        let c = try SQLiteCatalog(path: dir.path + "/catalog.sqlite")
        // As SQLite does on a full disk or an I/O error: the whole transaction is rolled back.
        let writes = eventWrites(4, failing: 1) { db in
            try db.execute(sql: "ROLLBACK")
            throw Refused()
        }
        let (outcomes, sizes) = try heldThenReleased(c, writes)
        #expect(outcomes == [false, false, false, false])
        #expect(sizes == [1, 4])
        #expect(try actors(c) == ["holder"])
        // The connection is usable afterwards, and the chain intact.
        try c.appendEvent(itemID: nil, kind: .ingested, actor: "after", details: [:])
        #expect(try actors(c) == ["holder", "after"])
        let report = try c.verifyChain()
        #expect(report.ok, "\(report.problems)")
    }

    @Test("a lone write is committed at once, in a transaction of its own")
    func loneWrite() throws {
        let dir = TempDirectory()
        let c = try SQLiteCatalog(path: dir.path + "/catalog.sqlite")
        let sizes = Mutex<[Int]>([])
        c.observeCommits { n in sizes.withLock { $0.append(n) } }
        try c.appendEvent(itemID: nil, kind: .ingested, actor: "a", details: [:])
        #expect(throws: CatalogError.self) { try c.write { _ in throw Refused() } }
        try c.appendEvent(itemID: nil, kind: .ingested, actor: "b", details: [:])
        #expect(sizes.withLock { $0 } == [1, 1, 1])
        #expect(try actors(c) == ["a", "b"])
    }
}
