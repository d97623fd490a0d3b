import EvidenceConfig
import Foundation
import Testing

@Suite struct TemplateTests {
    let values = TemplateValues(
        rule: "bodycam", name: "clip.tar.mp4", dir: "unit7",
        sha256: "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789", size: 1234,
        date: Date(timeIntervalSince1970: 1_700_000_000))  // 2023-11-14 22:13:20 UTC

    @Test func wellFormedTemplatesValidate() {
        #expect(Template.validate("evidence/{rule}/{yyyy}/{mm}/{dd}/{sha8}-{name}") == nil)
        #expect(Template.validate("") == nil)
        #expect(Template.validate("{{literal}}") == nil)
    }

    @Test func unknownPlaceholderIsNamed() {
        #expect(Template.validate("a/{month}/b")?.hasPrefix("unknown placeholder {month}") == true)
    }

    @Test func unbalancedBracesAreRejected() {
        #expect(Template.validate("a/{name")?.hasPrefix("unclosed `{`") == true)
        #expect(Template.validate("a/name}")?.hasPrefix("unmatched `}`") == true)
        #expect(Template.validate("a/{}")?.hasPrefix("empty placeholder") == true)
    }

    @Test func everyPlaceholderExpands() {
        let t = "{rule}|{name}|{stem}|{ext}|{dir}|{sha8}|{sha256}|{yyyy}|{mm}|{dd}|{hh}|{size}"
        #expect(Template.expand(t, values) == "bodycam|clip.tar.mp4|clip.tar|mp4|unit7|abcdef01|"
            + "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789|2023|11|14|22|1234")
    }

    @Test func dateFieldsFollowTheTimeZone() {
        var v = values
        v.timeZone = TimeZone(secondsFromGMT: 3 * 3600)!
        #expect(Template.expand("{yyyy}-{mm}-{dd} {hh}", v) == "2023-11-15 01")
    }

    @Test func doubledBracesAreLiteral() {
        #expect(Template.expand("{{{name}}}", values) == "{clip.tar.mp4}")
    }

    @Test func stemAndExtOfUnusualNames() {
        var v = values
        v.name = ".profile"
        #expect(v.stem == ".profile" && v.ext == "")
        v.name = "README"
        #expect(v.stem == "README" && v.ext == "")
    }

    @Test func defaultRemotePathExpands() {
        #expect(Template.expand(WatchRule.defaultRemotePath, values) == "evidence/bodycam/2023/11/14/abcdef01-clip.tar.mp4")
    }
}
