import EvidenceSandbox
import Foundation
import Testing

@Suite("RFC 3161 TSA")
struct TSATests {
    /// A data file and its DER time-stamp query made by `openssl ts -query`.
    private func makeQuery(in dir: String) async throws -> (data: String, query: String) {
        let data = (dir as NSString).appendingPathComponent("evidence.bin")
        try Data("evidence \(UUID())".utf8).write(to: URL(fileURLWithPath: data))
        let query = (dir as NSString).appendingPathComponent("q.tsq")
        let made = try await runTool("openssl", ["ts", "-query", "-data", data, "-sha256", "-cert", "-out", query])
        #expect(made.status == 0, "openssl ts -query: \(made.stderr)")
        return (data, query)
    }

    @Test("POST /tsa answers with a granted reply that openssl ts verifies against the served certificates")
    func grantedReply() async throws {
        let dir = try makeTemporaryDirectory("tsa")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await withSandbox { sandbox in
            let (data, query) = try await makeQuery(in: dir)
            let reply = try await TestHTTP.send("POST", sandbox.baseURL.appendingPathComponent("tsa"),
                                                headers: ["Content-Type": "application/timestamp-query"],
                                                body: try Data(contentsOf: URL(fileURLWithPath: query)), timeout: 60)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.header("Content-Type") == "application/timestamp-reply")
            let tsr = (dir as NSString).appendingPathComponent("r.tsr")
            try reply.body.write(to: URL(fileURLWithPath: tsr))

            let text = try await runTool("openssl", ["ts", "-reply", "-in", tsr, "-text"])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("Status: Granted."), "\(text.stdout)")

            var pems: [String: String] = [:]
            for name in ["ca.pem", "tsa.pem", "chain.pem"] {
                let r = try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("tsa/\(name)"))
                #expect(r.status == 200)
                #expect(r.text.contains("-----BEGIN CERTIFICATE-----"))
                let path = (dir as NSString).appendingPathComponent(name)
                try r.body.write(to: URL(fileURLWithPath: path))
                pems[name] = path
            }
            let verify = try await runTool("openssl", ["ts", "-verify", "-data", data, "-in", tsr,
                                                       "-CAfile", pems["ca.pem"]!, "-untrusted", pems["tsa.pem"]!])
            #expect(verify.status == 0, "openssl ts -verify: \(verify.stdout) \(verify.stderr)")
            #expect(verify.stdout.contains("Verification: OK"))
        }
    }

    @Test("a malformed query gets a reply with status rejection, as from a real TSA")
    func rejection() async throws {
        let dir = try makeTemporaryDirectory("tsa")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await withSandbox { sandbox in
            let reply = try await TestHTTP.send("POST", sandbox.baseURL.appendingPathComponent("tsa"),
                                                headers: ["Content-Type": "application/timestamp-query"],
                                                body: Data("not DER".utf8), timeout: 60)
            #expect(reply.status == 200)
            let tsr = (dir as NSString).appendingPathComponent("bad.tsr")
            try reply.body.write(to: URL(fileURLWithPath: tsr))
            let text = try await runTool("openssl", ["ts", "-reply", "-in", tsr, "-text"])
            #expect(text.stdout.contains("Status: Rejected."), "\(text.stdout) \(text.stderr)")
        }
    }

    @Test("a body with another Content-Type → 415")
    func wrongContentType() async throws {
        try await withSandbox { sandbox in
            let r = try await TestHTTP.send("POST", sandbox.baseURL.appendingPathComponent("tsa"),
                                            headers: ["Content-Type": "application/octet-stream"], body: Data([0x30, 0x00]))
            #expect(r.status == 415)
        }
    }

    @Test("the TSA keeps its CA across a restart on the same state folder")
    func identityPersists() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try await withSandbox(stateDirectory: dir) { sandbox in
            try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("tsa/ca.pem"), timeout: 60).body
        }
        let second = try await withSandbox(stateDirectory: dir) { sandbox in
            try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("tsa/ca.pem"), timeout: 60).body
        }
        #expect(!first.isEmpty)
        #expect(first == second)
    }
}
