import EvidenceCore
import Foundation

/// A custody event as a sentence a clerk can read ("Notarized by tsa.", "Downloaded the
/// bundle.zip."), built from its kind and details; an event of a kind this version does not
/// know is shown with its details as "key: value" pairs. The hash-chained record stays the
/// event itself: the page shows its raw details beside the sentence.
enum CustodySentence {
    static func describe(_ e: CustodyEvent) -> String {
        let d = e.fields
        func v(_ k: String) -> String { d[k] ?? "?" }
        switch CustodyEventKind(rawValue: e.kind) {
        case .ingested?:
            return "Taken in from \(v("path"))" + (d["rule"].map { " by rule \($0)" } ?? "") + ": \(d["size"].map { "\($0) bytes, " } ?? "")SHA-256 \(v("sha256"))."
        case .seenAgain?: return "The same content was seen again at \(v("path"))."
        case .quarantined?: return "Quarantined: \(v("reason"))."
        case .verified?: return "The stored copy was re-read and matches its SHA-256."
        case .verifyFailed?: return "The stored copy did NOT match its SHA-256" + (d["reason"].map { ": \($0)" } ?? "") + "."
        case .superseded?: return "Superseded by item #\(v("by")), a later version of \(v("path"))."
        case .notaryPending?: return "Submitted to notary \(v("notary")); waiting for its proof."
        case .notaryConfirmed?: return "Notary \(v("notary")) confirmed its proof."
        case .notaryFailed?: return "Notary \(v("notary")) failed the proof."
        case .submitted?: return "Sent for notarization" + (d["notary"].map { " to \($0)" } ?? "") + "."
        case .confirmed?: return "Every required notary has confirmed."
        case .failed?: return "The item failed" + (d["reason"].map { ": \($0)" } ?? "") + "."
        case .certificate?: return "Certificate \(v("origin")) stored (SHA-256 \(v("sha256")))."
        case .certified?: return "Certified."
        case .archivedFile?: return "A verified copy (\(v("role"))) is at \(v("account")): \(v("remote_path"))."
        case .archived?: return "Archived" + (d["rule"].map { " for rule \($0)" } ?? "") + "."
        case .shareLink?, .shared?: return "A share link was made on \(v("account")) for \(v("remote_path"))."
        case .retry?: return "An operator asked for a retry."
        case .sourceDeleting?: return "Deleting the source \(v("path")) (the rule's after-action)."
        case .sourceDeleted?: return "The source \(v("path")) was deleted (the rule's after-action)."
        case .sourceMoved?: return "The source was moved from \(v("from")) to \(v("to"))."
        case .afterActionSkipped?: return "The rule's after-action was not run for \(v("path"))" + (d["reason"].map { ": \($0)" } ?? "") + "."
        case .stageSkipped?: return "The \(v("stage")) stage was skipped: the item was superseded by #\(v("superseded_by"))."
        case .ruleStagesComplete?: return "Every stage of rule \(v("rule")) is complete."
        case .legalHold?: return "Legal hold " + (d["legal_hold"] == "true" || d["on"] == "true" ? "set." : "changed: \(flat(d)).")
        case .accessed?: return "\(actor(e.actor)) — \(v("what"))."
        case .caseOpened?: return "Case \(v("case")) opened by \(actor(e.actor))."
        case .caseAdded?: return "Added to case \(v("case")) by \(actor(e.actor))."
        case .caseRemoved?: return "Taken out of case \(v("case")) by \(actor(e.actor)): \(v("reason"))."
        case .tagged?: return "Tagged “\(v("tag"))” by \(actor(e.actor))."
        case .untagged?: return "Tag “\(v("tag"))” removed by \(actor(e.actor))."
        case .labelled?:
            let labels = d.filter { $0.key.hasPrefix("label.") }.sorted { $0.key < $1.key }.map { "\($0.key.dropFirst(6)): \($0.value)" }
            return "Certificate labels " + (labels.isEmpty ? "none" : labels.joined(separator: ", "))
                + (d["sidecar"].map { " (sidecar \($0))" } ?? "") + (d["problem"].map { "; sidecar not used: \($0)" } ?? "") + "."
        case .poster?: return "A poster frame (\(v("width"))×\(v("height"))) was decoded from the recording."
        case .anchored?: return "The custody log was time-stamped here."
        case nil: return "\(e.kind): \(flat(d))"
        }
    }

    /// A poster event's picture size, for the page's `<img>` (0 × 0 when not recorded).
    static func sizes(_ e: CustodyEvent) -> (Int, Int) {
        let d = e.fields
        return (d["width"].flatMap(Int.init) ?? 0, d["height"].flatMap(Int.init) ?? 0)
    }

    static func flat(_ d: [String: String]) -> String {
        d.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }

    /// `portal:auditor@127.0.0.1` → "auditor (portal, from 127.0.0.1)"; `cli:alice` → "alice (command line)".
    static func actor(_ a: String) -> String {
        if a.hasPrefix("portal:") {
            let rest = a.dropFirst(7)
            let parts = rest.split(separator: "@", maxSplits: 1)
            return parts.count == 2 ? "\(parts[0]) (portal, from \(parts[1]))" : "\(rest) (portal)"
        }
        if a.hasPrefix("cli:") { return "\(a.dropFirst(4)) (command line)" }
        return a
    }
}
