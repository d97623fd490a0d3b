import EvidenceProcess
import Foundation
import Glibc

/// A real WebDAV server: `rclone serve webdav` on loopback with Basic auth, serving `root`.
public final class WebDAVServer: @unchecked Sendable {
    public let port: Int
    public let root: String
    public var url: String { "http://127.0.0.1:\(port)/" }
    public static let user = "evidence"
    public static let password = "app-password-\(UUID().uuidString.prefix(6))"
    private let running: ChildProcess

    /// Starts the server on a free loopback port and waits until it answers. With `link`, the
    /// server runs inside that shaped namespace (reach it from a process started there). With
    /// `etagHash` ("SHA1", "MD5"), its ETags are that digest of each file's bytes (`--etag-hash`).
    public init(root: String, link: ShapedLink? = nil, etagHash: String? = nil) throws {
        self.root = root
        let prefix = link?.prefix ?? []
        for _ in 0..<20 {
            let candidate = Int.random(in: 20_000...60_000)
            let argv = prefix + ["rclone", "serve", "webdav", root, "--addr", "127.0.0.1:\(candidate)",
                                 "--user", Self.user, "--pass", Self.password, "--config", "/dev/null"]
                + (etagHash.map { ["--etag-hash", $0] } ?? [])
            let server = try ChildProcess(argv[0], Array(argv.dropFirst()), stdout: .null, stderr: .null)
            // Ready when it answers (401 without credentials).
            let deadline = Date(timeIntervalSinceNow: 10)
            while server.isRunning, Date() < deadline {
                if Self.answers401(port: candidate, prefix: prefix) {
                    running = server
                    port = candidate
                    return
                }
                usleep(50_000)
            }
            server.signal(SIGKILL)
            server.wait()
        }
        throw ServerError.notReady
    }

    private static func answers401(port: Int, prefix: [String]) -> Bool {
        let argv = prefix + ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/"]
        let probe = try? ChildProcess.run(argv[0], Array(argv.dropFirst()), timeout: 10)
        return probe?.output == "401"
    }

    public func stop() { running.terminate() }
    deinit { running.terminate(grace: 2) }
    public enum ServerError: Error { case notReady }
}
