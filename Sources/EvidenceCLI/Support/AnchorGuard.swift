import EvidenceConfig
import EvidencePipeline
import Foundation

/// `anchor_permissions` applied: what `doctor` reports and what `run` refuses or warns about when
/// the user it runs as could rewrite a trust anchor (see `AnchorWriteCheck`).
enum AnchorGuard {
    /// The doctor's `anchors` check: ✗ (refuse) or ! (warn) when the anchors are writable by this
    /// user; ! when running as root; ✓ otherwise.
    static func doctorCheck(config: EvidenceConfig, rulesDirectory: String?) -> DoctorCommand.Check {
        let outcome = TrustAnchors.check(config: config, rulesDirectory: rulesDirectory)
        let listed = outcome.findings.map(TrustAnchors.describe).joined(separator: "; ")
        if outcome.runsAsRoot {
            return DoctorCommand.Check(check: "anchors", status: .warn,
                                       detail: rootWarning + (listed.isEmpty ? "" : "; and other users can write: " + listed),
                                       fix: rootFix(outcome))
        }
        if outcome.findings.isEmpty {
            return DoctorCommand.Check(check: "anchors", status: .ok,
                                       detail: "\(outcome.checked) trust anchor(s) (config, CA files, rules) and their folders are not writable by uid \(outcome.identity.uid)")
        }
        return DoctorCommand.Check(check: "anchors", status: config.anchorPermissions == .refuse ? .fail : .warn,
                                   detail: refusal(outcome) + ": " + listed,
                                   fix: outcome.findings.map(\.fix).joined(separator: "; ") + whereToRelax(config))
    }

    /// For `run`, before it starts: throws a config error (exit 2) when `anchor_permissions` is
    /// `refuse` and this user can write an anchor; returns the warnings to log otherwise.
    static func startCheck(config: EvidenceConfig, rulesDirectory: String?) throws -> [String] {
        let outcome = TrustAnchors.check(config: config, rulesDirectory: rulesDirectory)
        let lines = outcome.findings.map { "  \(TrustAnchors.describe($0))\n    fix (as root): \($0.fix)" }
        if outcome.runsAsRoot {
            return [rootWarning + (lines.isEmpty ? "" : "; and other users can write:\n" + lines.joined(separator: "\n"))]
        }
        guard !outcome.findings.isEmpty else { return [] }
        let text = refusal(outcome) + ":\n" + lines.joined(separator: "\n")
        if outcome.refuses(under: config.anchorPermissions) {
            throw CLIError.config(text + "\nnot started (anchor_permissions = \"refuse\"\(config.file.map { " in \($0)" } ?? ", the default")): "
                + "make those files root's and read-only to this user" + whereToRelax(config))
        }
        return [text + "\nstarting anyway (anchor_permissions = \"warn\")"]
    }

    static let rootWarning = "evidence runs as root, which can rewrite every trust anchor (config, CA files, rules) and the custody log alike: "
        + "run it as its own user, with the config, CA files and rules root's and read-only to it (README: Running as a service)"

    static func rootFix(_ outcome: AnchorWriteCheck.Outcome) -> String {
        let fixes = outcome.findings.map(\.fix)
        return (fixes.isEmpty ? "" : fixes.joined(separator: "; ") + "; then ") + "run evidence as the evidence user (scripts/systemd/evidence.service: User=evidence)"
    }

    static func refusal(_ outcome: AnchorWriteCheck.Outcome) -> String {
        "uid \(outcome.identity.uid) (\(TrustAnchors.userName(outcome.identity.uid))), which evidence runs as, can rewrite trust anchors: "
            + "whoever holds this account could append a CA of their own or rewrite the config, and re-anchored custody logs would verify clean"
    }

    static func whereToRelax(_ config: EvidenceConfig) -> String {
        " (to only warn: anchor_permissions = \"warn\" in \(config.file ?? "evidence.toml"))"
    }
}
