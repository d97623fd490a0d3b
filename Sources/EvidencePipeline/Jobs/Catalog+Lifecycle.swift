import EvidenceCatalog
import EvidenceCore

extension Catalog {
    /// `retryFailed` as `evidence retry` does it: the lifecycle decides where each failed item
    /// goes back to (the state it failed from). An operator's retry names no rule, and none is
    /// needed: the rule changes nothing about a retry.
    public func retryFailed(itemID: Int64?) throws(CatalogError) -> Int {
        try retryFailed(itemID: itemID) { state, failedFrom in
            ItemLifecycle.withoutRule(from: state, on: .retried(failedFrom: failedFrom))
        }
    }
}
