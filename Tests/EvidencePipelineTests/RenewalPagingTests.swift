import EvidenceCatalog
import EvidenceCore
@testable import EvidencePipeline
import EvidenceStore
import EvidenceTesting
import Foundation
import Testing

/// Renewal's daily pass reads a notary's confirmed proofs a page at a time: every one is seen
/// once, in item order, across page edges; pending proofs and other notaries' are not.
@Suite("Renewal reads proofs page by page")
struct RenewalPagingTests {
    @Test("seven confirmed records in pages of any size: each seen once, with its item and its stored record",
          arguments: [1, 2, 7, 500])
    func pagesCoverEveryProof(pageSize: Int) throws {
        let dir = TempDirectory("renewal-paging")
        defer { dir.remove() }
        let catalog = try SQLiteCatalog.inMemory()
        let store = try ObjectStore(home: dir.path + "/home")
        var expected: [Int64: Data] = [:]
        for i in 0..<9 {
            let item = try catalog.recordIngest(IngestRecord(
                sha256: SHA256Digest(hex: String(repeating: Array("0123456789")[i], count: 64))!, size: 1, path: "/drop/f\(i)",
                rule: nil, device: 1, inode: UInt64(i + 1), mtimeNanos: 1, media: nil, newObject: true, actor: "test")).item
            let record = Data("record of item \(item.id)".utf8)
            let receipt = try store.put(record).digest
            // Items 1…7 confirmed; 8 pending; 9 confirmed for another notary only.
            let notary = i == 8 ? "other" : "tsa"
            let state: Proof.State = i == 7 ? .pending : .confirmed
            try catalog.saveProof(Proof(itemID: item.id, notary: notary, kind: .rfc4998, state: state, remoteID: "b\(item.id)",
                                        receipt: state == .confirmed ? receipt : nil)) { _, _ in nil }
            if notary == "tsa", state == .confirmed { expected[item.id] = record }
        }
        var seen: [Int64] = []
        let checked = try RecordRenewal.forEachRecord(catalog: catalog, store: store, notary: "tsa", items: nil,
                                                      pageSize: pageSize) { proof, item, record in
            #expect(item.id == proof.itemID)
            #expect(record == expected[proof.itemID])
            seen.append(proof.itemID)
        }
        #expect(seen == Array(1...7))
        #expect(checked == 7)
        // Restricted to some items: only those, still across pages.
        var some: [Int64] = []
        _ = try RecordRenewal.forEachRecord(catalog: catalog, store: store, notary: "tsa", items: [2, 5, 8],
                                            pageSize: pageSize) { proof, _, _ in some.append(proof.itemID) }
        #expect(some == [2, 5])
    }
}
