import EvidenceSandbox
import EvidenceTesting
import Foundation
import Testing

/// `POST /_sandbox/misbehave`: the next N requests under a prefix get a broken 200 answer.
@Suite("Misbehaving answers (/_sandbox/misbehave)")
struct MisbehaveTests {
    func arm(_ sandbox: SandboxProcess, _ query: String) async throws -> HTTPResult {
        try await TestHTTP.send("POST", URL(string: sandbox.baseURL.absoluteString + "/_sandbox/misbehave?" + query)!)
    }

    /// curl's view of one GET: exit status, HTTP status, content type, body size, stderr.
    func curl(_ sandbox: SandboxProcess, _ path: String, _ extra: [String] = []) async throws -> (exit: Int32, out: String, err: String) {
        let r = try await runTool("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{content_type} %{size_download}",
                                           "-H", "Authorization: app-token sandbox-key"] + extra + [sandbox.baseURL.absoluteString + path])
        return (r.status, r.stdout, r.stderr)
    }

    @Test("each mode answers 200 with the broken body it promises, count times, then the real answer again")
    func modes() async throws {
        try await withSandbox { sandbox in
            #expect(try await arm(sandbox, "path=/v1/reports/&mode=garbage&count=2").status == 200)
            for _ in 0..<2 {
                let r = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/")
                #expect(r.status == 200 && r.header("Content-Type") == "application/json")
                #expect((try? JSONSerialization.jsonObject(with: r.body)) == nil, "not JSON")
            }
            #expect(try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/").json?["results"] != nil, "count used up")

            _ = try await arm(sandbox, "path=/v1/&mode=html")
            let html = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/")
            #expect(html.header("Content-Type")?.hasPrefix("text/html") == true && html.text.contains("<html>"))

            _ = try await arm(sandbox, "path=/v1/&mode=wrong-type")
            let png = try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/")
            #expect(png.header("Content-Type") == "image/png" && png.body.prefix(4) == Data([0x89, 0x50, 0x4e, 0x47]))

            _ = try await arm(sandbox, "path=/dropbox/&mode=truncated")
            let cut = try await curl(sandbox, "/dropbox/api/2/users/get_current_account")
            #expect(cut.exit == 18, "curl 18 = partial file: \(cut)")   // CURLE_PARTIAL_FILE

            _ = try await arm(sandbox, "path=/v1/&mode=oversized")
            let big = try await curl(sandbox, "/v1/reports/")
            #expect(big.exit == 0 && big.out == "200 application/json \(Misbehaviour.oversizeBytes)", "\(big)")

            _ = try await arm(sandbox, "path=/v1/&mode=slow")
            let start = Date()
            let slow = try await curl(sandbox, "/v1/reports/", ["--speed-limit", "1", "--speed-time", "3"])
            #expect(slow.exit == 28, "curl 28 = too slow: \(slow)")   // CURLE_OPERATION_TIMEDOUT
            #expect(Date().timeIntervalSince(start) < 60, "the trickle lasts 600 s; curl's 3 s speed limit ended it")

            let counters = try await TestHTTP.send("GET", sandbox.baseURL.appendingPathComponent("_sandbox/counters"))
            for mode in ["garbage", "html", "wrong-type", "truncated", "oversized", "slow"] {
                #expect(counters.json?["misbehaved"]?[mode] != nil, "\(mode): \(counters.text)")
            }
        }
    }

    @Test("the oversized answer is streamed: the sandbox's own peak memory stays far below its size")
    func oversizedIsStreamed() async throws {
        try await withSandbox { sandbox in
            func peak() -> Int {
                let s = (try? String(contentsOfFile: "/proc/\(sandbox.processIdentifier)/status", encoding: .utf8)) ?? ""
                let line = s.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
                return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
            }
            let before = peak()
            _ = try await arm(sandbox, "path=/v1/&mode=oversized&count=2")
            for _ in 0..<2 { #expect(try await curl(sandbox, "/v1/reports/").exit == 0) }
            #expect(peak() - before < 24 << 20, "grew by \(peak() - before) bytes")
        }
    }

    @Test("bad arguments are refused with 400 naming the parameter; count=0 disarms")
    func arguments() async throws {
        try await withSandbox { sandbox in
            let noMode = try await arm(sandbox, "path=/v1/&mode=teapot")
            #expect(noMode.status == 400 && noMode.text.contains("mode must be one of garbage, html, truncated, oversized, slow, wrong-type, locked, wrong-json"))
            #expect(try await arm(sandbox, "mode=html").status == 400)
            #expect(try await arm(sandbox, "path=/v1/&mode=html&count=-1").status == 400)
            _ = try await arm(sandbox, "path=/v1/&mode=html&count=5")
            _ = try await arm(sandbox, "path=/v1/&mode=html&count=0")
            #expect(try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/").status == 200)
            #expect(try await TestHTTP.qed("GET", sandbox.baseURL, "/v1/reports/").json?["results"] != nil)
        }
    }

    @Test("--help documents the misbehave route with its modes")
    func help() async throws {
        let r = try await runTool(sandboxExecutable.path, ["--help"])
        let text = r.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")   // --help wraps lines
        #expect(text.contains("POST /_sandbox/misbehave?path=PREFIX&mode=MODE&count=N"), "\(text)")
        for mode in ["garbage =", "html =", "truncated =", "oversized =", "slow =", "wrong-type =", "wrong-json ="] { #expect(text.contains(mode)) }
    }
}
