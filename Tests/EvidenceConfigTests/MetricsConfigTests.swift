import EvidenceConfig
import Foundation
import Testing
import EvidenceTesting

@Suite("[metrics] table")
struct MetricsConfigTests {
    func load(_ text: String) throws -> EvidenceConfig { try loadConfigText(text) }

    func failure(_ text: String) -> ConfigError? {
        configError { try load(text) }
    }

    @Test("no table: no metrics; an empty table: loopback 127.0.0.1:9464")
    func defaults() throws {
        #expect(try load("home = \"h\"\n").metrics == nil)
        let m = try #require(try load("[metrics]\n").metrics)
        #expect(m.listen == "127.0.0.1:9464" && m.host == "127.0.0.1" && m.port == 9464 && !m.allowRemote)
    }

    @Test("listen takes HOST:PORT, [v6]:PORT and port 0; a malformed address names the field and line")
    func listen() throws {
        #expect(try load("[metrics]\nlisten = \"[::1]:9000\"\n").metrics?.host == "::1")
        #expect(try load("[metrics]\nlisten = \"localhost:0\"\n").metrics?.port == 0)
        let bad = failure("home = \"h\"\n[metrics]\nlisten = \"9464\"\n")
        #expect(bad?.field == "metrics.listen" && bad?.line == 3)
        #expect(bad?.message.contains("expected HOST:PORT") == true)
        #expect(failure("[metrics]\nlisten = \"127.0.0.1:70000\"\n")?.field == "metrics.listen")
    }

    @Test("a non-loopback address is refused, naming file and field, unless allow_remote = true")
    func remote() throws {
        let dir = TempDir()
        let file = dir.write("evidence.toml", "[metrics]\nlisten = \"0.0.0.0:9464\"\n")
        let e = configError { try ConfigLoader.load(path: file) }
        #expect(e?.field == "metrics.listen" && e?.line == 2)
        #expect(e?.description.contains(file) == true, "\(e?.description ?? "")")
        #expect(e?.message.contains("0.0.0.0 is not a loopback address") == true && e?.message.contains("allow_remote = true") == true)
        let ok = try load("[metrics]\nlisten = \"0.0.0.0:9464\"\nallow_remote = true\n")
        #expect(ok.metrics?.allowRemote == true && ok.metrics?.host == "0.0.0.0")
    }

    @Test("unknown keys are refused by name (no authentication settings here)")
    func unknownKeys() {
        #expect(failure("[metrics]\nport = 9464\n")?.field == "metrics.port")
        #expect(failure("[metrics]\ntoken_env = \"T\"\n")?.field == "metrics.token_env")
    }
}
