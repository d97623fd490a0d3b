import EvidenceConfig
import Foundation
import Testing

@Suite("[custody] table")
struct CustodyConfigTests {
    let notaries = """
        [notaries.tsa]
        kind = "rfc3161"
        urls = ["https://tsa.example/tsr"]
        ca_file = "/etc/evidence/tsa-ca.pem"

        [notaries.qed]
        kind = "qed"
        api_key_env = "QED_KEY"

        """

    @Test("anchor_tsa names an rfc3161 notary; anchor_every defaults to an hour")
    func valid() throws {
        #expect(try loadConfigText(notaries).custody == nil)
        let c = try #require(try loadConfigText(notaries + "[custody]\nanchor_tsa = \"tsa\"\n").custody)
        #expect(c.anchorTSA == "tsa" && c.anchorEvery == 3600)
        #expect(try loadConfigText(notaries + "[custody]\nanchor_tsa = \"tsa\"\nanchor_every = \"10m\"\n").custody?.anchorEvery == 600)
    }

    @Test("a missing, unknown or non-TSA notary, a bad duration and unknown keys name the field and line")
    func invalid() {
        let missing = configError { try loadConfigText(notaries + "[custody]\n") }
        #expect(missing?.field == "custody.anchor_tsa", "\(String(describing: missing))")
        let unknown = configError { try loadConfigText(notaries + "[custody]\nanchor_tsa = \"tas\"\n") }
        #expect(unknown?.field == "custody.anchor_tsa" && unknown?.line == 10)
        #expect(unknown?.message.contains("no notary \"tas\"") == true && unknown?.message.contains("have: qed, tsa") == true)
        let qed = configError { try loadConfigText(notaries + "[custody]\nanchor_tsa = \"qed\"\n") }
        #expect(qed?.message.contains("anchors need an rfc3161 TSA") == true)
        let every = configError { try loadConfigText(notaries + "[custody]\nanchor_tsa = \"tsa\"\nanchor_every = \"often\"\n") }
        #expect(every?.field == "custody.anchor_every")
        let extra = configError { try loadConfigText(notaries + "[custody]\nanchor_tsa = \"tsa\"\nanchor_evry = \"1h\"\n") }
        #expect(extra?.field == "custody.anchor_evry", "\(String(describing: extra))")
    }
    @Test("anchor_archive names an archive account; an unknown one is refused naming the field and the accounts")
    func anchorArchive() throws {
        let vault = notaries + "[archives.vault]\nkind = \"local\"\npath = \"/srv/vault\"\n\n"
        #expect(try loadConfigText(vault + "[custody]\nanchor_tsa = \"tsa\"\n").custody?.anchorArchive == nil)
        #expect(try loadConfigText(vault + "[custody]\nanchor_tsa = \"tsa\"\nanchor_archive = \"vault\"\n").custody?.anchorArchive == "vault")
        let unknown = configError { try loadConfigText(vault + "[custody]\nanchor_tsa = \"tsa\"\nanchor_archive = \"valt\"\n") }
        #expect(unknown?.field == "custody.anchor_archive" && unknown?.message.contains("no account \"valt\" in [archives] (have: vault)") == true,
                "\(String(describing: unknown))")
    }
}
