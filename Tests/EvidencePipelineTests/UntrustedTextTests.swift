import EvidenceCore
import EvidencePipeline
import Foundation
import Logging
import Testing

@Suite("Untrusted text: repeated JSON keys and control characters")
struct UntrustedTextTests {
    @Test("a JSON object with a key twice is refused, however the second is spelt (escaped, nested, NFD)")
    func duplicateKeys() {
        let refused = [
            #"{"a":1,"a":2}"#,
            #"{"item":{"sha256":"x","name":"y","sha256":"z"}}"#,
            #"{"a":1,"\u0061":2}"#,
            "{\"caf\u{E9}\":1,\"cafe\u{301}\":2}",
            #"[{"ok":1},{"k":1,"k":1}]"#,
        ]
        for text in refused {
            #expect(throws: StrictJSON.Problem.self, "\(text)") { try StrictJSON.check(Array(text.utf8)) }
        }
        do {
            try StrictJSON.check(Array(#"{"item":{"sha256":"x","sha256":"z"}}"#.utf8))
            Issue.record("accepted a repeated key")
        } catch {
            #expect(error == .duplicateKey(key: "sha256", path: "$.item"), "\(error)")
        }
    }

    @Test("valid JSON with distinct keys passes; malformed JSON, trailing text and unpaired surrogates do not")
    func wellFormed() throws {
        try StrictJSON.check(Array(#"  {"a":[1,-2.5e3,true,false,null,"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"],"b":{}}  "#.utf8))
        for bad in [#"{"a":1,}"#, #"{"a":1} x"#, #"{"a":"\ud800"}"#, "{\"a\":\"\u{1}\"}", #"{"a":01x}"#, "[", ""] {
            #expect(throws: StrictJSON.Problem.self, "\(bad)") { try StrictJSON.check(Array(bad.utf8)) }
        }
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: StrictJSON.Problem.self) { try StrictJSON.check(Array(deep.utf8)) }
    }

    @Test("control characters, DEL, C1 and bidi marks are shown escaped; ordinary text and non-Latin names are untouched")
    func terminalEscape() {
        #expect(TerminalText.escape("clip\u{1B}[2J\nFAKE\r\t.mp4") == "clip\\x1B[2J\\x0AFAKE\\x0D\\x09.mp4")
        #expect(TerminalText.escape("evil\u{202E}gpj.exe\u{7F}\u{9B}") == "evil\\u{202E}gpj.exe\\x7F\\x9B")
        #expect(TerminalText.escape("Zeugenaussage café 証拠.mov") == "Zeugenaussage café 証拠.mov")
        #expect(TerminalText.escapeKeepingLines("line one\n\tname \u{1B}]0;title\u{7}") == "line one\n\tname \\x1B]0;title\\x07")
    }

    @Test("a JSON log line is one line of valid JSON whatever the strings hold, and reads back exactly")
    func jsonLogLine() throws {
        let hostile = "a\"b\\c/d\n{\"forged\":1}\r\t\u{0}\u{1B}[2J\u{7F}\u{9B}\u{202E}café 証拠 😀"
        let object = ["ts": "T", "msg": hostile, "path": "/drop/\(hostile)", "level": "info", "z\nkey": "v"]
        let line = StderrLogHandler.jsonLine(object)
        #expect(line.last == "\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(!line.unicodeScalars.dropLast().contains {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || [0x200E, 0x200F, 0x2028, 0x2029].contains($0.value)
                || (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value) })
        try StrictJSON.check(Array(line.utf8))
        let back = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
        #expect(back == object)
        #expect(StderrLogHandler.jsonLine(["b": "2", "a": "1", "ts": "0"]) == #"{"a":"1","b":"2","ts":"0"}"# + "\n")
        #expect(StderrLogHandler.jsonLine([:]) == "{}\n")
    }

    @Test("a text log line escapes the message and metadata: a name with a newline cannot forge a line")
    func logLine() {
        let line = StderrLogHandler.textLine(ts: "T", level: .info, message: "stored clip\nT INFO forged",
                                             metadata: ["path": "/drop/a\u{1B}[2Jb"])
        #expect(line == "T INFO stored clip\\x0AT INFO forged path=/drop/a\\x1B[2Jb\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
    }
}
