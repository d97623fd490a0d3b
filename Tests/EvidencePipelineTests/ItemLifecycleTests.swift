import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidencePipeline
import Foundation
import Testing

/// The item lifecycle as a pure function: given a rule, a state and an event, the transition.
@Suite("ItemLifecycle: state + event → transition + jobs")
struct ItemLifecycleTests {
    func rule(notary: [String] = ["qed", "tsa"], archive: String? = "vault", share: ShareSettings? = ShareSettings(access: .open),
              after: AfterAction = .keep) -> WatchRule {
        WatchRule(name: "cam", file: "/rules/cam.toml", path: "/drop", notary: notary, archive: archive, share: share, after: after)
    }

    func kinds(_ t: JobTransition?) -> [JobKind] { t?.jobs.map(\.kind) ?? [] }

    @Test func aNewItemIsVerifiedFirst() {
        #expect(ItemLifecycle(rule: rule()).jobsForNewItem == [JobSpec(.verify(rule: "cam"))])
    }

    @Test func aVerifiedItemGoesToEachNotaryOfItsRule() {
        let t = ItemLifecycle(rule: rule()).transition(from: .ingested, on: .verified(details: [:]))
        #expect(t?.state == nil, "it stays ingested until a notary answers")
        #expect(t?.jobs.map(\.payload) == [.notarize(rule: "cam", notary: "qed"), .notarize(rule: "cam", notary: "tsa")])
        #expect(t?.jobs.map(\.scope) == ["qed", "tsa"], "one job per notary and item")
    }

    @Test func withoutNotariesAVerifiedItemGoesToTheArchiveOrIsDone() {
        #expect(kinds(ItemLifecycle(rule: rule(notary: [])).transition(from: .ingested, on: .verified(details: [:]))) == [.archive])
        let t = ItemLifecycle(rule: rule(notary: [], archive: nil)).transition(from: .ingested, on: .verified(details: [:]))
        #expect(t?.state == .done && t?.jobs.isEmpty == true)
    }

    @Test func theFirstPendingProofSubmitsLaterOnesChangeNothing() {
        let life = ItemLifecycle(rule: rule())
        let pending = ItemLifecycle.Event.proofSaved(notary: "qed", state: .pending, error: nil, confirmed: [])
        #expect(life.transition(from: .ingested, on: pending)?.state == .submitted)
        #expect(life.transition(from: .submitted, on: pending) == nil)
        #expect(life.transition(from: .confirmed, on: pending) == nil, "never moves an item back")
    }

    @Test func confirmedOnlyWhenEveryNotaryOfTheRuleIs() {
        let life = ItemLifecycle(rule: rule())
        let one = life.transition(from: .submitted, on: .proofSaved(notary: "tsa", state: .confirmed, error: nil, confirmed: ["tsa"]))
        #expect(one == nil)
        let both = life.transition(from: .submitted, on: .proofSaved(notary: "qed", state: .confirmed, error: nil, confirmed: ["tsa", "qed"]))
        #expect(both?.state == .confirmed)
        #expect(both?.jobs.map(\.payload) == [.certificate(rule: "cam")])
        // A notary of another rule (the same content dropped elsewhere) does not count.
        let other = life.transition(from: .submitted, on: .proofSaved(notary: "qed", state: .confirmed, error: nil, confirmed: ["qed", "other"]))
        #expect(other == nil)
    }

    @Test func aFailedProofFailsTheItemWithTheNotarysReasonOnce() {
        let life = ItemLifecycle(rule: rule())
        let failed = ItemLifecycle.Event.proofSaved(notary: "qed", state: .failed, error: "hash rejected", confirmed: [])
        let t = life.transition(from: .submitted, on: failed)
        #expect(t?.state == .failed && t?.reason == "qed: hash rejected")
        #expect(life.transition(from: .failed, on: failed) == nil)
    }

    @Test func certificatesLeadToTheArchiveThenTheShareThenDone() {
        let life = ItemLifecycle(rule: rule())
        let certified = life.transition(from: .confirmed, on: .certified(count: 2))
        #expect(certified?.state == .certified && kinds(certified) == [.archive])
        let archived = life.transition(from: .certified, on: .archived(details: [:]))
        #expect(archived?.state == .archived && kinds(archived) == [.share])
        #expect(life.transition(from: .archived, on: .shared(details: [:]))?.state == .done)
    }

    @Test func stagesTheRuleDoesNotAskForAreSkipped() {
        #expect(ItemLifecycle(rule: rule(archive: nil)).transition(from: .confirmed, on: .certified(count: 1))?.state == .done)
        let noShare = ItemLifecycle(rule: rule(share: nil)).transition(from: .certified, on: .archived(details: [:]))
        #expect(noShare?.state == .done && noShare?.jobs.isEmpty == true)
    }

