import EvidenceCore
import EvidenceNotary
import EvidenceSandbox
import Foundation
import Testing
import EvidenceTesting

@Suite("RFC 3161 replies against a real openssl TSA")
struct TimestampVerifierTests {
    @Test("a TestTSA reply verifies with the CA: genTime, serial, policy, names")
    func replyVerifies() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            let token = try TimestampVerifier.verify(response: reply, for: request, caFile: tsa.caCertificatePath)

            #expect(abs(token.genTime.timeIntervalSinceNow) < 60)
            #expect(!token.serial.isEmpty)
            #expect(Hex.decode(token.serial) != nil)
            #expect(token.policy == TestTSA.policyOID)
            #expect(token.digest == .known)
            #expect(token.nonce == request.nonce)
            #expect(token.response == reply)
            #expect(token.tsaName?.contains("CN=Evidence Test TSA") == true, "tsaName: \(token.tsaName ?? "nil")")

            // The same reply with explicit untrusted certificates, without a CA (parse-only),
            // and through the offline digest entry point.
            let withChain = try TimestampVerifier.verify(response: reply, for: request, caFile: tsa.caCertificatePath,
                                                         untrustedFile: tsa.chainPath)
            #expect(withChain == token)
            let parsedOnly = try TimestampVerifier.verify(response: reply, for: request, caFile: nil)
            #expect(parsedOnly == token)
            let offline = try TimestampVerifier.verify(response: reply, digest: .known, caFile: tsa.caCertificatePath,
                                                       untrustedFile: tsa.tsaCertificatePath)
            #expect(offline == token)

