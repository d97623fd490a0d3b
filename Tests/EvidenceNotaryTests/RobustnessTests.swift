import EvidenceCore
import EvidenceNotary
import EvidenceSandbox
import Foundation
import Testing
import EvidenceTesting

@Suite("RFC 3161 robustness")
struct RobustnessTests {
    @Test("garbage bytes are errors, never crashes")
    func garbage() throws {
        let request = try TimestampRequest.make(digest: .known)
        var rng = SystemRandomNumberGenerator()
        var inputs: [Data] = [Data(), Data([0x30]), Data([0x30, 0x80]), Data([0x30, 0x82, 0xff, 0xff]),
                              Data([0x30, 0x03, 0x02, 0x01, 0x00]), Data(repeating: 0, count: 4096),
                              Data("HTTP/1.1 500 Internal Server Error\r\n\r\n".utf8)]
        for _ in 0..<500 {
            let n = Int.random(in: 1...512, using: &rng)
            var bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng) { bytes[0] = 0x30 }  // look like a SEQUENCE to get deeper into the parser
            inputs.append(Data(bytes))
        }
        for input in inputs {
            let error = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: input, for: request, caFile: nil)
            }
            #expect(error?.kind == .malformedResponse || error?.kind == .refused)
        }
        let empty = #expect(throws: TimestampError.self) {
            try TimestampVerifier.verify(response: Data(), digest: .known, caFile: nil)
        }
        #expect(empty?.message.hasPrefix("not a TimeStampResp (DER parse error)") == true)
    }

    @Test("every truncation of a real reply, and trailing bytes, are rejected")
    func truncated() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            _ = try TimestampVerifier.verify(response: reply, for: request, caFile: tsa.caCertificatePath)

            for length in 0..<reply.count {
                let cut = reply.prefix(length)
                let error = #expect(throws: TimestampError.self) {
                    try TimestampVerifier.verify(response: Data(cut), for: request, caFile: tsa.caCertificatePath)
                }
                #expect(error?.kind == .malformedResponse)
            }
            let trailing = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply + Data([0]), for: request, caFile: nil)
            }
            #expect(trailing?.kind == .malformedResponse)
        }
    }

    @Test("bit-flipped replies never crash; no flip inside the signed TSTInfo verifies")
    func bitFlips() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            let bytes = [UInt8](reply)

            // Anywhere in the reply: errors or (for bytes nobody signs, such as the copy of the CA
            // certificate in the SignedData bag or the unsigned PKIStatus) acceptance, never a crash.
            var rng = SystemRandomNumberGenerator()
            var accepted = 0
            for _ in 0..<300 {
                var mutated = bytes
                let index = Int.random(in: 0..<mutated.count, using: &rng)
                mutated[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
                if (try? TimestampVerifier.verify(response: Data(mutated), for: request,
                                                  caFile: tsa.caCertificatePath)) != nil {
                    accepted += 1
                }
            }
            #expect(accepted < 150, "\(accepted) of 300 mutated replies verified")

            // Inside the encapsulated TSTInfo every single-bit change must be caught.
            let region = try #require(tstInfoRange(in: bytes), "no TSTInfo eContent found")
            #expect(region.count > 100)
            var caught = 0
            for index in region {
                for bit in 0..<8 {
                    var mutated = bytes
                    mutated[index] ^= UInt8(1) << UInt8(bit)
                    do {
                        _ = try TimestampVerifier.verify(response: Data(mutated), for: request, caFile: tsa.caCertificatePath)
                        Issue.record("flip of bit \(bit) at byte \(index) inside TSTInfo verified")
                    } catch {
                        caught += 1
                    }
                }
            }
            #expect(caught == region.count * 8)

            // The imprint itself is signed: a reply whose hash was edited to another digest
            // passes the parse-only check for that digest, but not the signature check.
            let hash = try #require(Hex.decode(SHA256Digest.known.hex))
            let position = try #require(findSubsequence(hash, in: bytes))
            var tampered = bytes
            tampered[position + 5] ^= 0x01
            var tamperedHash = hash
            tamperedHash[5] ^= 0x01
            let forged = SHA256Digest(bytes: tamperedHash)
            #expect(try TimestampVerifier.verify(response: Data(tampered), digest: forged, caFile: nil).digest == forged)
            let error = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: Data(tampered), digest: forged, caFile: tsa.caCertificatePath)
            }
            #expect(error?.kind == .verificationFailed)
        }
    }

    /// Byte range of the TSTInfo DER inside the reply: the OCTET STRING after the
    /// id-smime-ct-TSTInfo content type and its [0] wrapper.
    private func tstInfoRange(in bytes: [UInt8]) -> Range<Int>? {
        let oid: [UInt8] = [0x06, 0x0B, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x10, 0x01, 0x04]
        guard var i = findSubsequence(oid, in: bytes).map({ $0 + oid.count }) else { return nil }
        func header(expecting tag: UInt8) -> Int? {  // returns content length, advances i past the header
            guard i + 2 <= bytes.count, bytes[i] == tag else { return nil }
            let first = Int(bytes[i + 1])
            i += 2
            if first < 0x80 { return first }
            let n = first & 0x7f
            guard n > 0, n <= 3, i + n <= bytes.count else { return nil }
            var length = 0
            for _ in 0..<n { length = length << 8 | Int(bytes[i]); i += 1 }
            return length
        }
        guard header(expecting: 0xA0) != nil, let length = header(expecting: 0x04), i + length <= bytes.count else { return nil }
        return i..<(i + length)
    }

    private func findSubsequence(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) {
            return i
        }
        return nil
    }
}
