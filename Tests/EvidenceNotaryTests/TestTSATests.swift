import EvidenceCore
import EvidenceNotary
import EvidenceSandbox
import Foundation
import Testing
import EvidenceTesting

@Suite("TestTSA")
struct TestTSATests {
    @Test("files are created once and reused; serials advance")
    func reuse() throws {
        try withTempDirectory { dir in
            let first = try TestTSA(directory: dir + "/tsa")
            for name in ["ca.key", "ca.crt", "tsa.key", "tsa.crt", "tsa.cnf", "chain.pem"] {
                #expect(FileManager.default.fileExists(atPath: dir + "/tsa/" + name), "\(name)")
            }
            let ca = try Data(contentsOf: URL(fileURLWithPath: first.caCertificatePath))
            let tsaCert = try Data(contentsOf: URL(fileURLWithPath: first.tsaCertificatePath))
            let chain = try Data(contentsOf: URL(fileURLWithPath: first.chainPath))
            #expect(chain == tsaCert + ca)

            let second = try TestTSA(directory: dir + "/tsa")
            #expect(try Data(contentsOf: URL(fileURLWithPath: second.caCertificatePath)) == ca)
            #expect(try Data(contentsOf: URL(fileURLWithPath: second.tsaCertificatePath)) == tsaCert)

            let r1 = try TimestampRequest.make(digest: .known)
            let r2 = try TimestampRequest.make(digest: .known)
            let t1 = try TimestampVerifier.verify(response: try first.reply(to: r1.der), for: r1, caFile: first.caCertificatePath)
            let t2 = try TimestampVerifier.verify(response: try second.reply(to: r2.der), for: r2, caFile: second.caCertificatePath)
            #expect(t1.serial != t2.serial)
        }
    }

    @Test("the TSA certificate is a critical timeStamping certificate issued by the CA")
    func certificateProfile() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let text = try OpenSSLCLI.check(["x509", "-in", tsa.tsaCertificatePath, "-noout", "-text"])
            #expect(text.contains("X509v3 Extended Key Usage: critical"))
            #expect(text.contains("Time Stamping"))
            let verify = try OpenSSLCLI.run(["verify", "-CAfile", tsa.caCertificatePath, "-purpose", "timestampsign",
                                             tsa.tsaCertificatePath])
            #expect(verify.status == 0, "\(verify.output)")
        }
    }

    @Test("concurrent replies all verify and get distinct serials")
    func concurrentReplies() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-notary-tests-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tsa = try TestTSA(directory: dir)
        let serials = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let request = try TimestampRequest.make(digest: .other)
                    let reply = try tsa.reply(to: request.der)
                    return try TimestampVerifier.verify(response: reply, for: request, caFile: tsa.caCertificatePath).serial
                }
            }
            var all: [String] = []
            for try await s in group { all.append(s) }
            return all
        }
        #expect(serials.count == 8)
        #expect(Set(serials).count == 8)
    }
}
