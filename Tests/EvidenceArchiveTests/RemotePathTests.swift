import EvidenceArchive
import Testing

@Suite("RemotePath.sanitize")
struct RemotePathTests {
    @Test("bidi overrides, isolates and C1 controls become _: a name cannot display as another one")
    func bidiAndC1() {
        #expect(RemotePath.sanitize("invoice\u{202E}fdp.exe") == "invoice_fdp.exe")
        #expect(RemotePath.sanitize("a\u{2066}b\u{2069}\u{200F}c.txt") == "a_b__c.txt")
        #expect(RemotePath.sanitize("c1\u{85}\u{9B}.bin") == "c1__.bin")
        #expect(RemotePath.sanitize("new\nline\t\u{7}.bin") == "new_line__.bin")
    }

    @Test("what is legitimate in names stays: accents, CJK, emoji with joiners")
    func legitimateUnicode() {
        for name in ["résumé 日本.mp4", "👩‍💻 family.jpg", "ελληνικά.txt"] {
            #expect(RemotePath.sanitize(name) == name)
        }
    }
}
