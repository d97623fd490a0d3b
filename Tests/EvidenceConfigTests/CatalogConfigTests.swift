import EvidenceConfig
import Foundation
import Testing

@Suite("[catalog] table and node")
struct CatalogConfigTests {
    @Test("a PostgreSQL catalog: user, host, port and database from the URL; the password from password_env or _file")
    func valid() throws {
        #expect(try loadConfigText("").catalog == nil, "no table: the SQLite file in the home")
        let local = try #require(try loadConfigText("""
            [catalog]
            url = "postgres://evidence@127.0.0.1/cases"
            password_env = "EVIDENCE_DB_PASSWORD"
            """).catalog)
        #expect(local.user == "evidence" && local.host == "127.0.0.1" && local.port == 5432 && local.database == "cases")
        #expect(local.password == .env("EVIDENCE_DB_PASSWORD") && local.tlsCAFile == nil)
        let remote = try #require(try loadConfigText("""
            [catalog]
            url = "postgresql://ev@db.station.example:6543/evidence"
            password_file = "/etc/evidence/db-password"
            tls_ca_file = "/etc/evidence/db-ca.pem"
            """).catalog)
        #expect(remote.port == 6543 && remote.tlsCAFile == "/etc/evidence/db-ca.pem" && remote.password == .file("/etc/evidence/db-password"))
    }

    @Test("a password in the URL, a remote host without tls_ca_file, another scheme or a missing part is refused naming the field")
    func invalid() {
        let inline = configError { try loadConfigText("[catalog]\nurl = \"postgres://ev:hunter2@127.0.0.1/cases\"\n") }
        #expect(inline?.field == "catalog.url" && inline?.message.contains("carries a password") == true, "\(String(describing: inline))")
        #expect(inline.map { !"\($0)".contains("hunter2") } == true, "the refusal repeats the password")
        let noTLS = configError { try loadConfigText("[catalog]\nurl = \"postgres://ev@db.example/cases\"\n") }
        #expect(noTLS?.field == "catalog.tls_ca_file", "\(String(describing: noTLS))")
        let mysql = configError { try loadConfigText("[catalog]\nurl = \"mysql://ev@127.0.0.1/cases\"\n") }
        #expect(mysql?.field == "catalog.url")
        let noUser = configError { try loadConfigText("[catalog]\nurl = \"postgres://127.0.0.1/cases\"\n") }
        #expect(noUser?.message.contains("no user") == true)
        let noDB = configError { try loadConfigText("[catalog]\nurl = \"postgres://ev@127.0.0.1/\"\n") }
        #expect(noDB?.message.contains("no database") == true)
        let both = configError { try loadConfigText("[catalog]\nurl = \"postgres://ev@127.0.0.1/c\"\npassword_env = \"A\"\npassword_file = \"/x\"\n") }
        #expect(both?.field == "catalog.password_file")
        let unknown = configError { try loadConfigText("[catalog]\nurl = \"postgres://ev@127.0.0.1/c\"\nsslmode = \"disable\"\n") }
        #expect(unknown?.field == "catalog.sslmode", "\(String(describing: unknown))")
    }

    @Test("node names this host among the nodes; default the host name; a name with spaces or slashes is refused")
    func node() throws {
        #expect(try loadConfigText("").nodeName == ProcessInfo.processInfo.hostName)
        #expect(try loadConfigText("node = \"station-3\"\n").nodeName == "station-3")
        let bad = configError { try loadConfigText("node = \"station 3/a\"\n") }
        #expect(bad?.field == "node", "\(String(describing: bad))")
    }
}
