import EvidenceSandbox
import EvidenceTesting
import Foundation
import Testing

@Suite("evidence-sandbox process")
struct SandboxProcessTests {
    @Test("prints its listening line with the bound port on 127.0.0.1")
    func listeningLine() async throws {
        try await withSandbox { sandbox in
            #expect(sandbox.port > 0)
            #expect(sandbox.baseURL.absoluteString == "http://127.0.0.1:\(sandbox.port)")
            let r = try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("_sandbox/counters"))
            #expect(r.status == 200)
        }
    }

    @Test("SIGTERM stops it cleanly with exit status 0")
    func sigtermExitsZero() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sandbox = try await SandboxProcess.start(executable: sandboxExecutable, stateDirectory: dir)
        let status = await sandbox.stop()
        #expect(status == 0)
    }

    @Test("rejects invalid flags with usage exit status 64")
    func invalidFlags() async throws {
        let r = try await runTool(sandboxExecutable.path, ["--state-dir", "/tmp/x", "--fail-rate", "2"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("--fail-rate"))
        let latency = try await runTool(sandboxExecutable.path, ["--state-dir", "/tmp/x", "--latency", "fast"])
        #expect(latency.status == 64)
        #expect(latency.stderr.contains("latency"))
    }
}
