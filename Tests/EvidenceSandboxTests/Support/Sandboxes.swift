import EvidenceProcess
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Testing

/// Where SwiftPM put the `evidence-sandbox` binary: next to the test bundle.
let sandboxExecutable = URL(fileURLWithPath: CommandLine.arguments[0])
    .deletingLastPathComponent().appendingPathComponent("evidence-sandbox")

/// A fresh folder under the system's temporary directory.
func makeTemporaryDirectory(_ label: String = "sandbox") throws -> String {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("evidence-\(label)-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs `body` against a real `evidence-sandbox` process on a fresh state folder (or the one
/// given), stopping it afterwards whatever happens. `--pending-seconds` defaults to 1 here.
func withSandbox<T>(
    _ arguments: [String] = [],
    stateDirectory: String? = nil,
    _ body: (SandboxProcess) async throws -> T
) async throws -> T {
    let dir = try stateDirectory ?? makeTemporaryDirectory()
    var args = arguments
    if !args.contains("--pending-seconds") { args += ["--pending-seconds", "1"] }
    let sandbox = try await SandboxProcess.start(executable: sandboxExecutable, stateDirectory: dir, arguments: args)
    do {
        let value = try await body(sandbox)
        await sandbox.stop()
        if stateDirectory == nil { try? FileManager.default.removeItem(atPath: dir) }
        return value
    } catch {
        await sandbox.stop()
        throw error
    }
}

/// A well-formed report body for `hash`.
func reportJSON(hash: String, name: String = "clip.mp4", files: [(String, String)]? = nil) -> String {
    let provable = (files ?? [(hash, name)]).map { #"{"hash":"\#($0.0)","file_name":"\#($0.1)"}"# }.joined(separator: ",")
    return #"{"hash":"\#(hash)","provable_files":[\#(provable)],"original_created_at":"2026-05-01T12:34:56Z","name":"\#(name)","note":"bodycam","email":"ops@example.org","meta_data":{"unit":"K-9"}}"#
}

/// A random 64-character lowercase hex string.
func randomHash() -> String {
    (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
}

/// Polls `GET /v1/reports/<slug>` until `status` differs from "pending" or `timeout` passes.
func waitForSettled(_ base: URL, slug: String, timeout: Double = 10) async throws -> JSONValue {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        let r = try await TestHTTP.qed("GET", base, "/v1/reports/\(slug)")
        let json = try #require(r.json)
        if json["status"]?.stringValue != "pending" || Date() > deadline { return json }
        try await Task.sleep(nanoseconds: 200_000_000)
    }
}

/// Result of running a command-line tool.
struct ToolResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `tool` (looked up on PATH) to completion; its output is captured in files so a
/// chatty tool cannot block on a full pipe.
func runTool(_ tool: String, _ arguments: [String], timeout: Double = 30) async throws -> ToolResult {
    let r = try await ChildProcess.runDetached(tool, arguments, separateStandardError: true, timeout: timeout)
    return ToolResult(status: r.status, stdout: r.output, stderr: r.standardError)
}
