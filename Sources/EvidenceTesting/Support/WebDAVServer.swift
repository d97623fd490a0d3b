import Foundation
import Glibc

/// A real WebDAV server: `rclone serve webdav` on loopback with Basic auth, serving `root`.
public final class WebDAVServer: @unchecked Sendable {
    public let port: Int
    public let root: String
    public var url: String { "http://127.0.0.1:\(port)/" }
    public static let user = "evidence"
    public static let password = "app-password-\(UUID().uuidString.prefix(6))"

    /// Starts the server on a free loopback port and waits until it answers.
    public init(root: String) throws {
        self.root = root
        var chosen = 0
        for _ in 0..<20 {
            let candidate = Int.random(in: 20_000...60_000)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["rclone", "serve", "webdav", root, "--addr", "127.0.0.1:\(candidate)",
                           "--user", Self.user, "--pass", Self.password, "--config", "/dev/null"]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try startSerialized(p)
            // Ready when it answers (401 without credentials).
            for _ in 0..<100 {
                let r = Process()
                r.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                r.arguments = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(candidate)/"]
                let out = Pipe()
                r.standardOutput = out
                r.standardError = FileHandle.nullDevice
                try startSerialized(r); r.waitUntilExit()
                let code = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                if code == "401" { chosen = candidate; break }
                if !p.isRunning { break }
                usleep(50_000)
            }
            if chosen != 0 {
                self.running = p
                break
            }
            if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        }
        guard chosen != 0 else { throw ServerError.notReady }
        port = chosen
    }

    private var running: Process?
    public func stop() { if let p = running, p.isRunning { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() } }
    public enum ServerError: Error { case notReady }
}

