import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real RFC 3161 time-stamping authority for tests and the sandbox, backed by `openssl ts -reply`.
///
/// `init(directory:)` creates, once, a test root CA (`ca.key`, `ca.crt`), a TSA key and certificate
/// signed by it with `extendedKeyUsage = critical, timeStamping` (`tsa.key`, `tsa.crt`), `chain.pem`
/// (TSA certificate then CA certificate), the serial file and `tsa.cnf`; later instances on the same
/// directory reuse them. Auditors verify tokens with
/// `openssl ts -verify -data FILE -in FILE.tsr -CAfile ca.crt -untrusted tsa.crt`.
///
/// Replies are serialized with an in-process lock plus `flock` on `.tsa.lock`, because every
/// `openssl ts -reply` rewrites the shared serial file (and several processes may share a directory).
public final class TestTSA: Sendable {
    /// Policy OID written into every token.
    public static let policyOID = "1.2.3.4.1"

    /// Absolute path of the TSA directory.
    public let directory: String
    private let lock = NSLock()

    private static let files = ["ca.key", "ca.crt", "tsa.key", "tsa.crt", "chain.pem", "tsaserial", "tsa.cnf"]

    public init(directory: String) throws {
        let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
        self.directory = absolute
        do {
            try FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true)
        } catch {
            throw TestTSAError.io("cannot create TSA directory \(absolute): \(error)")
        }
        try withDirectoryLock { try provisionIfNeeded() }
    }

    public var caCertificatePath: String { path("ca.crt") }
    public var tsaCertificatePath: String { path("tsa.crt") }
    /// TSA certificate followed by the CA certificate (PEM).
    public var chainPath: String { path("chain.pem") }
    public var configPath: String { path("tsa.cnf") }

    /// Answers one DER `TimeStampReq` with a DER `TimeStampResp`. A query the TSA cannot accept
    /// (unsupported digest, garbage) yields a reply with status `rejection`, as a real TSA would;
    /// this only throws when `openssl` itself fails.
    public func reply(to query: Data) throws -> Data {
        try withDirectoryLock {
            let id = UUID().uuidString
            let queryName = ".query-\(id).tsq"
            let replyName = ".reply-\(id).tsr"
            defer {
                try? FileManager.default.removeItem(atPath: path(queryName))
                try? FileManager.default.removeItem(atPath: path(replyName))
            }
            do {
                try query.write(to: URL(fileURLWithPath: path(queryName)))
            } catch {
                throw TestTSAError.io("cannot write TSA query: \(error)")
            }
            try OpenSSLCLI.check(["ts", "-reply", "-config", "tsa.cnf", "-queryfile", queryName, "-out", replyName],
                                 in: directory)
            guard let data = FileManager.default.contents(atPath: path(replyName)), !data.isEmpty else {
                throw TestTSAError.io("openssl ts -reply wrote no reply")
            }
            return data
        }
    }

    /// Issues the TSA a new signing certificate for its key under the same CA, valid for `days`
    /// from now (a TSA renewing its certificate; `days: 1` makes tokens that expire tomorrow).
    /// Tokens signed before keep the certificate they carry.
    public func reissueSigningCertificate(days: Int) throws {
        try withDirectoryLock {
            let staging = ".reissue-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path(staging), withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(atPath: path(staging)) }
            try write(Self.pkiConfig, to: path(staging) + "/pki.cnf")
            // The same subject and key: a request made from the current certificate.
            try OpenSSLCLI.check(["x509", "-x509toreq", "-in", "tsa.crt", "-signkey", "tsa.key", "-out", "\(staging)/tsa.csr"], in: directory)
            try OpenSSLCLI.check(["x509", "-req", "-in", "\(staging)/tsa.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                                  "-set_serial", "0x" + Self.randomHex(8), "-days", String(days), "-sha256",
                                  "-extfile", "\(staging)/pki.cnf", "-extensions", "v3_tsa", "-out", "\(staging)/tsa.crt"], in: directory)
            guard let tsaPEM = FileManager.default.contents(atPath: path("\(staging)/tsa.crt")),
                  let caPEM = FileManager.default.contents(atPath: path("ca.crt")) else {
                throw TestTSAError.io("openssl did not write the reissued certificate")
            }
            try write(tsaPEM + caPEM, to: path("\(staging)/chain.pem"))
            for name in ["tsa.crt", "chain.pem"] {
                guard rename(path("\(staging)/\(name)"), path(name)) == 0 else {
                    throw TestTSAError.io("cannot put the reissued \(name) in place: \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    // MARK: - Provisioning

    private func path(_ name: String) -> String { directory + "/" + name }

    private func provisionIfNeeded() throws {
        let fm = FileManager.default
        if Self.files.allSatisfy({ fm.fileExists(atPath: path($0)) }) { return }

        // Build everything in a staging directory, then move it in with tsa.cnf last,
        // so a half-finished run never looks complete.
        let stagingName = ".provision-\(UUID().uuidString)"
        let staging = path(stagingName)
        try fm.createDirectory(atPath: staging, withIntermediateDirectories: false)
        defer { try? fm.removeItem(atPath: staging) }

        try write(Self.pkiConfig, to: staging + "/pki.cnf")
        let caID = Self.randomHex(4)
        try OpenSSLCLI.check([
            "req", "-config", "pki.cnf", "-x509", "-new",
            "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650", "-sha256",
            "-set_serial", "0x" + Self.randomHex(8),
            "-subj", "/O=Evidence Sandbox/CN=Evidence Test Root CA \(caID)", "-extensions", "v3_ca",
        ], in: staging)
        try OpenSSLCLI.check([
            "req", "-config", "pki.cnf", "-new",
            "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "tsa.key", "-out", "tsa.csr", "-sha256",
            "-subj", "/O=Evidence Sandbox/CN=Evidence Test TSA \(caID)",
        ], in: staging)
        try OpenSSLCLI.check([
            "x509", "-req", "-in", "tsa.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-set_serial", "0x" + Self.randomHex(8), "-days", "3650", "-sha256",
            "-extfile", "pki.cnf", "-extensions", "v3_tsa", "-out", "tsa.crt",
        ], in: staging)

        guard let tsaPEM = fm.contents(atPath: staging + "/tsa.crt"),
              let caPEM = fm.contents(atPath: staging + "/ca.crt") else {
            throw TestTSAError.io("openssl did not write the certificates in \(staging)")
        }
        try write(tsaPEM + caPEM, to: staging + "/chain.pem")
        try write(Data("01\n".utf8), to: staging + "/tsaserial")
        try write(Self.tsaConfig, to: staging + "/tsa.cnf")
        _ = chmod(staging + "/ca.key", 0o600)
        _ = chmod(staging + "/tsa.key", 0o600)

        for name in Self.files {
            let target = path(name)
            if fm.fileExists(atPath: target) { try fm.removeItem(atPath: target) }
            try fm.moveItem(atPath: staging + "/" + name, toPath: target)
        }
    }

    private func write(_ text: String, to file: String) throws {
        try write(Data(text.utf8), to: file)
    }

    private func write(_ data: Data, to file: String) throws {
        do {
            try data.write(to: URL(fileURLWithPath: file))
        } catch {
            throw TestTSAError.io("cannot write \(file): \(error)")
        }
    }

    /// Holds the in-process lock and an exclusive `flock` on `.tsa.lock` while `body` runs.
    private func withDirectoryLock<T>(_ body: () throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        let fd = open(path(".tsa.lock"), O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestTSAError.io("cannot open \(path(".tsa.lock")): errno \(errno)") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw TestTSAError.io("flock \(path(".tsa.lock")): errno \(errno)") }
        }
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }

    private static func randomHex(_ bytes: Int) -> String {
        var g = SystemRandomNumberGenerator()
        var s = ""
        for i in 0..<bytes {
            // Keep the first byte in 0x10...0x7f: a positive serial with no leading zero.
            let b = i == 0 ? UInt8.random(in: 0x10...0x7f, using: &g) : UInt8.random(in: 0...255, using: &g)
            s += String(format: "%02x", b)
        }
        return s
    }

    /// Certificate extensions for the CA and the TSA (no dependency on the system openssl.cnf).
    private static let pkiConfig = """
        [ req ]
        distinguished_name = req_dn
        prompt = no

        [ req_dn ]
        CN = unused

        [ v3_ca ]
        basicConstraints = critical, CA:TRUE
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always

        [ v3_tsa ]
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature, nonRepudiation
        extendedKeyUsage = critical, timeStamping
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid, issuer

        """

    /// `openssl ts -reply` configuration; paths are relative because the TSA runs in its directory.
    private static let tsaConfig = """
        [ tsa ]
        default_tsa = tsa_config

        [ tsa_config ]
        serial = tsaserial
        signer_cert = tsa.crt
        signer_key = tsa.key
        signer_digest = sha256
        certs = ca.crt
        default_policy = \(policyOID)
        other_policies = 1.2.3.4.5
        digests = sha256, sha384, sha512
        accuracy = secs:1, millisecs:0, microsecs:0
        clock_precision_digits = 3
        ordering = yes
        tsa_name = yes
        ess_cert_id_chain = no
        ess_cert_id_alg = sha256

        """
}
