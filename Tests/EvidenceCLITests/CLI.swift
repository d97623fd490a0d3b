import EvidenceTesting
import Foundation
import Glibc

/// Runs the built `evidence` binary (next to the test bundle) as a real process.
struct CLI {
    static let binary: String = {
        if let env = ProcessInfo.processInfo.environment["EVIDENCE_BIN"] { return env }
        let bundleDir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return bundleDir.appendingPathComponent("evidence").path
    }()

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let samples = packageRoot + "/samples"

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    }

    let home: String
    var environment: [String: String] = [:]

    /// `evidence --home <home> args…`, killed after `timeout` seconds.
    @discardableResult
    func run(_ args: [String], timeout: Double = 60, prefix: [String] = [], cwd: String? = nil) -> Result {
        Self.exec(prefix + [Self.binary, "--home", home] + args, timeout: timeout, environment: environment, cwd: cwd)
    }

    static func exec(_ argv: [String], timeout: Double = 60, environment: [String: String] = [:], cwd: String? = nil) -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "EVIDENCE_HOME")
        env.removeValue(forKey: "EVIDENCE_CONFIG")
        for (k, v) in environment { env[k] = v }
        p.environment = env
        if let cwd { p.currentDirectoryURL = URL(fileURLWithPath: cwd) }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try! startSerialized(p)
        let killer = DispatchWorkItem { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        // Read both pipes concurrently so a chatty child cannot block on a full pipe.
        nonisolated(unsafe) var errData = Data()
        let g = DispatchGroup()
        DispatchQueue.global().async(group: g) { errData = err.fileHandleForReading.readDataToEndOfFile() }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        g.wait()
        p.waitUntilExit()
        killer.cancel()
        return Result(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }
}

final class Scratch {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "/evidence-cli-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit {
        _ = CLI.exec(["chmod", "-R", "u+rwX", path])
        try? FileManager.default.removeItem(atPath: path)
    }
    var home: String { path + "/home" }

    @discardableResult
    func file(_ name: String, _ text: String) -> String {
        let p = path + "/" + name
        try! FileManager.default.createDirectory(atPath: (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: p, contents: Data(text.utf8))
        return p
    }
}
