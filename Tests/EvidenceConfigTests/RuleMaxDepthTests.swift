import EvidenceConfig
import Foundation
import Testing
import EvidenceTesting

/// `max_depth`: how deep below its folder a rule descends (issue 28 point 6).
@Suite struct RuleMaxDepthTests {
    @Test func maxDepthDefaultsTo64() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/srv/drop\"\n", in: dir)
        #expect(rule.maxDepth == 64)
    }

    @Test func maxDepthIsRead() throws {
        let dir = TempDir()
        let rule = try loadRule("path = \"/srv/drop\"\nmax_depth = 3\n", in: dir)
        #expect(rule.maxDepth == 3)
    }

    @Test("max_depth out of range names file, line and field", arguments: [0, -1, 2049])
    func maxDepthOutOfRange(depth: Int) throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\n\nmax_depth = \(depth)\n", in: dir) }
        #expect(error == ConfigError(
            file: dir.path + "/watch-rules/bodycam.toml", line: 3, field: "max_depth",
            message: "must be between 1 and 2048, found \(depth)"))
    }

    @Test func maxDepthMustBeAnInteger() throws {
        let dir = TempDir()
        let error = configError { try loadRule("path = \"/srv/drop\"\nmax_depth = \"deep\"\n", in: dir) }
        #expect(error?.field == "max_depth")
        #expect(error?.line == 2)
        #expect(error?.message == "expected an integer, found string")
    }
}
