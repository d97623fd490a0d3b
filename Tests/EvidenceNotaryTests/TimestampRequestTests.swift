import EvidenceCore
import EvidenceNotary
import EvidenceSandbox
import Foundation
import Testing
import EvidenceTesting

@Suite("RFC 3161 requests")
struct TimestampRequestTests {
    @Test("request carries SHA-256 imprint, nonce and certReq, as openssl ts -query reads it")
    func requestAsSeenByOpenSSL() throws {
        try withTempDirectory { dir in
            let request = try TimestampRequest.make(digest: .known)
            #expect(request.digest == .known)
            #expect(request.nonce.count == 16)
            #expect(Hex.decode(request.nonce)?.count == 8)

            let file = dir + "/req.tsq"
            try request.der.write(to: URL(fileURLWithPath: file))
            let text = try OpenSSLCLI.check(["ts", "-query", "-in", file, "-text"])

            #expect(textField("Version", in: text) == "1")
            #expect(textField("Hash Algorithm", in: text) == "sha256")
            #expect(hexDump(after: "Message data:", in: text) == SHA256Digest.known.hex)
            #expect(textField("Certificate required", in: text) == "yes")
            let nonce = try #require(textField("Nonce", in: text), "no Nonce line in:\n\(text)")
            // openssl prints 0x + uppercase hex without leading zeros.
            #expect(nonce.hasPrefix("0x"))
            func stripped(_ s: some StringProtocol) -> String {
                String(s.lowercased().drop(while: { $0 == "0" }))
            }
            #expect(stripped(nonce.dropFirst(2)) == stripped(request.nonce))
        }
    }

    @Test("certReq false is encoded, and every request gets a fresh nonce")
    func certReqAndNonces() throws {
        try withTempDirectory { dir in
            let request = try TimestampRequest.make(digest: .other, certReq: false)
            #expect(request.certReq == false)
            let file = dir + "/req.tsq"
            try request.der.write(to: URL(fileURLWithPath: file))
            let text = try OpenSSLCLI.check(["ts", "-query", "-in", file, "-text"])
            #expect(textField("Certificate required", in: text) == "no")
            #expect(hexDump(after: "Message data:", in: text) == SHA256Digest.other.hex)
        }
        var nonces = Set<String>()
        for _ in 0..<32 { nonces.insert(try TimestampRequest.make(digest: .known).nonce) }
        #expect(nonces.count == 32)
    }

    @Test("requests round-trip through Codable")
    func requestCodable() throws {
        let request = try TimestampRequest.make(digest: .known)
        let back = try JSONDecoder().decode(TimestampRequest.self, from: JSONEncoder().encode(request))
        #expect(back == request)
    }
}
