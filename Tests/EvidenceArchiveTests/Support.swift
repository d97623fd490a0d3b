import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import Foundation
import Glibc
import Logging
import Testing

/// A fresh folder, removed on `cleanup()`.
final class TempDir {
    let path: String
    init() {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("evidence-archive-\(UUID().uuidString.prefix(8))")
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func cleanup() { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String, bytes: Int) -> String {
        let p = path + "/" + name
        var g = SystemRandomNumberGenerator()
        let data = Data((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &g) })
        FileManager.default.createFile(atPath: p, contents: data)
        return p
    }
}

/// A real WebDAV server: `rclone serve webdav` on loopback with Basic auth, serving `root`.
final class WebDAVServer {
    let process = Process()
    let port: Int
    let root: String
    var url: String { "http://127.0.0.1:\(port)/" }
    static let user = "evidence"
    static let password = "app-password-\(UUID().uuidString.prefix(6))"

    init(root: String) throws {
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
            try p.run()
            // Ready when it answers (401 without credentials).
            for _ in 0..<100 {
                let r = Process()
                r.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                r.arguments = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(candidate)/"]
                let out = Pipe()
                r.standardOutput = out
                r.standardError = FileHandle.nullDevice
                try r.run(); r.waitUntilExit()
                let code = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                if code == "401" { chosen = candidate; break }
                if !p.isRunning { break }
                usleep(50_000)
            }
            if chosen != 0 {
                process.executableURL = p.executableURL
                self.running = p
                break
            }
            if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        }
        guard chosen != 0 else { throw ServerError.notReady }
        port = chosen
    }

    private var running: Process?
    func stop() { if let p = running, p.isRunning { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() } }
    enum ServerError: Error { case notReady }
}

func httpClient() -> HTTPClient {
    HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "archive-tests"))
}

func hex(_ path: String, _ kind: ProviderHashKind) throws -> String {
    switch kind {
    case .sha256: return try FileHasher.hexDigest(path: path, algorithm: .sha256)
    case .sha1: return try FileHasher.hexDigest(path: path, algorithm: .sha1)
    case .md5: return try FileHasher.hexDigest(path: path, algorithm: .md5)
    }
}