            let json = try JSONEncoder().encode(token)
            #expect(try JSONDecoder().decode(TimestampToken.self, from: json) == token)
        }
    }

    @Test("genTime and serial agree with openssl ts -reply -text")
    func fieldsMatchOpenSSL() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .other)
            let reply = try tsa.reply(to: request.der)
            let token = try TimestampVerifier.verify(response: reply, for: request, caFile: tsa.caCertificatePath)
            let file = dir + "/r.tsr"
            try reply.write(to: URL(fileURLWithPath: file))
            let text = try OpenSSLCLI.check(["ts", "-reply", "-in", file, "-text"])
            let serial = try #require(textField("Serial number", in: text))
            #expect(serial.lowercased().hasPrefix("0x"))
            #expect(serial.dropFirst(2).lowercased().drop(while: { $0 == "0" })
                == token.serial.drop(while: { $0 == "0" }))
            // openssl knows 1.2.3.4.1 by its short name "tsa_policy1".
            let policy = textField("Policy OID", in: text)
            #expect(policy == TestTSA.policyOID || policy == "tsa_policy1", "\(policy ?? "nil")")
            // "Time stamp: Jan  2 03:04:05.678 2026 GMT" — compare to the second.
            let stamp = try #require(textField("Time stamp", in: text))
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: "UTC")
            f.dateFormat = "MMM d HH:mm:ss yyyy"
            let squeezed = stamp.replacingOccurrences(of: " GMT", with: "")
                .split(separator: " ").joined(separator: " ")
                .replacingOccurrences(of: #"\.\d+"#, with: "", options: .regularExpression)
            let parsed = try #require(f.date(from: squeezed), "cannot parse \(stamp)")
            #expect(abs(parsed.timeIntervalSince1970 - token.genTime.timeIntervalSince1970.rounded(.down)) < 1)
        }
    }

    @Test("the stored .tsr verifies with the auditor's openssl ts -verify command")
    func auditorCommand() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let content = Data("evidence file content \(UUID())\n".utf8)
            let dataFile = dir + "/FILE.jpg"
            try content.write(to: URL(fileURLWithPath: dataFile))
            let digest = try opensslSHA256(of: content, in: dir)

            let request = try TimestampRequest.make(digest: digest)
            let token = try TimestampVerifier.verify(response: try tsa.reply(to: request.der), for: request,
                                                     caFile: tsa.caCertificatePath)
            try token.response.write(to: URL(fileURLWithPath: dataFile + ".tsr"))

            let ok = try OpenSSLCLI.run(["ts", "-verify", "-data", dataFile, "-in", dataFile + ".tsr",
                                         "-CAfile", tsa.caCertificatePath, "-untrusted", tsa.tsaCertificatePath])
            #expect(ok.status == 0, "\(ok.output)")
            #expect(ok.output.contains("Verification: OK"), "\(ok.output)")

            // The same command must fail for altered content: the check is real.
            let altered = dir + "/ALTERED.jpg"
            try Data("evidence file content, altered\n".utf8).write(to: URL(fileURLWithPath: altered))
            let bad = try OpenSSLCLI.run(["ts", "-verify", "-data", altered, "-in", dataFile + ".tsr",
                                          "-CAfile", tsa.caCertificatePath, "-untrusted", tsa.tsaCertificatePath])
            #expect(bad.status != 0)
            #expect(!bad.output.contains("Verification: OK"))

            // And the offline API agrees with the auditor.
            let stored = try Data(contentsOf: URL(fileURLWithPath: dataFile + ".tsr"))
            #expect(try TimestampVerifier.verify(response: stored, digest: digest, caFile: tsa.caCertificatePath) == token)
        }
    }

    @Test("imprint mismatch is refused")
    func imprintMismatch() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            let otherRequest = try TimestampRequest.make(digest: .other)

            for caFile in [nil, tsa.caCertificatePath] {
                let e1 = #expect(throws: TimestampError.self) {
                    try TimestampVerifier.verify(response: reply, for: otherRequest, caFile: caFile)
                }
                #expect(e1?.kind == .imprintMismatch)
                #expect(e1?.message.hasPrefix("reply imprint does not match the request") == true)
                let e2 = #expect(throws: TimestampError.self) {
                    try TimestampVerifier.verify(response: reply, digest: .other, caFile: caFile)
                }
                #expect(e2?.kind == .imprintMismatch)
            }
        }
    }

    @Test("nonce mismatch is refused")
    func nonceMismatch() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            let sameDigest = try TimestampRequest.make(digest: .known)
            #expect(sameDigest.nonce != request.nonce)
            for caFile in [nil, tsa.caCertificatePath] {
                let error = #expect(throws: TimestampError.self) {
                    try TimestampVerifier.verify(response: reply, for: sameDigest, caFile: caFile)
                }
                #expect(error?.kind == .nonceMismatch)
                #expect(error?.message.hasPrefix("nonce mismatch") == true)
            }
        }
    }

    @Test("a reply checked against an unrelated CA fails chain verification")
    func wrongCA() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let unrelated = try TestTSA(directory: dir + "/other")
            #expect(try Data(contentsOf: URL(fileURLWithPath: tsa.caCertificatePath))
                != Data(contentsOf: URL(fileURLWithPath: unrelated.caCertificatePath)))
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)

            let error = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, for: request, caFile: unrelated.caCertificatePath)
            }
            #expect(error?.kind == .verificationFailed)
            #expect(error?.message.hasPrefix("signature or chain verification failed: ") == true)
            #expect((error?.message.count ?? 0) > "signature or chain verification failed: ".count)

            // Supplying the other TSA's chain as untrusted certificates does not help either.
            let error2 = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, digest: .known, caFile: unrelated.caCertificatePath,
                                             untrustedFile: unrelated.chainPath)
            }
            #expect(error2?.kind == .verificationFailed)
        }
    }

    @Test("a token without embedded certificates needs the untrusted TSA certificate")
    func certReqFalse() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known, certReq: false)
            let reply = try tsa.reply(to: request.der)
            let error = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, for: request, caFile: tsa.caCertificatePath)
            }
            #expect(error?.kind == .verificationFailed)
            let token = try TimestampVerifier.verify(response: reply, for: request, caFile: tsa.caCertificatePath,
                                                     untrustedFile: tsa.tsaCertificatePath)
            #expect(token.digest == .known)
        }
    }

    @Test("missing CA or untrusted files are configuration errors")
    func trustConfiguration() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            let e1 = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, for: request, caFile: dir + "/missing.crt")
            }
            #expect(e1?.kind == .trustConfiguration)
            let e2 = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, for: request, caFile: tsa.caCertificatePath,
                                             untrustedFile: dir + "/missing.pem")
            }
            #expect(e2?.kind == .trustConfiguration)
        }
    }

    @Test("a rejection (md5 query to a TSA that accepts SHA-2 only) names the status and failure info")
    func rejection() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let dataFile = dir + "/data.bin"
            try Data("x".utf8).write(to: URL(fileURLWithPath: dataFile))
            try OpenSSLCLI.check(["ts", "-query", "-data", dataFile, "-md5", "-cert", "-out", dir + "/md5.tsq"])
            let query = try Data(contentsOf: URL(fileURLWithPath: dir + "/md5.tsq"))
            let reply = try tsa.reply(to: query)

            let error = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, digest: .known, caFile: tsa.caCertificatePath)
            }
            #expect(error?.kind == .refused)
            #expect(error?.pkiStatus == 2)
            #expect(error?.failureInfo == ["badAlg"])
            #expect(error?.message.hasPrefix("TSA refused: status rejection (badAlg)") == true, "\(error?.message ?? "")")
            #expect(error?.isTransient == false)

            // Garbage sent to the TSA comes back as a rejection too, not as a crash or a token.
            let garbageReply = try tsa.reply(to: Data("not a request".utf8))
            let error2 = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: garbageReply, digest: .known, caFile: nil)
            }
            #expect(error2?.kind == .refused)
            #expect(error2?.message.contains("rejection") == true)
        }
    }
}
