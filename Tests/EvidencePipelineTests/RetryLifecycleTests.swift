import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidencePipeline
import Foundation
import Testing

/// `evidence retry` through the lifecycle: the catalog keeps the state a failed item came from
/// (`failed_from`), the lifecycle decides that the item goes back there.
@Suite("Retry: a failed item goes back where it failed from, as the lifecycle decides")
struct RetryLifecycleTests {
    @Test("an item the notary failed while submitted is retried to submitted, and its custody log replays to the same state")
    func retryReturnsToFailedFrom() throws {
        let c = try SQLiteCatalog.inMemory()
        let life = ItemLifecycle(rule: WatchRule(name: "cam", file: "/rules/cam.toml", path: "/drop", notary: ["qed", "tsa"]))
        let item = try c.recordIngest(IngestRecord(sha256: SHA256Digest(hex: String(repeating: "a", count: 64))!, size: 1,
                                                   path: "/drop/a.mp4", rule: "cam", device: 1, inode: 1, mtimeNanos: 1,
                                                   media: nil, newObject: true, actor: "test")).item
        let job = try c.enqueue(JobSpec(.notarize(rule: "cam", notary: "qed")), itemID: item.id, dedupeKey: "notarize:qed")
        _ = try #require(try c.claimJob(id: job.id, owner: "test", lease: 60, now: Date()))
        // As NotarizeHandler saves the notary's answers: pending (submitted), then failed.
        for (state, error) in [(Proof.State.pending, nil), (.failed, "Transaction reverted")] as [(Proof.State, String?)] {
            try c.saveProof(Proof(itemID: item.id, notary: "qed", kind: .qed, state: state, remoteID: "slug", error: error)) {
                life.transition(from: $0, on: .proofSaved(notary: "qed", state: state, error: error, confirmed: $1))
            }
        }
        try c.failJob(job.id, owner: "test", error: "qed: Transaction reverted", retryAt: nil, onGiveUp: nil)
        #expect(try c.item(id: item.id)?.state == .failed)

        #expect(try c.retryFailed(itemID: item.id) == 1)
        #expect(try c.item(id: item.id)?.state == .submitted, "back where it failed from, not to ingested")
        #expect(try c.jobs(itemID: item.id).map(\.state) == [.queued])
        let replay = try c.events(itemID: item.id).map { e in
            (e, try JSONDecoder().decode([String: String].self, from: Data(e.details.utf8)))
        }
        #expect(CustodyCrossCheck.replayState(replay) == "submitted", "the log says what the row says")
    }
}
