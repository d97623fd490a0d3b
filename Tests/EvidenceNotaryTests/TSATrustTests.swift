import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import EvidenceSandbox
import Foundation
import Logging
import Testing

/// Trust anchors for RFC 3161 tokens: nothing verifies without one, and only the anchor given
/// (a CA file, or a pinned signing certificate) makes a token verify.
@Suite("RFC 3161 trust anchors")
struct TSATrustTests {
    @Test("a genuine reply with no trust anchor is refused, not accepted on its imprint")
    func noAnchorRefused() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            let online = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, for: request, trust: TSATrust())
            }
            #expect(online?.kind == .trustConfiguration)
            let offline = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, digest: .known, trust: TSATrust())
            }
            #expect(offline?.kind == .trustConfiguration)
        }
    }

    @Test("a pinned signing-certificate fingerprint (as openssl prints it) verifies the token without its CA")
    func pinnedSigner() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            let printed = try OpenSSLCLI.check(["x509", "-in", tsa.tsaCertificatePath, "-noout", "-fingerprint", "-sha256"])
            let pin = String(try #require(printed.split(separator: "=").last)).trimmingCharacters(in: .whitespacesAndNewlines)
            let token = try TimestampVerifier.verify(response: reply, for: request, trust: TSATrust(pinnedSigners: [pin.lowercased()]))
            #expect(token.digest == .known)
            #expect(TSACertificates.normalizedFingerprint(pin) == pin)
        }
    }

    @Test("a token signed by another TSA's certificate does not verify against a pin")
    func pinnedOtherSigner() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let other = try TestTSA(directory: dir + "/other")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try other.reply(to: request.der)
            let pin = try #require(try TSACertificates.read(pemFile: tsa.tsaCertificatePath).first).sha256
            let error = #expect(throws: TimestampError.self) {
                try TimestampVerifier.verify(response: reply, for: request, trust: TSATrust(pinnedSigners: [pin]))
            }
            #expect(error?.kind == .verificationFailed)
        }
    }

    @Test("the fingerprint of a PEM certificate is the one `openssl x509 -fingerprint -sha256` prints")
    func fingerprintMatchesOpenSSL() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let printed = try OpenSSLCLI.check(["x509", "-in", tsa.caCertificatePath, "-noout", "-fingerprint", "-sha256"])
            let info = try #require(try TSACertificates.read(pemFile: tsa.caCertificatePath).first)
            #expect(printed.contains("=" + info.sha256), "\(printed) vs \(info.sha256)")
            #expect(info.subject.contains("CN=Evidence Test Root CA"))
        }
    }

    @Test("the signer certificate extracted from a token is the TSA's certificate")
    func signerExtracted() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let request = try TimestampRequest.make(digest: .known)
            let reply = try tsa.reply(to: request.der)
            let pem = try #require(TSACertificates.signerPEM(response: reply))
            #expect(TSACertificates.infos(pem: pem) == (try TSACertificates.read(pemFile: tsa.tsaCertificatePath)))
            // Its subject and fingerprint read from the token directly (kept with the token's parse).
            #expect(TSACertificates.signerInfo(response: reply) == (try TSACertificates.read(pemFile: tsa.tsaCertificatePath)).first)
            #expect(TSACertificates.signerInfo(response: Data("not a reply".utf8)) == nil)
        }
    }

    @Test("TSAClient: a TSA whose token chains to another CA than the configured one is refused")
    func clientRefusesOtherCA() async throws {
        let http = HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "test"))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("evidence-tsa-trust-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let other = try TestTSA(directory: dir + "/other")
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: dir + "/sandbox"))
        try await server.withRunning { url in
            let tsa = TSAClient(urls: [url.absoluteString + "/tsa"], caFile: other.caCertificatePath, http: http)
            let error = await #expect(throws: NotaryError.self) {
                _ = try await tsa.timestamp(SHA256Digest(hex: String(repeating: "5c", count: 32))!)
            }
            #expect(error?.message.contains("signature or chain verification failed") == true, "\(error?.message ?? "")")
            #expect(error?.retryable == false)
            let unanchored = TSAClient(urls: [url.absoluteString + "/tsa"], trust: TSATrust(), http: http)
            let error2 = await #expect(throws: NotaryError.self) {
                _ = try await unanchored.timestamp(SHA256Digest(hex: String(repeating: "5d", count: 32))!)
            }
            #expect(error2?.message.contains("no trust anchor") == true, "\(error2?.message ?? "")")
        }
    }
}
