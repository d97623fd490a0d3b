import EvidenceCore
import Foundation
import Testing

/// The fast reader of custody details agrees with JSONDecoder wherever it answers, and leaves to
/// it (nil) everything else.
@Suite struct FlatStringJSONTests {
    @Test("agrees with JSONDecoder on every object of strings it reads, and declines the rest")
    func agreesWithJSONDecoder() throws {
        let read = [
            #"{}"#, #" { } "#, #"{"a":"b"}"#, #"{"sha256":"ab12","name":"clip.mp4","size":"100"}"#,
            #"{"q":"say \"hi\"","b":"back\\slash","s":"a\/b","c":"\b\f\n\r\t"}"#,
            #"{"u":"caf\u00e9 \u4e2d","raw":"café 中 😀"}"#, #"{ "spaced" : "out" , "x" : "" }"#,
        ]
        for text in read {
            let fast = try #require(FlatStringJSON.parse(text), "\(text)")
            let slow = try JSONDecoder().decode([String: String].self, from: Data(text.utf8))
            #expect(fast == slow, "\(text)")
        }
        let declined = [
            #"{"a":1}"#, #"{"a":null}"#, #"{"a":"b",}"#, #"{"a":"b""#, #"["a"]"#, #"{"a":"b"} x"#, #"{"a":"b","a":"c"}"#,
            #"{"s":"\ud83d\ude00"}"#, #"{"s":"\ud800"}"#, #"{"s":"\x"}"#, "{\"s\":\"tab\there\"}", #"{a:"b"}"#, "",
        ]
        for text in declined { #expect(FlatStringJSON.parse(text) == nil, "\(text)") }
    }

    @Test("writes exactly JSONEncoder's bytes (sorted keys, no escaped slashes) for any object of strings; reads back by both readers")
    func writesJSONEncodersBytes() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every byte value below 0x80, then keys that sort differently by code point, case and
        // number, and text JSON must escape or may leave raw.
        var controls = ""
        for v in 0..<0x80 { controls.unicodeScalars.append(Unicode.Scalar(UInt8(v))) }
        var objects: [[String: String]] = [
            [:], ["": ""], ["k": controls],
            ["a_b": "1", "ab": "2", "a1": "3", "a10": "4", "a9": "5", "aB": "6", "A": "7", "_x": "8", "sha256": "9", "sha1": "10"],
            ["path": "/drop/a \"b\" \\c/d.mp4", "é": "e\u{301}", "e\u{301}x": "é", "証拠": "😀 \u{2028}\u{202E}\u{FEFF}"],
            ["e": "1", "e\u{301}x": "2", "f": "3", "é": "4", "\u{FEFF}": "5", "😀": "6", "\u{E000}": "7"],
        ]
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("aZ_09 /\"\\\u{0}\u{1B}\u{7F}\n\t\u{85}\u{9B}é\u{301}中😀\u{2028}\u{202E}\u{2066}\u{E000}\u{FEFF}".unicodeScalars)
        func random(_ n: Int) -> String {
            var s = ""
            for _ in 0..<Int.random(in: 0...n, using: &rng) { s.unicodeScalars.append(alphabet.randomElement(using: &rng)!) }
            return s
        }
        for _ in 0..<300 {
            var o: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...6, using: &rng) { o[random(6)] = random(20) }
            objects.append(o)
        }
        for object in objects {
            let written = FlatStringJSON.write(object)
            #expect(written == Array(try encoder.encode(object)), "\(object)")
            #expect(Array(try CanonicalJSON.encode(object)) == written)
            #expect(FlatStringJSON.parse(String(decoding: written, as: UTF8.self)) == object)
            // The log line's form also escapes DEL, C1, bidi marks and separators, and stays
            // valid JSON of the same object.
            let logged = FlatStringJSON.write(object, forTerminal: true)
            #expect(!String(decoding: logged, as: UTF8.self).unicodeScalars.contains {
                (0x7F...0x9F).contains($0.value) || [0x200E, 0x200F, 0x2028, 0x2029, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
                                                      0x2066, 0x2067, 0x2068, 0x2069].contains($0.value) })
            #expect(try JSONDecoder().decode([String: String].self, from: Data(logged)) == object)
        }
    }
}
