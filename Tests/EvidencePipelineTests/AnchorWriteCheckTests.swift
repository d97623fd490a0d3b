import EvidenceConfig
@testable import EvidencePipeline
import Testing

/// Who can rewrite a trust anchor, decided from injected identities and stat results: the
/// service user of issue 28 (uid 998, group 998) owning /etc/evidence is exactly what must fail.
@Suite("Trust anchors the service cannot rewrite")
struct AnchorWriteCheckTests {
    typealias O = AnchorWriteCheck.Ownership
    static let service = AnchorWriteCheck.Identity(uid: 998, groups: [998])
    static let root = AnchorWriteCheck.Identity(uid: 0, groups: [0])

    /// A root-owned system: / and /etc 0755, /etc/evidence 0755, files 0644; `overrides` replace entries.
    func files(_ overrides: [String: O] = [:]) -> (String) -> O? {
        var table: [String: O] = [
            "/": O(uid: 0, gid: 0, mode: 0o755, isDirectory: true),
            "/etc": O(uid: 0, gid: 0, mode: 0o755, isDirectory: true),
            "/etc/evidence": O(uid: 0, gid: 0, mode: 0o755, isDirectory: true),
            "/etc/evidence/evidence.toml": O(uid: 0, gid: 0, mode: 0o644, isDirectory: false),
            "/etc/evidence/tsa-ca.pem": O(uid: 0, gid: 998, mode: 0o640, isDirectory: false),
            "/etc/evidence/watch-rules": O(uid: 0, gid: 0, mode: 0o755, isDirectory: true),
            "/etc/evidence/watch-rules/cam.toml": O(uid: 0, gid: 0, mode: 0o644, isDirectory: false),
            "/tmp": O(uid: 0, gid: 0, mode: 0o1777, isDirectory: true),
        ]
        table.merge(overrides) { $1 }
        return { table[$0] }
    }

    let anchors = [
        AnchorWriteCheck.Anchor(path: "/etc/evidence/evidence.toml", what: "config file"),
        AnchorWriteCheck.Anchor(path: "/etc/evidence/tsa-ca.pem", what: "notaries.tsa.ca_file"),
        AnchorWriteCheck.Anchor(path: "/etc/evidence/watch-rules", what: "rules folder"),
        AnchorWriteCheck.Anchor(path: "/etc/evidence/watch-rules/cam.toml", what: "rule file"),
    ]

    @Test("root-owned anchors, read-only to the service (0644, or 0640 root:evidence): nothing to refuse")
    func rootOwnedIsFine() {
        let outcome = AnchorWriteCheck.check(anchors, as: Self.service, stat: files())
        #expect(outcome.findings.isEmpty, "\(outcome.findings)")
        #expect(outcome.checked == 4)
        #expect(!outcome.refuses(under: .refuse))
    }

    @Test("the README's old install: /etc/evidence and the files owned by the service user are refused, each named")
    func serviceOwnedIsRefused() throws {
        let outcome = AnchorWriteCheck.check(anchors, as: Self.service, stat: files([
            "/etc/evidence": O(uid: 998, gid: 998, mode: 0o750, isDirectory: true),
            "/etc/evidence/tsa-ca.pem": O(uid: 998, gid: 998, mode: 0o444, isDirectory: false),
        ]))
        try #require(outcome.findings.map(\.path) == ["/etc/evidence", "/etc/evidence/tsa-ca.pem"])
        #expect(outcome.findings[0].anchor == "folder holding config file")
        #expect(outcome.findings[1].anchor == "notaries.tsa.ca_file")
        #expect(outcome.findings[1].why.contains("owned by uid 998"), "a 0444 file its owner can still chmod")
        #expect(outcome.findings[1].fix == "chown root:root /etc/evidence/tsa-ca.pem && chmod 0644 /etc/evidence/tsa-ca.pem")
        #expect(outcome.findings[0].fix.hasSuffix("chmod 0755 /etc/evidence"))
        #expect(outcome.refuses(under: .refuse))
        #expect(!outcome.refuses(under: .warn))
    }

