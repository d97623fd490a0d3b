import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import EvidenceStore
import Foundation
import Testing

/// The custody cross-check as a pure function: the events, the rows and what the store holds
/// in; every difference, in both directions, out.
@Suite("CustodyCrossCheck: events ↔ rows ↔ store objects")
struct CustodyCrossCheckTests {
    static func digest(_ c: Character) -> SHA256Digest { SHA256Digest(hex: String(repeating: c, count: 64))! }
    static let original = digest("a")
    static let receipt = digest("b")
    static let certificate = digest("c")
    static let manifest = digest("d")
    static let epoch = Date(timeIntervalSince1970: 1_700_000_000)

    /// One item taken in, time-stamped, certified, archived and shared, as the catalog writes it:
    /// its rows, its events (details as the write methods record them) and its store objects.
    struct World {
        var rows: CustodyCrossCheck.Rows
        var events: [CustodyEvent] = []
        var objects: [SHA256Digest: CustodyCrossCheck.StoredObject]

        init() {
            let proof = Proof(itemID: 1, notary: "tsa", kind: .rfc3161, state: .confirmed, remoteID: "1f2e",
                              receipt: CustodyCrossCheckTests.receipt, network: "Sandbox TSA", link: "http://tsa.example/tsr")
            let link = SharedLink(itemID: 1, account: "vault", remotePath: "ev/a.txt", url: "https://share.example/s/xyz",
                                  expires: nil, passwordProtected: false, fallback: nil)
            rows = CustodyCrossCheck.Rows(
                items: [Item(id: 1, sha256: CustodyCrossCheckTests.original, size: 10, state: .ingested, createdAt: CustodyCrossCheckTests.epoch, updatedAt: CustodyCrossCheckTests.epoch)],
                sources: [SourceSighting(id: 1, itemID: 1, path: "/drop/a.txt", name: "a.txt", rule: "cam", device: 1, inode: 2,
                                         size: 10, mtime: CustodyCrossCheckTests.epoch, mtimeNanos: 0, seenAt: CustodyCrossCheckTests.epoch)],
                proofs: [proof],
                certificates: [Certificate(itemID: 1, origin: "evidence", sha256: CustodyCrossCheckTests.certificate, size: 300)],
                archived: [ArchivedFile(itemID: 1, account: "vault", remotePath: "ev/a.txt", role: .original,
                                        sha256: CustodyCrossCheckTests.original, size: 10, verifiedBy: "read-back"),
                           ArchivedFile(itemID: 1, account: "vault", remotePath: "ev/a.manifest.json", role: .manifest,
                                        sha256: CustodyCrossCheckTests.manifest, size: 50, verifiedBy: "read-back")],
                links: [link])
            objects = [CustodyCrossCheckTests.original: .present(size: 10), CustodyCrossCheckTests.receipt: .present(size: 900),
                       CustodyCrossCheckTests.certificate: .present(size: 300), CustodyCrossCheckTests.manifest: .present(size: 50)]
            append(.ingested, ["path": "/drop/a.txt", "name": "a.txt", "sha256": CustodyCrossCheckTests.original.hex, "size": "10",
                               "rule": "cam", "store": "new object"])
            append(.notaryConfirmed, proof.custodyDetails)
            append(.certificate, ["origin": "evidence", "sha256": CustodyCrossCheckTests.certificate.hex, "size": "300"])
            for a in rows.archived {
                append(.archivedFile, ["account": a.account, "remote_path": a.remotePath, "role": a.role.rawValue, "sha256": a.sha256.hex,
                                       "size": String(a.size), "verified_by": a.verifiedBy])
            }
            append(.shareLink, ["account": "vault", "remote_path": "ev/a.txt", "link_id": SharedLink.id(of: link.url), "password": "no"])
        }

        mutating func append(_ kind: CustodyEventKind, item: Int64? = 1, _ details: [String: String]) {
            let json = String(decoding: try! CanonicalJSON.encode(details), as: UTF8.self)
            events.append(CustodyEvent(seq: Int64(events.count + 1), itemID: item, at: "2026-01-01T00:00:00.000Z", kind: kind.rawValue,
                                       actor: "evidence", details: json, prevHash: "", hash: ""))
        }

        var problems: [ChainReport.Problem] { CustodyCrossCheck.check(rows: rows, events: events, objects: objects) }
        var text: String { problems.map(\.description).joined(separator: "\n") }
    }

