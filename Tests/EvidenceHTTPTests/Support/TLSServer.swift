import EvidenceProcess
import Foundation
import Glibc
import EvidenceTesting

/// `openssl s_server -www` with a certificate issued by a throw-away CA, both made with the
/// `openssl` CLI in a temporary directory. The server certificate names only IP 127.0.0.1.
/// `stop()` kills the process and removes the directory.
final class TLSServer: @unchecked Sendable {
    let directory: TempDirectory
    let port: Int
    private var server: ChildProcess?
    private let lock = NSLock()
    private var stopped = false

    var caFile: String { directory.file("ca.crt") }
    func url(host: String = "127.0.0.1") -> String { "https://\(host):\(port)/" }

    init() throws {
        let dir = TempDirectory("http")
        directory = dir
        do {
            try Self.makeCertificates(in: dir)
            // s_server needs a fixed port: take a free one from the kernel and hand it over.
            port = try TestServer.freePort()
            // `timeout` kills s_server should this test process die without calling stop().
            server = try ChildProcess("timeout", ["-s", "KILL", "120",
                                  "openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", dir.file("server.crt"),
                                  "-key", dir.file("server.key"), "-www", "-quiet"], stdout: .null, stderr: .null)
        } catch {
            dir.remove()
            throw error
        }
        guard Self.waitUntilListening(port: port, seconds: 10) else {
            stop()
            throw POSIXError(.ETIMEDOUT)
        }
    }

    /// Ends s_server (SIGTERM, forwarded by `timeout`; SIGKILL if it lingers) and removes the files.
    func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        defer { directory.remove() }
        server?.terminate(grace: 3)
    }

    private static func makeCertificates(in directory: TempDirectory) throws {
        directory.write("server.ext", """
            subjectAltName = IP:127.0.0.1
            basicConstraints = CA:FALSE
            keyUsage = digitalSignature
            extendedKeyUsage = serverAuth

            """)
        try Self.openssl(in: directory, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                   "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                                   "-subj", "/CN=evidence test CA"])
        try Self.openssl(in: directory, ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                   "-nodes", "-keyout", "server.key", "-out", "server.csr",
                                   "-subj", "/CN=evidence test server"])
        try Self.openssl(in: directory, ["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                                   "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "server.ext"])
    }

    private static func openssl(in dir: TempDirectory, _ arguments: [String]) throws {
        let result = try ChildProcess.run("openssl", arguments, directory: dir.path)
        guard result.succeeded else {
            throw NSError(domain: "openssl", code: Int(result.status),
                          userInfo: [NSLocalizedDescriptionKey: "openssl \(arguments.first ?? "") failed: \(result.output.prefix(500))"])
        }
    }

    private static func waitUntilListening(port: Int, seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            close(fd)
            if connected == 0 { return true }
            usleep(50_000)
        }
        return false
    }
}

