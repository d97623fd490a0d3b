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
}
