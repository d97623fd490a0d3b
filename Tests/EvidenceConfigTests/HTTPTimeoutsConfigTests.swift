import EvidenceConfig
import Foundation
import Testing

@Suite("connect_timeout and stall_timeout of notaries and accounts")
struct HTTPTimeoutsConfigTests {
    let tables = """
        [notaries.qed]
        kind = "qed"
        api_key_env = "QED_KEY"

        [archives.box]
        kind = "box"
        client_id = "id"
        client_secret_env = "BOX_SECRET"

        """

    @Test("unset: 10 s to connect, 60 s of stall; set: parsed as durations on notaries and accounts alike")
    func values() throws {
        let plain = try loadConfigText(tables)
        #expect(plain.notaries["qed"]?.timeouts == HTTPTimeouts(connect: 10, stall: 60))
        #expect(plain.archives["box"]?.timeouts == HTTPTimeouts(connect: 10, stall: 60))

        let text = tables.replacingOccurrences(of: "api_key_env = \"QED_KEY\"\n",
                                               with: "api_key_env = \"QED_KEY\"\nconnect_timeout = \"500ms\"\nstall_timeout = \"5m\"\n")
            .replacingOccurrences(of: "client_secret_env = \"BOX_SECRET\"\n",
                                  with: "client_secret_env = \"BOX_SECRET\"\nstall_timeout = \"2s\"\n")
        let set = try loadConfigText(text)
        #expect(set.notaries["qed"]?.timeouts == HTTPTimeouts(connect: 0.5, stall: 300))
        #expect(set.archives["box"]?.timeouts == HTTPTimeouts(connect: 10, stall: 2))
        // Durations stay out of the account's string settings.
        #expect(set.archives["box"]?.settings["stall_timeout"] == nil)
    }

    @Test("out of range, not a duration, a number, or on a local folder: the error names the field and line",
          arguments: [("stall_timeout = \"500ms\"", "must be between 1s and 1h (got 500ms)"),
                      ("stall_timeout = \"2h\"", "must be between 1s and 1h (got 2h)"),
                      ("connect_timeout = \"20m\"", "must be between 100ms and 10m (got 20m)"),
                      ("connect_timeout = \"0s\"", "must be longer than zero"),
                      ("connect_timeout = \"soon\"", "invalid duration \"soon\""),
                      ("stall_timeout = 60", "a duration string like \"2s\"")])
    func invalid(_ line: String, _ message: String) {
        let text = tables.replacingOccurrences(of: "api_key_env = \"QED_KEY\"\n", with: "api_key_env = \"QED_KEY\"\n\(line)\n")
        let key = String(line.prefix { $0 != " " })
        let error = configError { try loadConfigText(text) }
        #expect(error?.field == "notaries.qed.\(key)" && error?.line == 4, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test("a local folder has no HTTP, so no timeouts")
    func localRefuses() {
        let error = configError { try loadConfigText("[archives.vault]\nkind = \"local\"\npath = \"/srv/a\"\nstall_timeout = \"2m\"\n") }
        #expect(error?.field == "archives.vault.stall_timeout", "\(String(describing: error))")
    }
}
