import EvidenceConfig
import EvidencePipeline
import EvidenceProcess
import EvidenceTesting
import Foundation
import Testing

/// Issue 28's second step: a root CA of the attacker's appended to the TSA's `ca_file` (the real
/// root stays, so real tokens still verify). Certificates are made with `openssl`, not our code.
@Suite("ca_file: one root unless allow_many_roots")
struct CAFileRootsTests {
    /// A self-signed CA with subject `/CN=<cn>/O=<o>`, as PEM text.
    static func root(_ dir: TempDirectory, _ name: String, cn: String, o: String = "Test") throws -> String {
        let key = dir.file(name + ".key"), crt = dir.file(name + ".crt")
        let r = try ChildProcess.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                          "-keyout", key, "-out", crt, "-days", "30", "-subj", "/CN=\(cn)/O=\(o)",
                                                          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try #require(r.status == 0, "\(r.output)")
        return try String(contentsOfFile: crt, encoding: .utf8)
    }

    /// A certificate `issuer` signs for `/CN=<cn>` (not self-signed), as PEM text.
    static func issued(_ dir: TempDirectory, by issuer: String, cn: String) throws -> String {
        let key = dir.file(cn + ".key"), csr = dir.file(cn + ".csr"), crt = dir.file(cn + ".crt")
        var r = try ChildProcess.run("/usr/bin/openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                          "-keyout", key, "-out", csr, "-subj", "/CN=\(cn)"])
        try #require(r.status == 0, "\(r.output)")
        r = try ChildProcess.run("/usr/bin/openssl", ["x509", "-req", "-in", csr, "-CA", dir.file(issuer + ".crt"), "-CAkey", dir.file(issuer + ".key"),
                                                      "-CAcreateserial", "-out", crt, "-days", "30"])
        try #require(r.status == 0, "\(r.output)")
        return try String(contentsOfFile: crt, encoding: .utf8)
    }

    func config(_ dir: TempDirectory, caText: String, extra: String = "") throws -> EvidenceConfig {
        _ = dir.write("tsa-ca.pem", caText)
        return try ConfigLoader.load(path: dir.write("evidence.toml", """
            [notaries.tsa]
            kind = "rfc3161"
            urls = ["https://tsa.example.org/tsr"]
            ca_file = "tsa-ca.pem"
            \(extra)
            """), environment: [:], currentDirectory: dir.path)
    }

    @Test("a second root appended to ca_file is refused, naming the config, the field, the file, the count and both subjects")
    func appendedRootRefused() throws {
        let dir = TempDirectory("ca-roots")
        let real = try Self.root(dir, "real", cn: "Real TSA Root", o: "Real")
        let forged = try Self.root(dir, "forged", cn: "Attacker Root", o: "Evil")
        let config = try config(dir, caText: real + forged)
        do {
            try CAFileRoots.check(config)
            Issue.record("two roots were accepted")
        } catch {
            #expect(error.file == config.file)
            #expect(error.field == "notaries.tsa.ca_file")
            #expect(error.message.contains(dir.file("tsa-ca.pem")) && error.message.contains("holds 2 root"), "\(error)")
            #expect(error.message.contains("CN=Real TSA Root") && error.message.contains("CN=Attacker Root"), "\(error)")
            #expect(error.message.contains("allow_many_roots = true"))
        }
    }

    @Test("one root (also with an intermediate beside it) passes; two pass with allow_many_roots = true")
    func oneRootOrAllowed() throws {
        let dir = TempDirectory("ca-roots")
        let real = try Self.root(dir, "real", cn: "Real TSA Root")
        let intermediate = try Self.issued(dir, by: "real", cn: "TSA Intermediate")
        try CAFileRoots.check(config(dir, caText: real + intermediate))
        let second = try Self.root(dir, "second", cn: "Second Root")
        try CAFileRoots.check(config(dir, caText: real + second, extra: "allow_many_roots = true"))
    }
}
