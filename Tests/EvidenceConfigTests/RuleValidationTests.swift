import EvidenceConfig
import Foundation
import Testing
import EvidenceTesting

@Suite struct RuleValidationTests {
    func config(in dir: TempDir) throws -> EvidenceConfig {
        var c = try loadConfig(designExampleConfig, in: dir)
        c.home = "/var/lib/evidence"
        return c
    }

    @Test func matchingRulesPass() throws {
        let dir = TempDir()
        let rule = try loadRule(designExampleRule, in: dir)
        #expect(ConfigLoader.validate(rules: [rule], against: try config(in: dir)).isEmpty)
    }

    @Test func unknownNotaryAndArchiveAreReportedWithLines() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/srv/a\"\nnotary = [\"qed\", \"opentimestamps\"]\narchive = \"dropbox\"\n", in: dir)
        let errors = ConfigLoader.validate(rules: [rule], against: try config(in: dir))
        #expect(errors.count == 2)
        #expect(errors.first?.field == "notary[1]")
        #expect(errors.first?.line == 2)
        #expect(errors.first?.message == "unknown notary `opentimestamps`; configured notaries: qed, tsa")
        #expect(errors.last?.field == "archive")
        #expect(errors.last?.line == 3)
        #expect(errors.last?.message == "unknown archive `dropbox`; configured archives: office, vault")
    }

    @Test func notaryNamesFailAgainstEmbeddedDefaults() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/srv/a\"\nnotary = [\"qed\"]\n", in: dir)
        let errors = ConfigLoader.validate(rules: [rule], against: .embeddedDefaults)
        #expect(errors.map(\.message) == ["unknown notary `qed`; no notaries are configured in the embedded defaults"])
    }

    @Test func twoRulesOnTheSameFolderAreRejected() throws {
        let dir = TempDir()
        let a = try loadRule("path = \"/srv/drop\"\n", named: "a", in: dir)
        let b = try loadRule("settle = \"1s\"\npath = \"/srv/drop/\"\n", named: "b", in: dir)
        let errors = ConfigLoader.validate(rules: [a, b], against: .embeddedDefaults)
        #expect(errors.count == 1)
        #expect(errors.first?.file == b.file)
        #expect(errors.first?.field == "path")
        #expect(errors.first?.line == 2)
    }

    @Test func ruleInsideHomeIsRejected() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/var/lib/evidence/tmp\"\n", in: dir)
        let errors = ConfigLoader.validate(rules: [rule], against: try config(in: dir))
        #expect(errors.map(\.field) == ["path"])
        #expect(errors.first?.message.contains("inside the evidence home /var/lib/evidence") == true)
    }

    /// A local archive's link is the file's file:// URL (recorded with a note), so it is allowed;
    /// a share on an unknown account is still refused, at `archive`.
    @Test func shareOnALocalArchiveIsAllowedUnknownAccountIsNot() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/srv/a\"\narchive = \"vault\"\n[share]\naccess = \"open\"\n", in: dir)
        #expect(ConfigLoader.validate(rules: [rule], against: try config(in: dir)).isEmpty)
        let other = try loadRule("path = \"/srv/b\"\narchive = \"nowhere\"\n[share]\naccess = \"open\"\n", in: dir)
        #expect(ConfigLoader.validate(rules: [other], against: try config(in: dir)).map(\.field) == ["archive"])
    }
}