    @Test("group write counts only for the service's groups; world write always; the sticky bit protects entries it does not own")
    func groupWorldAndSticky() {
        let groupWritable = files(["/etc/evidence/watch-rules": O(uid: 0, gid: 998, mode: 0o775, isDirectory: true)])
        #expect(AnchorWriteCheck.check(anchors, as: Self.service, stat: groupWritable).findings.map(\.path) == ["/etc/evidence/watch-rules"])
        let other = AnchorWriteCheck.Identity(uid: 997, groups: [997])
        #expect(AnchorWriteCheck.check(anchors, as: other, stat: groupWritable).findings.isEmpty)

        let worldWritable = files(["/etc/evidence/evidence.toml": O(uid: 0, gid: 0, mode: 0o666, isDirectory: false)])
        #expect(AnchorWriteCheck.check(anchors, as: other, stat: worldWritable).findings.first?.why == "writable by every user")

        // A config in /tmp (1777): safe when root owns it, not when the service does.
        let inTmp = [AnchorWriteCheck.Anchor(path: "/tmp/evidence.toml", what: "config file")]
        let rootsFile = files(["/tmp/evidence.toml": O(uid: 0, gid: 0, mode: 0o644, isDirectory: false)])
        #expect(AnchorWriteCheck.check(inTmp, as: Self.service, stat: rootsFile).findings.isEmpty)
        let servicesFile = files(["/tmp/evidence.toml": O(uid: 998, gid: 998, mode: 0o600, isDirectory: false)])
        #expect(AnchorWriteCheck.check(inTmp, as: Self.service, stat: servicesFile).findings.map(\.path) == ["/tmp/evidence.toml"])
    }

    @Test("a link is followed: the folders above its target are checked too")
    func linksAreFollowed() {
        let linked = [AnchorWriteCheck.Anchor(path: "/etc/evidence/tsa-ca.pem", resolved: "/var/lib/evidence/ca/tsa-ca.pem", what: "notaries.tsa.ca_file")]
        let outcome = AnchorWriteCheck.check(linked, as: Self.service, stat: files([
            "/var": O(uid: 0, gid: 0, mode: 0o755, isDirectory: true),
            "/var/lib": O(uid: 0, gid: 0, mode: 0o755, isDirectory: true),
            "/var/lib/evidence": O(uid: 998, gid: 998, mode: 0o700, isDirectory: true),
            "/var/lib/evidence/ca": O(uid: 0, gid: 0, mode: 0o755, isDirectory: true),
            "/var/lib/evidence/ca/tsa-ca.pem": O(uid: 0, gid: 0, mode: 0o644, isDirectory: false),
        ]))
        #expect(outcome.findings.map(\.path) == ["/var/lib/evidence"])
    }

    @Test("as root: never a refusal, but files other users could write are still named")
    func rootWarnsOnly() {
        let clean = AnchorWriteCheck.check(anchors, as: Self.root, stat: files())
        #expect(clean.runsAsRoot && clean.findings.isEmpty && !clean.refuses(under: .refuse))
        let userOwned = AnchorWriteCheck.check(anchors, as: Self.root, stat: files([
            "/etc/evidence": O(uid: 998, gid: 998, mode: 0o755, isDirectory: true),
            "/etc/evidence/watch-rules": O(uid: 0, gid: 0, mode: 0o775, isDirectory: true),   // group root: root's
        ]))
        #expect(userOwned.findings.map(\.path) == ["/etc/evidence"])
        #expect(!userOwned.refuses(under: .refuse))
    }

    @Test("a missing anchor is skipped (loading reports it), not counted")
    func missingSkipped() {
        let outcome = AnchorWriteCheck.check([AnchorWriteCheck.Anchor(path: "/etc/evidence/gone.pem", what: "notaries.x.ca_file")],
                                             as: Self.service, stat: files())
        #expect(outcome.checked == 0 && outcome.findings.isEmpty)
        #expect(AnchorWriteCheck.ancestors(of: "/a/b/c") == ["/a/b", "/a", "/"])
    }
}
