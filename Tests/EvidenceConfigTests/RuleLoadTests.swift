import EvidenceConfig
import Foundation
import Testing
import EvidenceTesting

/// The watch-rule example of DESIGN.md, verbatim.
let designExampleRule = """
# watch-rules/bodycam.toml — one rule a file; the rule's name is the file's stem
path = "/srv/drop/bodycam"
include = ["*.mp4", "*.mov", "*.wav", "*.jpg"]
exclude = ["*.part"]
recursive = true
settle = "2s"
notary = ["qed", "tsa"]               # all must confirm
archive = "office"                    # optional: no archive = stop after certificates
remote_path = "evidence/{rule}/{yyyy}/{mm}/{dd}/{sha8}-{name}"
after = "keep"                        # keep | "move:/srv/done" | delete
name = "{name}"
note = "Body-cam upload from {dir}"

[share]
access = "open"                       # open | company | collaborators (provider-mapped)
expires_in = "30d"
password_env = "EVIDENCE_SHARE_PASSWORD"

[meta_data]
unit = "K-9"
"""

@Suite struct RuleLoadTests {
    @Test func minimalRuleGetsDefaults() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/srv/drop\"\n", named: "scanner", in: dir)
        #expect(rule == WatchRule(name: "scanner", file: dir.path + "/watch-rules/scanner.toml", path: "/srv/drop"))
        #expect(rule.include == ["*"] && rule.exclude.isEmpty)
        #expect(rule.recursive && rule.settle == 2 && rule.pollInterval == nil)
        #expect(rule.notary.isEmpty && rule.archive == nil && rule.share == nil)
        #expect(rule.after == .keep)
        #expect(rule.remotePath == "evidence/{rule}/{yyyy}/{mm}/{dd}/{sha8}-{name}")
        #expect(rule.nameTemplate == "{name}" && rule.noteTemplate == "" && rule.metaData.isEmpty)
    }

    @Test func designExampleRuleParsesToExpectedValues() throws {
        let dir = TempDir()
        let rule = try loadRule(designExampleRule, in: dir)
        #expect(rule == WatchRule(
            name: "bodycam", file: dir.path + "/watch-rules/bodycam.toml", path: "/srv/drop/bodycam",
            include: ["*.mp4", "*.mov", "*.wav", "*.jpg"], exclude: ["*.part"], recursive: true, settle: 2,
            notary: ["qed", "tsa"], archive: "office",
            remotePath: "evidence/{rule}/{yyyy}/{mm}/{dd}/{sha8}-{name}",
            share: ShareSettings(access: .open, expiresIn: 30 * 86400, passwordEnv: "EVIDENCE_SHARE_PASSWORD"),
            after: .keep, nameTemplate: "{name}", noteTemplate: "Body-cam upload from {dir}",
            metaData: ["unit": "K-9"]))
        #expect(rule.share?.password == .env("EVIDENCE_SHARE_PASSWORD"))
    }

    @Test func badSettleDurationNamesFileLineAndField() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\n\n\nsettle = \"2x\"\n", in: dir) }
        #expect(error?.line == 4)
        #expect(error?.field == "settle")
        #expect(error?.description.hasPrefix(
            "\(dir.path)/watch-rules/bodycam.toml:4: field `settle`: invalid duration \"2x\"") == true)
    }

    @Test func wrongTypeOfBooleanIsNamed() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\nrecursive = \"yes\"\n", in: dir) }
        #expect(error == ConfigError(
            file: dir.path + "/watch-rules/bodycam.toml", line: 2, field: "recursive",
            message: "expected a boolean (true or false), found string"))
    }

    @Test func wrongArrayElementTypeNamesTheElement() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\ninclude = [\n  \"*.mp4\",\n  4,\n]\n", in: dir) }
        #expect(error?.field == "include[1]")
        #expect(error?.line == 2)
        #expect(error?.message == "expected a string, found integer")
    }

    @Test func lineSearchSkipsMultiLineStringsAndArrays() throws {
        let dir = TempDir()
        let error = configError { try loadRule("""
            path = "/a"
            note = \"\"\"
            settle = "in a string"
            \"\"\"
            exclude = [
              "settle = 1",
            ]
            settle = "later"
            """, in: dir) }
        #expect(error?.field == "settle")
        #expect(error?.line == 8)
    }

    @Test func missingPathIsRequired() throws {
        let dir = TempDir()
        let error = configError { try loadRule("settle = \"1s\"\n", in: dir) }
        #expect(error?.field == "path")
        #expect(error?.line == nil)
        #expect(error?.message.hasPrefix("missing required field") == true)
    }

    @Test func unknownFieldSuggestsTheClosest() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\nsetle = \"2s\"\n", in: dir) }
        #expect(error?.line == 2)
        #expect(error?.field == "setle")
        #expect(error?.message.hasPrefix("unknown field `setle` (did you mean `settle`?)") == true)
    }

    @Test func fieldInsideShareSectionIsLocated() throws {
        let dir = TempDir()
        let error = configError { try loadRule("""
            path = "/srv/drop"
            archive = "office"
            [share]
            expires_in = "1d"
            access = "everyone"
            """, in: dir) }
        #expect(error?.line == 5)
        #expect(error?.field == "share.access")
        #expect(error?.message == "invalid value \"everyone\"; expected one of: open | company | collaborators")
    }

    @Test func inlineSharePasswordIsRejectedWithoutEchoingIt() throws {
        let dir = TempDir()
        let error = configError { try loadRule("""
            path = "/srv/drop"
            archive = "office"
            [share]
            access = "open"
            password = "open-sesame"
            """, in: dir) }
        #expect(error?.line == 5)
        #expect(error?.field == "share.password")
        #expect(error?.message.contains("`password_env`") == true)
        #expect(error?.description.contains("open-sesame") == false)
    }

    @Test func secretKeyNotTakenByTheTableIsAnUnknownField() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\ntoken = \"tok-123\"\n", in: dir) }
        #expect(error?.line == 2)
        #expect(error?.field == "token")
        #expect(error?.message.hasPrefix("unknown field `token` (secrets are never written in config files") == true)
        #expect(error?.description.contains("tok-123") == false)
    }

    @Test func shareNeedsAnArchive() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\n[share]\naccess = \"open\"\n", in: dir) }
        #expect(error?.field == "share")
        #expect(error?.line == 2)
    }

    @Test func relativePathsResolveAgainstTheRuleFile() throws {
        let dir = TempDir()
        let rule = try loadRule("""
            path = "../drop/cam"
            after = "move:../done"
            archive = "office"
            [share]
            access = "company"
            password_file = "secrets/share.pass"
            """, in: dir)
        #expect(rule.path == dir.path + "/drop/cam")
        #expect(rule.after == .move(dir.path + "/done"))
        #expect(rule.share?.passwordFile == dir.path + "/watch-rules/secrets/share.pass")
    }

    @Test func afterAcceptsKeepDeleteAndMove() throws {
        let dir = TempDir()
        #expect(try loadRule("path = \"/a\"\nafter = \"delete\"\n", in: dir).after == .delete)
        #expect(try loadRule("path = \"/a\"\nafter = \"keep\"\n", in: dir).after == .keep)
        #expect(try loadRule("path = \"/a\"\nafter = \"move:/srv/done\"\n", in: dir).after == .move("/srv/done"))
    }

    @Test func badAfterValueIsRejected() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/a\"\nafter = \"archive\"\n", in: dir) }
        #expect(error?.line == 2)
        #expect(error?.field == "after")
        #expect(error?.message == "invalid value \"archive\"; expected keep | delete | move:DIR")
    }

    @Test func moveIntoTheWatchedFolderIsRejected() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\nafter = \"move:/srv/drop/done\"\n", in: dir) }
        #expect(error?.field == "after")
        #expect(error?.message.contains("inside the watched folder /srv/drop") == true)
    }

    @Test func unknownPlaceholderIsRejectedAtLoad() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/a\"\nremote_path = \"ev/{rule}/{month}/{name}\"\n", in: dir) }
        #expect(error?.line == 2)
        #expect(error?.field == "remote_path")
        #expect(error?.message.hasPrefix("unknown placeholder {month}") == true)
    }

    @Test func metaDataValuesBecomeStrings() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/a\"\n[meta_data]\nunit = \"K-9\"\nbadge = 4711\nsealed = true\n", in: dir)
        #expect(rule.metaData == ["unit": "K-9", "badge": "4711", "sealed": "true"])
    }

    @Test func metaDataRejectsNestedValues() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/a\"\n[meta_data]\ntags = [\"a\"]\n", in: dir) }
        #expect(error?.field == "meta_data.tags")
        #expect(error?.line == 3)
        #expect(error?.message == "expected a string, number or boolean, found array")
    }

    @Test func duplicateNotaryIsRejected() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/a\"\nnotary = [\"qed\", \"qed\"]\n", in: dir) }
        #expect(error?.field == "notary[1]")
    }

    @Test func loadRulesCollectsEveryErrorAndKeepsTheGoodRules() throws {
        let dir = TempDir()
        dir.write("rules/b-bad.toml", "path = \"/b\"\nsettle = \"soon\"\n")
        dir.write("rules/a-good.toml", "path = \"/a\"\n")
        dir.write("rules/c-bad.toml", "path = 3\n")
        dir.write("rules/d-good.toml", "path = \"/d\"\n")
        dir.write("rules/README.md", "not a rule")
        let (rules, errors) = ConfigLoader.loadRules(directory: dir.path + "/rules")
        #expect(rules.map(\.name) == ["a-good", "d-good"])
        #expect(errors.map(\.file) == [dir.path + "/rules/b-bad.toml", dir.path + "/rules/c-bad.toml"])
        #expect(errors.map(\.field) == ["settle", "path"])
    }

    @Test func loadRulesReportsAMissingFolder() throws {
        let dir = TempDir()
        let (rules, errors) = ConfigLoader.loadRules(directory: dir.path + "/nope")
        #expect(rules.isEmpty)
        #expect(errors.count == 1)
        #expect(errors.first?.file == dir.path + "/nope")
    }
}

@Suite struct RuleDigestsTests {
    @Test("digests: SHA-256 implied, the others kept in NSRL's order; an unknown or repeated name names the file and the field")
    func digests() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/srv/drop\"\ndigests = [\"sha256\", \"sha1\", \"md5\"]\n", in: dir)
        #expect(rule.digests == [.sha1, .md5])
        #expect(try loadRule("path = \"/srv/drop\"\n", in: dir).digests.isEmpty)
        for (text, words) in [("digests = [\"crc32\"]", ["digests", "\"crc32\" is not a digest", "\"md5\""]),
                              ("digests = [\"md5\", \"md5\"]", ["digests", "lists `md5` twice"])] {
            var caught: ConfigError?
            do { _ = try loadRule("path = \"/srv/drop\"\n" + text + "\n", in: dir) } catch { caught = error }
            let message = caught?.description ?? ""
            #expect(message.contains("bodycam.toml") && words.allSatisfy(message.contains), "\(message)")
        }
    }
}
