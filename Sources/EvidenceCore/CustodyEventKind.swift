/// What a custody event records. Raw values are written into the hash-chained custody log (and
/// every bundle's `custody.jsonl`): never rename them. Reading the log accepts any kind (a log
/// written by another version stays verifiable); writing takes only these.
public enum CustodyEventKind: String, Codable, Sendable, CaseIterable {
    // Items and their sources
    case ingested
    case seenAgain = "seen-again"
    case quarantined
    case verified
    case verifyFailed = "verify-failed"
    /// A later version of the same path under the same rule was taken as item `by`.
    case superseded
    // Notaries
    case notaryPending = "notary-pending"
    case notaryConfirmed = "notary-confirmed"
    case notaryFailed = "notary-failed"
    case submitted
    case confirmed
    case failed
    // Certificates, archive, links
    case certificate
    case certified
    case archivedFile = "archived-file"
    case archived
    case shareLink = "share-link"
    case shared
    // Operators and after-actions
    case retry
    case sourceDeleting = "source-deleting"
    case sourceDeleted = "source-deleted"
    case sourceMoved = "source-moved"
    case afterActionSkipped = "after-action-skipped"
    /// A stage (`archive`, `share`) not run for a superseded item (`superseded_by`).
    case stageSkipped = "stage-skipped"
    case ruleStagesComplete = "rule-stages-complete"
    /// An S3 Object Lock legal hold put on or taken off the item's original (`evidence hold`).
    case legalHold = "legal-hold"
    /// Someone looked at or took away the evidence: a portal page, certificate or bundle
    /// download, a CLI `bundle` or `cert` (`what`; the actor names the portal or local user).
    case accessed
    // Cases and tags: replayed from these events alone (`CaseBook`), so the chain is their record
    /// A case was opened (`case`, `title`; no item).
    case caseOpened = "case-opened"
    /// The item was added to a case (`case`, `how`: named, rule, dates, search).
    case caseAdded = "case-added"
    /// The item was taken out of a case (`case`, `reason`): the item itself stays.
    case caseRemoved = "case-removed"
    /// A tag put on (`tagged`) or taken off (`untagged`) the item (`tag`).
    case tagged
    case untagged
    /// The labels (agency, custodian, case, officer, device, location) the item's certificate
    /// prints, and the sidecar they came from (`sidecar`, `sidecar_sha256`) or why it was not used.
    case labelled
    /// The poster frame made for the item (`sha256`, `size`, `width`, `height` of its PNG in the store).
    case poster
    // The log itself
    /// An RFC 3161 anchor over the event before it was saved (`anchors/<seq>-<hash>.tsr`): later
    /// anchors cover this record, so an anchor deleted from between two others shows as a gap.
    case anchored

    /// The event recording a notary's proof in `state` (`pending`, `confirmed`, `failed`).
    public static func notary(_ state: Proof.State) -> CustodyEventKind {
        switch state {
        case .pending: .notaryPending
        case .confirmed: .notaryConfirmed
        case .failed: .notaryFailed
        }
    }
}
