import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceStore
import Foundation

/// Re-reads the stored object of a newly ingested item and checks it against the catalog:
/// the copy that all later stages rely on is proven before anything else happens.
public struct VerifyHandler: JobHandler {
    public let kind = JobKind.verify
    let home: EvidenceHome
    let rules: LiveRules

    public init(home: EvidenceHome, rules: LiveRules) {
        self.home = home
        self.rules = rules
    }

    public func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard let itemID = job.itemID else { throw JobError("verify job without an item", retryable: false) }
        let home = self.home
        // The item read and its object hashed in one visit to an I/O thread.
        enum Found: Sendable { case item(Item, Result<FileHasher.Result, StoreError>), gone, unreadable(CatalogError) }
        let found = await onIOThread { () -> Found in
            do throws(CatalogError) {
                guard let item = try home.catalog.item(id: itemID) else { return .gone }
                return .item(item, Result { () throws(StoreError) in try home.store.hashObject(item.sha256) })
            } catch {
                return .unreadable(error)
            }
        }
        let item: Item, result: Result<FileHasher.Result, StoreError>
        switch found {
        case .item(let i, let r): (item, result) = (i, r)
        case .gone: throw JobError("item \(itemID) is gone", retryable: false)
        case .unreadable(let e): throw JobError(e.description, retryable: true)
        }
        // The item's rule decides what follows; an item without one (ingested by hand, or its
        // rule since removed) is verified with nothing else planned.
        let lifecycle = job.payload.rule.flatMap { rules[$0] }.map(ItemLifecycle.init(rule:))
        let decide = { (event: ItemLifecycle.Event) -> JobTransition? in
            if let lifecycle { return lifecycle.transition(from: item.state, on: event) }
            return ItemLifecycle.withoutRule(from: item.state, on: event)
        }
        let path = home.store.location(of: item.sha256)
        switch result {
        case .success(let r) where r.digest == item.sha256 && r.size == item.size:
            return .done(decide(.verified(details: ["object": path, "sha256": r.digest.hex])))
        case .success(let r):
            throw JobError("\(path): store object hashes to \(r.digest.hex) (\(r.size) bytes), catalog says \(item.sha256.hex) (\(item.size) bytes)",
                           retryable: false, onGiveUp: decide(.verifyGaveUp(reason: "store object does not match its hash")))
        case .failure(let e):
            throw JobError(e.description, retryable: true, onGiveUp: decide(.verifyGaveUp(reason: e.description)))
        }
    }
}
