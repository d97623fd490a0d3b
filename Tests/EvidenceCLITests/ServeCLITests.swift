import EvidenceProcess
import EvidenceSandbox
import Foundation
import Glibc
import Testing
import EvidenceTesting

/// `evidence serve` as a real process over a home that `evidence run` filled against the
/// sandbox (QED + a real `openssl ts` TSA): HTTP with curl, downloads checked with standard
/// tools, and the item page rendered by headless Chromium.
@Suite("evidence serve: the auditor portal, real processes", .ownThread)
struct ServeCLITests {
    /// The notarization suite's sandbox and harness helpers, reused as they are.
    let notarization = NotarizationCLITests()
    static let password = "portal pass: 1"
    static let token = "portal-token-0123456789"

    /// `evidence serve` on a free loopback port; stdout and stderr go to files.
    final class ServeProcess {
        let process: ChildProcess
        let outPath: String
        let logPath: String
        private(set) var url = ""

        init(config: String, home: String, scratch: String, environment: [String: String]) throws {
            outPath = scratch + "/serve.out"
            logPath = scratch + "/serve.log"
            let env = ChildProcess.environment(environment, removing: ["EVIDENCE_HOME", "EVIDENCE_CONFIG"])
            process = try ChildProcess(CLI.binary, ["--config", config, "--home", home, "serve", "--listen", "127.0.0.1:0"],
                                       environment: env, stdout: .file(outPath, append: false), stderr: .file(logPath, append: false))
            let ready = waitUntil(timeout: 20) { self.stdout.contains("listening on ") || !self.process.isRunning }
            guard ready, process.isRunning, let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) else {
                throw ServeError.notReady(stdout + log)
            }
            url = String(line.dropFirst("listening on ".count))   // http://127.0.0.1:PORT/
        }

        deinit { if process.isRunning { process.signal(SIGKILL); process.wait() } }

        var stdout: String { (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "" }
        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        func stop() -> Int32? {
            process.signal(SIGTERM)
            return process.wait(seconds: 15)?.status
        }

        enum ServeError: Error { case notReady(String) }
    }

    /// curl with Basic auth (unless `auth` is given), returning the body; `-D` headers to `headers`.
    func curl(_ url: String, auth: [String]? = nil, extra: [String] = []) -> CLI.Result {
        CLI.exec(["curl", "-sS", "--max-time", "60"] + (auth ?? ["-u", "auditor:\(Self.password)"]) + extra + [url])
    }