    @Test func rowsEventsAndObjectsThatAgreeHaveNoProblem() {
        let w = World()
        #expect(w.problems.isEmpty, "\(w.text)")
    }

    @Test func supersededOnlyByItsEventNeverUnsupersededBySQL() {
        // The attacker's aim: mark an item superseded so that its archive is skipped, or clear
        // the mark from an earlier version so that it passes for the newest.
        var marked = World()
        marked.rows.items[0].supersededBy = 7
        #expect(marked.text.contains("item #1 is superseded by #7 in the catalog, but its custody events record no superseded event"),
                "\(marked.text)")
        var cleared = World()
        cleared.append(.superseded, ["by": "2", "path": "/drop/a.txt", "sha256": Self.digest("e").hex, "rule": "cam"])
        #expect(cleared.text.contains("item #1 is not superseded in the catalog, but its custody events record it superseded by #2"),
                "\(cleared.text)")
        cleared.rows.items[0].supersededBy = 2
        #expect(cleared.problems.isEmpty, "\(cleared.text)")
        cleared.rows.items[0].supersededBy = 3
        #expect(cleared.text.contains("item #1 is superseded by #3 in the catalog, but its custody events record it superseded by #2"))
    }

    @Test func aDeletedProofRowIsNamedByTheEventThatRecordsIt() {
        var w = World()
        w.rows.proofs = []
        #expect(w.problems.map(\.description) == [
            "custody event #2: notary-confirmed event records the proof of item #1 by tsa (receipt bbbbbbbb), which has no proof row: "
                + "the proof was deleted from the catalog",
        ])
    }

    @Test func aReceiptThatAnEventRecordsButNoRowRefersToIsExpectedInTheStore() {
        var w = World()
        w.rows.proofs = []
        let expected = CustodyCrossCheck.expectedObjects(rows: w.rows, events: w.events).first { $0.digest == Self.receipt }
        #expect(expected?.recordedByEvent == true && expected?.seq == 2, "fsck reports such an orphan as a problem, named by event #2")
        w.objects[Self.receipt] = .missing
        #expect(w.text.contains("custody event #2: store object \(Self.receipt.hex), the receipt of item #1 by tsa (notary-confirmed event), is missing"),
                "\(w.text)")
    }

    @Test func aReceiptReplacedByANewerEventIsNotExpectedAnyMore() {
        var w = World()
        var again = w.rows.proofs[0]
        again.receipt = Self.digest("e")
        again.remoteID = "2a2a"
        w.rows.proofs = [again]
        w.append(.notaryConfirmed, again.custodyDetails)
        w.objects[Self.digest("e")] = .present(size: 901)
        #expect(w.problems.isEmpty, "\(w.text)")
        #expect(!CustodyCrossCheck.expectedObjects(rows: w.rows, events: w.events).contains { $0.digest == Self.receipt },
                "a re-requested token supersedes the first one, which is a crash's kind of orphan, not a deleted row's")
    }

    @Test func aWholeItemDeletedWithItsRowsAndObjectIsNamedByEveryEventThatRecordsIt() {
        var w = World()
        w.rows = CustodyCrossCheck.Rows()
        w.objects = [:]
        let text = w.text
        #expect(text.contains("custody event #1: ingested event records item #1 (aaaaaaaa, a.txt), which has no item row: the item was deleted"), "\(text)")
        #expect(text.contains("custody event #1: ingested event records source \"/drop/a.txt\" (name \"a.txt\", rule cam) of item #1, which has no such source row"))
        #expect(text.contains("custody event #1: store object \(Self.original.hex), the original of item #1 (ingested event), is missing from the store"))
        #expect(text.contains("custody event #2: notary-confirmed event records the proof of item #1 by tsa"))
        #expect(text.contains("custody event #3: certificate event records certificate evidence of item #1"))
        #expect(text.contains("custody event #4: archived-file event records archive copy vault:ev/a.txt of item #1"))
        #expect(text.contains("custody event #6: share-link event records the link of item #1 on vault"))
        #expect(w.problems.map(\.seq) == w.problems.map(\.seq).sorted(), "in log order")
    }

    @Test func aRenamedSourceIsMissingOneWayAndUnrecordedTheOther() {
        var w = World()
        w.rows.sources[0].path = "/drop/other.txt"
        w.rows.sources[0].name = "other.txt"
        let text = w.text
        #expect(text.contains("custody event #1: ingested event records source \"/drop/a.txt\" (name \"a.txt\", rule cam) of item #1, "
                              + "which has no such source row: the source was deleted or renamed"), "\(text)")
        #expect(text.contains("source #1 of item #1 (\"/drop/other.txt\", name \"other.txt\", rule cam) has no ingested or seen-again event"), "\(text)")
    }

    @Test func aSecondSightingOfTheSamePathNeedsItsOwnEvent() {
        var w = World()
        var again = w.rows.sources[0]
        again.id = 2
        again.mtimeNanos = 5
        w.rows.sources.append(again)
        #expect(w.text.contains("source #2 of item #1"), "\(w.text)")
        w.append(.seenAgain, ["path": "/drop/a.txt", "name": "a.txt", "sha256": Self.original.hex, "size": "10", "rule": "cam"])
        #expect(w.problems.isEmpty, "\(w.text)")
    }

    @Test func aRepointedExplorerLinkIsCaughtWhenTheEventRecordsTheLink() {
        var w = World()
        w.rows.proofs[0].link = "https://explorer.evil.example/tx/1"
        #expect(w.problems.map(\.description) == [
            "custody event #2: proof of item #1 by tsa differs from its newest event (notary-confirmed): the catalog has link "
                + "\"https://explorer.evil.example/tx/1\", the event records \"http://tsa.example/tsr\": the proof row was changed without its event",
        ])
    }

    @Test func anEventWrittenBeforeLinksWereRecordedStillVerifies() {
        var w = World()
        var old = w.rows.proofs[0].custodyDetails
        old["link"] = nil
        w.events = w.events.map { e in
            guard e.is(.notaryConfirmed) else { return e }
            var e = e
            e.details = String(decoding: try! CanonicalJSON.encode(old), as: UTF8.self)
            return e
        }
        #expect(w.problems.isEmpty, "an old log verifies: \(w.text)")
        w.rows.proofs[0].remoteID = "ffff"
        #expect(w.text.contains("remote_id \"ffff\", the event records \"1f2e\""), "the other fields are still checked: \(w.text)")
    }

    @Test func aProofLinkSetOnAProofThatHadNoneIsCaught() {
        var w = World()
        let pending = Proof(itemID: 1, notary: "qed", kind: .qed, state: .pending, remoteID: "slug-1")
        w.rows.proofs.append(pending)
        w.append(.notaryPending, pending.custodyDetails)
        #expect(w.problems.isEmpty, "\(w.text)")
        w.rows.proofs[1].link = "https://explorer.evil.example/"
        #expect(w.text.contains("the catalog has link \"https://explorer.evil.example/\", the event records \"\""), "\(w.text)")
    }

    @Test func changedCertificateArchiveAndShareRowsAreCaught() {
        var w = World()
        w.rows.certificates[0].size = 301
        w.rows.archived[0].remotePath = "ev/elsewhere.txt"
        w.rows.links[0].url = "https://share.example/s/other"
        let text = w.text
        #expect(text.contains("certificate evidence of item #1 (cccccccc, 301 bytes) has no custody event"), "\(text)")
        #expect(text.contains("archive copy vault:ev/elsewhere.txt of item #1 has no archived-file event"), "\(text)")
        #expect(text.contains("archived-file event records archive copy vault:ev/a.txt of item #1, which has no archive row"), "\(text)")
        #expect(text.contains("share link of item #1 on vault (id \(SharedLink.id(of: "https://share.example/s/other"))"), "\(text)")
    }

    @Test func aStoreObjectOfTheWrongSizeOrThatCannotBeAskedIsAProblem() {
        var w = World()
        w.objects[Self.certificate] = .present(size: 299)
        w.objects[Self.manifest] = .unreadable("s3://bucket/sha256/dd/dd/…: timed out")
        let text = w.text
        #expect(text.contains("certificate evidence of item #1 (certificate event), is 299 bytes; 300 are recorded"), "\(text)")
        #expect(text.contains("(archived-file event), not checked: s3://bucket/sha256/dd/dd/…: timed out"), "\(text)")
    }

    @Test func anItemRowWhoseSizeWasChangedIsCaught() {
        var w = World()
        w.rows.items[0].size = 11
        #expect(w.text.contains("custody event #1: item #1 is 11 bytes in the catalog, but its ingested event records 10"), "\(w.text)")
    }
}
