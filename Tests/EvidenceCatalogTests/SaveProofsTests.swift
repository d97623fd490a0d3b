@testable import EvidenceCatalog
import EvidenceCore
import EvidenceTesting
import Foundation
import Synchronization
import Testing

/// A time-stamp window's members saved together (`saveProofs`): one transaction for many items,
/// each only where it still waits for that window.
@Suite("Proofs: a window's members saved in one transaction")
struct SaveProofsTests {
    @Test("members still pending in the window are saved, with their events and their lifecycle's transitions, in one transaction; the others are left as they are", arguments: Backend.allCases)
    func saveTogether(_ backend: Backend) throws {
        let c = try backend.make()
        let ids = try ["a", "b", "c", "d"].enumerated().map { i, hex in
            try c.recordIngest(record(Character(hex), path: "/drop/\(hex).bin", inode: UInt64(i + 1))).item.id
        }
        // a, b, c joined window w1; d joined w2.
        for (i, id) in ids.enumerated() {
            try c.saveProof(Proof(itemID: id, notary: "tsa", kind: .rfc4998, state: .pending, remoteID: i == 3 ? "w2" : "w1")) { _, _ in nil }
        }
        // c's proof was saved by another run meanwhile (confirmed under w1): never overwritten.
        let other = Proof(itemID: ids[2], notary: "tsa", kind: .rfc4998, state: .confirmed, remoteID: "w1",
                          receipt: SHA256Digest(hex: String(repeating: "e", count: 64))!)
        try c.saveProof(other) { _, _ in nil }
        let transactions = Mutex(0)
        (c as? SQLiteCatalog)?.observeCommits { _ in transactions.withLock { $0 += 1 } }

        let receipt = SHA256Digest(hex: String(repeating: "f", count: 64))!
        let saves = ids.map { id in
            ProofSave(Proof(itemID: id, notary: "tsa", kind: .rfc4998, state: .confirmed, remoteID: "w1", receipt: receipt)) { state, confirmed in
                // The item's lifecycle: confirmed by every notary it has → certified stage next.
                confirmed == ["tsa"] ? JobTransition(state: .confirmed, event: .confirmed) : nil
            }
        }
        let saved = try c.saveProofs(saves, ifCurrent: .pending, remoteID: "w1")
        #expect(Set(saved.keys) == [ids[0], ids[1]])
        #expect(saved[ids[0]]?.state == .confirmed && saved[ids[1]]?.state == .confirmed)
        if backend == .sqlite { #expect(transactions.withLock { $0 } == 1, "one transaction for the window") }

        for id in ids[0...1] {
            #expect(try c.proofs(itemID: id).first?.state == .confirmed)
            #expect(try c.proofs(itemID: id).first?.receipt == receipt)
            #expect(try c.events(itemID: id).map(\.kind) == ["ingested", "notary-pending", "notary-confirmed", "confirmed"])
        }
        #expect(try c.proofs(itemID: ids[2]).first?.receipt == other.receipt, "another run's proof overwritten")
        #expect(try c.proofs(itemID: ids[3]).first?.state == .pending, "a member of another window saved")
        #expect(try c.item(id: ids[3])?.state == .ingested)
        #expect(try c.saveProofs([], ifCurrent: .pending, remoteID: "w1").isEmpty)
        #expect(try c.verifyChain().ok)
    }
}
