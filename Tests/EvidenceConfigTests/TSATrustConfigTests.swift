import EvidenceConfig
import Foundation
import Testing

/// An rfc3161 notary must name what its tokens are verified against: the TSA's CA (`ca_file`)
/// or the SHA-256 fingerprint of its signing certificate (`tsa_cert_sha256`).
@Suite("rfc3161 trust anchors in evidence.toml")
struct TSATrustConfigTests {
    @Test("an rfc3161 notary with neither ca_file nor tsa_cert_sha256 is refused, naming file, line and ca_file")
    func missingAnchorRefused() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            home = "/tmp/x"

            [notaries.tsa]
            kind = "rfc3161"
            urls = ["https://tsa.example.org/tsr"]
            """, in: dir) }
        #expect(error?.field == "notaries.tsa.ca_file", "\(String(describing: error))")
        #expect(error?.file.hasSuffix("evidence.toml") == true)
        #expect(error?.line == 3)
        #expect(error?.message.contains("tsa_cert_sha256") == true)
    }

    @Test("a notary used as [custody] anchor_tsa without ca_file is refused the same way")
    func anchorTSAWithoutCARefused() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [notaries.tsa]
            kind = "rfc3161"
            urls = ["https://tsa.example.org/tsr"]

            [custody]
            anchor_tsa = "tsa"
            """, in: dir) }
        #expect(error?.field == "notaries.tsa.ca_file", "\(String(describing: error))")
    }

    @Test("a pinned fingerprint alone is enough; any common spelling is normalized to openssl's")
    func pinAccepted() throws {
        let dir = TempDir()
        let hex = String(repeating: "ab", count: 31) + "0f"
        let config = try loadConfig("""
            [notaries.tsa]
            kind = "rfc3161"
            urls = ["https://tsa.example.org/tsr"]
            tsa_cert_sha256 = "\(hex)"
            """, in: dir)
        let expected = stride(from: 0, to: 64, by: 2).map { i in String(Array(hex.uppercased())[i..<i + 2]) }.joined(separator: ":")
        #expect(config.notaries["tsa"]?.tsaCertSHA256 == [expected])
        #expect(config.notaries["tsa"]?.caFile == nil)
    }

    @Test("a fingerprint that is not 32 bytes of hex is refused, naming the field")
    func badPinRefused() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [notaries.tsa]
            kind = "rfc3161"
            urls = ["https://tsa.example.org/tsr"]
            tsa_cert_sha256 = ["AB:CD"]
            """, in: dir) }
        #expect(error?.field == "notaries.tsa.tsa_cert_sha256", "\(String(describing: error))")
        #expect(error?.line == 4)
    }
}