    @Test("without [serve] authentication, serve exits 2 naming the file and field and showing the TOML to add")
    func requiresAuthentication() {
        let s = Scratch()
        let config = s.file("evidence.toml", "home = \"home\"\n")
        let r = CLI.exec([CLI.binary, "--config", config, "serve"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("\(config): field `serve`: missing"), "\(r.stderr)")
        #expect(r.stderr.contains("[serve]") && r.stderr.contains("user = \"auditor\"") && r.stderr.contains("password_file"))

        let noAuth = s.file("noauth.toml", "[serve]\nlisten = \"127.0.0.1:8480\"\n")
        let n = CLI.exec([CLI.binary, "--config", noAuth, "serve"])
        #expect(n.status == 2 && n.stderr.contains("noauth.toml:1: field `serve`: no authentication"), "\(n.stderr)")
    }

    @Test("a non-loopback address is refused unless allow_remote = true, in the config and with --listen")
    func loopbackOnly() {
        let s = Scratch()
        let remote = s.file("remote.toml", "[serve]\nlisten = \"0.0.0.0:8480\"\nuser = \"a\"\npassword_env = \"P\"\n")
        let r = CLI.exec([CLI.binary, "--config", remote, "serve"], environment: ["P": "x"])
        #expect(r.status == 2 && r.stderr.contains("remote.toml:2: field `serve.listen`: 0.0.0.0 is not a loopback address"), "\(r.stderr)")
        #expect(r.stderr.contains("allow_remote = true"))
        let local = s.file("local.toml", "[serve]\nuser = \"a\"\npassword_env = \"P\"\n")
        let l = CLI.exec([CLI.binary, "--config", local, "serve", "--listen", "192.0.2.1:8480"], environment: ["P": "x"])
        #expect(l.status == 2 && l.stderr.contains("--listen 192.0.2.1:8480: 192.0.2.1 is not a loopback address"), "\(l.stderr)")
        let unset = CLI.exec([CLI.binary, "--config", local, "serve"], environment: [:])
        #expect(unset.status == 2 && unset.stderr.contains("field `serve.password_env`: environment variable P is not set"), "\(unset.stderr)")
    }

    @Test("the commented [serve] example that evidence init writes is valid once uncommented")
    func initExample() throws {
        let s = Scratch()
        #expect(CLI.exec([CLI.binary, "init", s.path + "/site"]).status == 0)
        let config = s.path + "/site/evidence.toml"
        var lines = try String(contentsOfFile: config, encoding: .utf8).components(separatedBy: "\n")
        let start = try #require(lines.firstIndex(of: "# [serve]"))
        var i = start
        while i < lines.count, lines[i].hasPrefix("# ") { lines[i] = String(lines[i].dropFirst(2)); i += 1 }
        #expect(i - start == 5)
        try lines.joined(separator: "\n").write(toFile: config, atomically: true, encoding: .utf8)
        let check = CLI.exec([CLI.binary, "--config", config, "rules", "check"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
    }

    @Test("a confirmed, certified item over real HTTP: 401 without auth, search, item page, certificate PDF, bundle zip that sha256sum -c and openssl ts accept, Chromium renders it")
    func portalEndToEnd() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox)
            try h.start()
            let data = randomBytes(40_000)
            let hash = notarization.sha256(data)
            h.write("clip.bin", data)
            #expect(waitUntil(timeout: 30) { notarization.state(h, "1") == "done" }, "log: \(h.log)")
            let tx = try #require((notarization.show(h, "1")["proofs"] as? [[String: Any]])?.first { $0["notary"] as? String == "qed" }?["txHash"] as? String)
            let serial = try #require((notarization.show(h, "1")["proofs"] as? [[String: Any]])?.first { $0["notary"] as? String == "tsa" }?["remoteID"] as? String)

            let tokenFile = h.scratch.path + "/portal.token"
            _ = FileManager.default.createFile(atPath: tokenFile, contents: Data((Self.token + "\n").utf8), attributes: [.posixPermissions: 0o600])
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8) + """

                [serve]
                user = "auditor"
                password_env = "EVIDENCE_TEST_PORTAL_PASSWORD"
                token_file = "\(tokenFile)"

                """
            try config.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            // The portal reads while `evidence run` keeps going.
            let serve = try ServeProcess(config: h.configPath!, home: h.home, scratch: h.scratch.path,
                                         environment: ["EVIDENCE_TEST_PORTAL_PASSWORD": Self.password])
            let base = serve.url
            #expect(base.hasPrefix("http://127.0.0.1:") && base.hasSuffix("/"))

            let denied = curl(base + "items/1", auth: [], extra: ["-D", "-", "-o", "/dev/null"])
            #expect(denied.stdout.hasPrefix("HTTP/1.1 401"), "\(denied.stdout)")
            #expect(denied.stdout.lowercased().contains("www-authenticate: basic realm=\"evidence\""))
            #expect(curl(base + "items/1", auth: ["-u", "auditor:wrong"], extra: ["-o", "/dev/null", "-w", "%{http_code}"]).stdout == "401")

            let found = curl(base + "?q=" + String(hash.prefix(8)))
            #expect(found.stdout.contains("href=\"/items/1\"") && found.stdout.contains("clip.bin"), "\(found.stdout)")

            let page = curl(base + "items/1", auth: ["-H", "Authorization: Bearer \(Self.token)"], extra: ["-D", h.scratch.path + "/item.headers"])
            #expect(page.stdout.contains(hash))
            #expect(page.stdout.contains(">done</span>"))
            #expect(page.stdout.contains(tx) && page.stdout.contains("TSA serial <code>\(serial)</code>"))
            #expect(page.stdout.contains("<summary>notary-confirmed by ") && page.stdout.contains("<summary>certificate by "))
            #expect(page.stdout.contains("Notary tsa confirmed its proof."), "custody written as sentences")
            let headers = try String(contentsOfFile: h.scratch.path + "/item.headers", encoding: .utf8).lowercased()
            #expect(headers.contains("content-security-policy: default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"))
            #expect(headers.contains("x-content-type-options: nosniff"))

            let status = curl(base + "status")
            #expect(status.stdout.contains("<div class=\"state-done\"><b>1</b>"), "\(status.stdout)")
            #expect(curl(base + "items/1", extra: ["-X", "POST", "-o", "/dev/null", "-w", "%{http_code}"]).stdout == "405")
            #expect(curl(base + "items/77", extra: ["-o", "/dev/null", "-w", "%{http_code}"]).stdout == "404")

            // Certificate: a real PDF with the hash in its text.
            let pdf = h.scratch.path + "/cert.pdf"
            let cert = curl(base + "items/1/certificates/evidence.pdf", extra: ["-f", "-o", pdf, "-D", "-"])
            #expect(cert.status == 0 && cert.stdout.lowercased().contains("content-type: application/pdf"))
            #expect(cert.stdout.lowercased().contains("content-disposition: attachment; filename=\"evidence-item-1-\(hash.prefix(8))-evidence.pdf\""))
            #expect(FileManager.default.contents(atPath: pdf)?.prefix(5) == Data("%PDF-".utf8))
            #expect(CLI.exec(["pdftotext", pdf, "-"]).stdout.contains(hash))

            // Bundle: unzip, then the auditor's own checks.
            let zip = h.scratch.path + "/bundle.zip"
            #expect(curl(base + "items/1/bundle.zip", extra: ["-f", "-o", zip]).status == 0)
            let unpacked = h.scratch.path + "/unzipped"
            let unzip = CLI.exec(["unzip", "-q", zip, "-d", unpacked])
            #expect(unzip.status == 0, "\(unzip.stderr)")
            let folder = unpacked + "/evidence-item-1-\(hash.prefix(8))"
            let sums = CLI.exec(["sha256sum", "-c", "SHA256SUMS"], cwd: folder)
            #expect(sums.status == 0 && sums.stdout.contains("original/clip.bin: OK"), "\(sums.stdout)\(sums.stderr)")
            // The TSA's CA as fetched from the TSA by the harness, never the bundle's copy.
            let ca = h.scratch.path + "/tsa-ca.pem"
            let ts = notarization.opensslVerify(bundle: folder, original: "clip.bin", ca: ca)
            #expect(ts.stdout.contains("Verification: OK"), "\(ts.stdout)\(ts.stderr)")
            #expect(h.cli.run(["verify", folder, "--trust", ca]).status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: h.home + "/tmp").filter { $0.hasSuffix(".portal") }.isEmpty)

            try checkInChromium(base: base, hash: hash, scratch: h.scratch.path)

            #expect(serve.stop() == 0)
            #expect(serve.log.contains("GET /items/1 200"))
            #expect(!serve.log.contains(Self.password) && !serve.log.contains(Self.token), "secrets in the log")
            #expect(h.stop() == 0)
        }
    }

    /// Headless Chromium (Debian's package, installed by scripts/deps.sh) loads the item page
    /// with Basic credentials in the URL: its DOM has the content, and its screenshot is a
    /// real rendering — the header band and the state badge in their colours, unlike a blank page.
    func checkInChromium(base: String, hash: String, scratch: String) throws {
        let chromium = try #require(["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                    "chromium is not installed: run scripts/deps.sh")
        let authed = base.replacingOccurrences(of: "http://", with: "http://auditor:\(Self.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)@")
        func browser(_ args: [String]) -> CLI.Result {
            CLI.exec([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                      "--user-data-dir=" + scratch + "/chromium-profile", "--window-size=1200,1600"] + args, timeout: 90)
        }
        let list = browser(["--dump-dom", authed + "?state=done"])
        #expect(list.stdout.contains("Page 1 of 1") && list.stdout.contains("id=\"paging\"") && list.stdout.contains(hash), "\(list.stdout.prefix(500))")
        let dom = browser(["--dump-dom", authed + "items/1"])
        #expect(dom.stdout.contains(hash) && dom.stdout.contains("Custody events"), "\(dom.stdout.prefix(500)) \(dom.stderr.suffix(800))")

        let shot = scratch + "/item.png", blank = scratch + "/blank.png"
        #expect(browser(["--screenshot=" + shot, authed + "items/1"]).status == 0)
        #expect(browser(["--screenshot=" + blank, "about:blank"]).status == 0)
        let item = try PNGImage(data: try #require(FileManager.default.contents(atPath: shot)))
        let empty = try PNGImage(data: try #require(FileManager.default.contents(atPath: blank)))
        #expect(item.width == empty.width && item.height == empty.height && item.width >= 1000)
        #expect(empty.inkedFraction < 0.001, "about:blank should be white")
        #expect(item.inkedFraction > 0.03, "the item page rendered almost nothing: \(item.inkedFraction)")
        // The header band (#123a63) spans the page's width, and the green "done" badge (#1d7a3a) is drawn.
        let band = item.count((0x12, 0x3a, 0x63)), badge = item.count((0x1d, 0x7a, 0x3a))
        #expect(band > item.width * 20, "header band pixels: \(band)")
        #expect(badge > 200, "badge pixels: \(badge)")
        #expect(empty.count((0x12, 0x3a, 0x63)) == 0)
    }
}