    @Test func theTransitionThatMakesAnItemDoneWakesItsParkedAfterActions() {
        let life = ItemLifecycle(rule: rule())
        #expect(life.transition(from: .archived, on: .shared(details: [:]))?.wake == [.afterAction])
        #expect(life.transition(from: .certified, on: .archived(details: [:]))?.wake == [], "not done yet: nothing woken")
        #expect(ItemLifecycle(rule: rule(archive: nil)).transition(from: .confirmed, on: .certified(count: 1))?.wake == [.afterAction])
        #expect(life.transition(from: .done, on: .archived(details: [:]))?.wake == [.afterAction],
                "another rule's archive copy of a done item wakes the after-action waiting for it")
        #expect(ItemLifecycle(rule: rule(after: .delete)).jobsForNewSource.allSatisfy { $0.isParked }, "created parked, never polled")
    }

    @Test func anAfterActionIsASourcesJobWhenTheRuleHasOne() {
        #expect(ItemLifecycle(rule: rule()).jobsForNewSource.isEmpty)
        #expect(ItemLifecycle(rule: rule(after: .delete)).jobsForNewSource.map(\.payload)
                == [.afterAction(rule: "cam", action: .delete, source: nil)])
        #expect(ItemLifecycle(rule: rule(after: .move("/done"))).jobsForNewSource.map(\.payload)
                == [.afterAction(rule: "cam", action: .move(to: "/done"), source: nil)])
    }
}

/// Job parameters are typed, and stored as the flat map catalogs have always held.
@Suite("JobPayload: typed, stored as before")
struct JobPayloadTests {
    @Test(arguments: [
        JobPayload.verify(rule: "cam"), .notarize(rule: "cam", notary: "qed"), .certificate(rule: "cam"),
        .archive(rule: "cam"), .share(rule: "cam"), .afterAction(rule: "cam", action: .delete, source: SourceRef(id: 7, path: "/d/a.mp4")),
        .afterAction(rule: "cam", action: .move(to: "/done"), source: nil), .anchorCopy(file: "12-ab.tsr", account: "vault"),
    ])
    func storedFormReadsBack(_ payload: JobPayload) throws {
        #expect(try JobPayload(kind: payload.kind, fields: payload.fields) == payload)
    }

    @Test func aCatalogWrittenBeforeTheTypesReadsUnchanged() throws {
        let old = ["rule": "cam", "action": "move", "to": "/srv/done", "source_id": "12", "path": "/drop/a.mp4"]
        #expect(try JobPayload(kind: .afterAction, fields: old)
                == .afterAction(rule: "cam", action: .move(to: "/srv/done"), source: SourceRef(id: 12, path: "/drop/a.mp4")))
    }

    @Test func aMissingOrUnknownParameterIsAnErrorNamingIt() {
        #expect(throws: JobPayloadError(kind: .notarize, problem: "no \"notary\"")) {
            try JobPayload(kind: .notarize, fields: ["rule": "cam"])
        }
        #expect(throws: JobPayloadError(kind: .afterAction, problem: "unknown action \"shred\"")) {
            try JobPayload(kind: .afterAction, fields: ["rule": "cam", "action": "shred"])
        }
    }
}

/// Failing and retrying are the lifecycle's too: the verify handler and `evidence retry` only
/// report what happened.
@Suite("ItemLifecycle: giving up and retrying")
struct ItemLifecycleFailureTests {
    let rule = WatchRule(name: "cam", file: "/rules/cam.toml", path: "/drop", notary: ["qed"], archive: "vault")

    @Test func aVerifyThatGaveUpFailsTheItemWithItsReasonUnderAnyRuleOrNone() {
        let expected = JobTransition(state: .failed, event: .verifyFailed, reason: "store object does not match its hash")
        let event = ItemLifecycle.Event.verifyGaveUp(reason: "store object does not match its hash")
        #expect(ItemLifecycle(rule: rule).transition(from: .ingested, on: event) == expected)
        #expect(ItemLifecycle.withoutRule(from: .ingested, on: event) == expected)
    }

    @Test func aRetriedItemGoesBackToTheStateItFailedFromOrToIngested() {
        #expect(ItemLifecycle.withoutRule(from: .failed, on: .retried(failedFrom: .submitted))
                == JobTransition(state: .submitted, event: .retry))
        #expect(ItemLifecycle.withoutRule(from: .failed, on: .retried(failedFrom: nil))?.state == .ingested,
                "a failed item with nothing recorded starts again from the beginning")
        #expect(ItemLifecycle(rule: rule).transition(from: .failed, on: .retried(failedFrom: .confirmed))?.state == .confirmed)
    }

    @Test func aRetryOfAnItemThatIsNotFailedChangesNothing() {
        #expect(ItemLifecycle.withoutRule(from: .certified, on: .retried(failedFrom: nil)) == nil,
                "its re-queued archive job takes it on from where it is")
    }

    @Test func anItemWithoutARuleIsVerifiedWithNothingPlannedAfter() {
        let t = ItemLifecycle.withoutRule(from: .ingested, on: .verified(details: ["sha256": "ab"]))
        #expect(t == JobTransition(state: nil, event: .verified, details: ["sha256": "ab"]))
        #expect(ItemLifecycle.withoutRule(from: .ingested, on: .certified(count: 1)) == nil)
    }
}
