import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `openssl s_server -www` with a certificate issued by a throw-away CA, both made with the
/// `openssl` CLI in a temporary directory. The server certificate names only IP 127.0.0.1.
/// `stop()` kills the process and removes the directory.
final class TLSServer: @unchecked Sendable {
    let directory: TempDirectory
    let port: Int
    private var pid: pid_t = 0
    private let lock = NSLock()
    private var stopped = false

    var caFile: String { directory.file("ca.crt") }
    func url(host: String = "127.0.0.1") -> String { "https://\(host):\(port)/" }

    init() throws {
        let dir = try TempDirectory()
        directory = dir
        do {
            try Self.makeCertificates(in: dir)
            // s_server needs a fixed port: take a free one from the kernel and hand it over.
            port = try TestServer.freePort()
            // `timeout` kills s_server should this test process die without calling stop().
            pid = try Self.spawn(["timeout", "-s", "KILL", "120",
                                  "openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", dir.file("server.crt"),
                                  "-key", dir.file("server.key"), "-www", "-quiet"])
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
        guard pid > 0 else { return }  // kill(0, …) would signal our own process group
        kill(pid, SIGTERM)
        var status: Int32 = 0
        let deadline = Date(timeIntervalSinceNow: 3)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(10_000)
        }
    }

    private static func makeCertificates(in directory: TempDirectory) throws {
        try directory.write("server.ext", """
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

    /// posix_spawn with an empty signal mask: threads of a test process block signals, and a
    /// child would inherit that and ignore SIGTERM.
    private static func spawn(_ arguments: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, environ)
        guard result == 0 else { throw POSIXError(.init(rawValue: result) ?? .EIO) }
        return pid
    }

    private static func openssl(in dir: TempDirectory, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: dir.path)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NSError(domain: "openssl", code: Int(process.terminationStatus),
                          userInfo: [NSLocalizedDescriptionKey: "openssl \(arguments.first ?? "") failed"])
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

extension TempDirectory {
    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: file(name)))
    }
}
