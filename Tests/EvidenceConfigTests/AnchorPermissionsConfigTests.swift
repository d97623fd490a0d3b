import EvidenceConfig
import Foundation
import Testing

/// `anchor_permissions` and `allow_many_roots` in evidence.toml: defaults, values, errors.
@Suite("anchor_permissions and allow_many_roots")
struct AnchorPermissionsConfigTests {
    @Test("anchor_permissions defaults to refuse; warn is accepted; anything else names file, line and field")
    func anchorPermissions() throws {
        #expect(try loadConfig("home = \"h\"\n", in: TempDir()).anchorPermissions == .refuse)
        #expect(try loadConfig("anchor_permissions = \"warn\"\n", in: TempDir()).anchorPermissions == .warn)
        let error = configError { try loadConfig("home = \"h\"\nanchor_permissions = \"ignore\"\n", in: TempDir()) }
        #expect(error?.field == "anchor_permissions", "\(String(describing: error))")
        #expect(error?.line == 2)
        #expect(error?.description.contains("refuse") == true && error?.description.contains("warn") == true, "\(String(describing: error))")
    }

    @Test("allow_many_roots is an rfc3161 notary's boolean, off by default; a QED notary may not set it")
    func allowManyRoots() throws {
        let tsa = """
            [notaries.tsa]
            kind = "rfc3161"
            urls = ["https://tsa.example.org/tsr"]
            ca_file = "ca.pem"

            """
        #expect(try loadConfig(tsa, in: TempDir()).notaries["tsa"]?.allowManyRoots == false)
        #expect(try loadConfig(tsa + "allow_many_roots = true\n", in: TempDir()).notaries["tsa"]?.allowManyRoots == true)
        let notBool = configError { try loadConfig(tsa + "allow_many_roots = \"yes\"\n", in: TempDir()) }
        #expect(notBool?.field == "notaries.tsa.allow_many_roots", "\(String(describing: notBool))")
        let qed = configError { try loadConfig("""
            [notaries.qed]
            kind = "qed"
            api_key_env = "K"
            allow_many_roots = true
            """, in: TempDir()) }
        #expect(qed?.field == "notaries.qed.allow_many_roots", "\(String(describing: qed))")
    }
}
