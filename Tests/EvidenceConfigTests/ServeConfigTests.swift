import EvidenceConfig
import Foundation
import Testing

@Suite("[serve] table")
struct ServeConfigTests {
    func load(_ text: String) throws -> EvidenceConfig { try loadConfigText(text) }

    func failure(_ text: String) -> ConfigError? {
        configError { try load(text) }
    }

    @Test("defaults: loopback 127.0.0.1:8480; secrets only named; relative files resolved")
    func defaults() throws {
        let c = try load("[serve]\nuser = \"auditor\"\npassword_file = \"portal.pass\"\n")
        let s = try #require(c.serve)
        #expect(s.host == "127.0.0.1" && s.port == 8480 && !s.allowRemote)
        #expect(s.user == "auditor")
        #expect(s.password == .file(((c.file! as NSString).deletingLastPathComponent as NSString).appendingPathComponent("portal.pass")))
        #expect(s.token == nil)
        #expect(try load("home = \"h\"\n").serve == nil)
    }

    @Test("listen takes host:port and [v6]:port; loopback names and addresses pass")
    func listen() throws {
        #expect(try load("[serve]\nlisten = \"[::1]:9000\"\ntoken_env = \"T\"\n").serve?.host == "::1")
        #expect(try load("[serve]\nlisten = \"localhost:0\"\ntoken_env = \"T\"\n").serve?.port == 0)
        #expect(try load("[serve]\nlisten = \"127.0.0.2:81\"\ntoken_env = \"T\"\n").serve?.host == "127.0.0.2")
        let bad = failure("[serve]\nlisten = \"8480\"\ntoken_env = \"T\"\n")
        #expect(bad?.field == "serve.listen" && bad?.line == 2)
        #expect(failure("[serve]\nlisten = \"::1:8480\"\ntoken_env = \"T\"\n")?.field == "serve.listen")
        #expect(failure("[serve]\nlisten = \"127.0.0.1:70000\"\ntoken_env = \"T\"\n")?.field == "serve.listen")
    }

    @Test("a non-loopback address needs allow_remote = true")
    func remote() throws {
        let e = failure("[serve]\nlisten = \"0.0.0.0:8480\"\ntoken_env = \"T\"\n")
        #expect(e?.field == "serve.listen")
        #expect(e?.message.contains("allow_remote = true") == true)
        #expect(failure("[serve]\nlisten = \"127.0.0.1.example.org:80\"\ntoken_env = \"T\"\n")?.field == "serve.listen")
        let ok = try load("[serve]\nlisten = \"0.0.0.0:8480\"\nallow_remote = true\ntoken_env = \"T\"\n")
        #expect(ok.serve?.allowRemote == true && ok.serve?.host == "0.0.0.0")
    }

    @Test("authentication is required, and user and password go together")
    func authRequired() {
        #expect(failure("[serve]\nlisten = \"127.0.0.1:8480\"\n")?.message.hasPrefix("no authentication") == true)
        #expect(failure("[serve]\nuser = \"a\"\n")?.field == "serve.password_env")
        #expect(failure("[serve]\npassword_env = \"P\"\n")?.field == "serve.user")
        #expect(failure("[serve]\ntoken_env = \"T\"\ntoken_file = \"/t\"\n")?.field == "serve.token_file")
        #expect(failure("[serve]\nuser = \"a:b\"\npassword_env = \"P\"\n")?.field == "serve.user")
    }

    @Test("inline secrets and unknown keys are refused, naming the field")
    func inlineSecrets() {
        let e = failure("[serve]\nuser = \"a\"\npassword = \"hunter2\"\n")
        #expect(e?.field == "serve.password" && e?.line == 3)
        #expect(e?.description.contains("hunter2") == false)
        #expect(failure("[serve]\ntoken = \"abc\"\n")?.field == "serve.token")
        #expect(failure("[serve]\ntoken_env = \"T\"\nport = 8480\n")?.field == "serve.port")
    }

    @Test("loopback detection")
    func loopback() {
        for h in ["127.0.0.1", "127.1.2.3", "::1", "localhost", "LOCALHOST"] { #expect(ServeConfig.isLoopback(h), "\(h)") }
        for h in ["0.0.0.0", "::", "192.168.1.2", "127.0.0.1.nip.io", "127.0.0", "example.org"] { #expect(!ServeConfig.isLoopback(h), "\(h)") }
    }
}
