import EvidenceCore
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// `evidence run` + `evidence-sandbox` as real processes, archiving to each emulated provider:
/// every item confirmed, certified, archived (verified by the provider's own hash), linked; a
/// SIGKILL in the middle of a chunked upload resumes it; injected faults leave no duplicates.
@Suite("Archive to the sandbox's providers: evidence run end to end", .ownThread)
struct ProviderCLITests {
    enum Provider: String, CaseIterable, Sendable {
        case dropbox, box, sharefile, owncloud

        /// All, or those named in `$EVIDENCE_TEST_PROVIDERS` (comma-separated) while working on one.
        static var selected: [Provider] {
            guard let list = ProcessInfo.processInfo.environment["EVIDENCE_TEST_PROVIDERS"] else { return allCases }
            return list.split(separator: ",").compactMap { Provider(rawValue: String($0)) }
        }

        /// The account table, with the sandbox's fixed credentials in 0600 files.
        func account(_ url: String, secrets: String) -> String {
            func secret(_ name: String, _ value: String) -> String {
                let p = secrets + "/" + name
                _ = FileManager.default.createFile(atPath: p, contents: Data(value.utf8), attributes: [.posixPermissions: 0o600])
                return p
            }
            switch self {
            case .dropbox:
                return """
                    kind = "dropbox"
                    app_key = "sandbox-dropbox-key"
                    app_secret_file = "\(secret("dbx-secret", "sandbox-dropbox-secret"))"
                    refresh_token_file = "\(secret("dbx-refresh", "sandbox-dropbox-refresh"))"
                    base_url = "\(url)/dropbox/api"
                    upload_url = "\(url)/dropbox/content"
                    auth_url = "\(url)/dropbox/api/oauth2/token"
                    chunk_size = "4MiB"
                    """
            case .box:
                return """
                    kind = "box"
                    client_id = "sandbox-box-client"
                    client_secret_file = "\(secret("box-secret", "sandbox-box-secret"))"
                    subject_type = "enterprise"
                    subject_id = "sandbox-enterprise"
                    base_url = "\(url)/box/api/2.0"
                    upload_url = "\(url)/box/upload/api/2.0"
                    auth_url = "\(url)/box/api/oauth2/token"
                    """
            case .sharefile:
                return """
                    kind = "sharefile"
                    subdomain = "sandbox"
                    client_id = "sandbox-sharefile-client"
                    client_secret_file = "\(secret("sf-secret", "sandbox-sharefile-secret"))"
                    username = "sandbox@example.org"
                    password_file = "\(secret("sf-password", "sandbox-password"))"
                    base_url = "\(url)/sharefile/sf/v3"
                    auth_url = "\(url)/sharefile/oauth/token"
                    chunk_size = "1MiB"
                    """
            case .owncloud:
                return """
                    kind = "owncloud"
                    url = "\(url)/owncloud"
                    user = "sandbox"
                    password_file = "\(secret("oc-password", "sandbox-app-password"))"
                    chunk_size = "1MiB"
                    """
            }
        }

        /// Appends `[archives.NAME]` for this provider to the harness's evidence.toml, its
        /// secrets in 0600 files in a 0700 folder of the harness.
        func add(to h: RunHarness, as name: String, url: String) throws {
            let secrets = h.scratch.path + "/secrets"
            try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
            try (config + "\n\n[archives.\(name)]\n" + account(url, secrets: secrets) + "\n")
                .write(toFile: h.configPath!, atomically: true, encoding: .utf8)
        }

        /// A file big enough to go up in several chunks, and the request path of one chunk.
        var large: Int { self == .box ? 44_000_000 : self == .dropbox ? 30 << 20 : 12 << 20 }
        var chunkMarker: String {
            switch self {
            case .dropbox: return "/dropbox/content/2/files/upload_session/"
            case .box: return "/box/upload/api/2.0/files/upload_sessions/"
            case .sharefile: return "/sharefile/upload/"
            case .owncloud: return "/owncloud/remote.php/dav/uploads/"
            }
        }
        var chunks: Int {
            let size = Double(large)
            switch self {
            case .dropbox: return Int((size / Double(4 << 20)).rounded(.up))
            case .box: return Int((size / Double(8 << 20)).rounded(.up)) + 3      // + create + 202 commit + commit
            // + finish, + the 5 small files after it (receipts, certificates, manifest: Standard
            // uploads post to an upload URI too)
            case .sharefile: return Int((size / Double(1 << 20)).rounded(.up)) + 1 + 5
            case .owncloud: return Int((size / Double(1 << 20)).rounded(.up)) + 2   // + MKCOL + MOVE
            }
        }
    }

    /// `ownOrigin`: the account reaches the sandbox as `localhost`, the notaries as `127.0.0.1`:
    /// two origins, as the real services are, so a pause one asks for does not hold the other.
    func harness(_ provider: Provider, _ sandbox: SandboxProcess, ownOrigin: Bool = false) throws -> RunHarness {
        let h = try NotarizationCLITests().harness(sandbox, ruleExtra: """
            archive = "vault"
            remote_path = "evidence/{rule}/{sha8}-{name}"

            [share]
            access = "open"
            expires_in = "30d"
            """)
        let base = sandbox.baseURL.absoluteString
        try provider.add(to: h, as: "vault", url: ownOrigin ? base.replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:") : base)
        return h
    }

    func withSandbox<T>(_ extra: [String] = [], _ body: (SandboxProcess) async throws -> T) async throws -> T {
        let scratch = Scratch()
        defer { withExtendedLifetime(scratch) {} }
        let sandbox = try await SandboxProcess.start(executable: NotarizationCLITests.sandboxBinary, stateDirectory: scratch.path + "/sandbox",
                                                     arguments: ["--pending-seconds", "1"] + extra)
        do {
            let v = try await body(sandbox)
            _ = await sandbox.stop()
            return v
        } catch {
            _ = await sandbox.stop()
            throw error
        }
    }

    func uploads(_ sandbox: SandboxProcess) -> [String: Int] {
        let r = CLI.exec(["curl", "-sS", "-f", "\(sandbox.baseURL.absoluteString)/_sandbox/counters"])
        // An empty answer would fail the caller's counts with no reason: say what curl met. (Under
        // three tests at once this came back empty twice, and curl's reason was not kept.)
        #expect(r.status == 0, "GET /_sandbox/counters: curl exit \(r.status): \(r.stderr)")
        let j = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any]
        return (j?["uploads_by_path"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Int }
    }

    func requests(_ sandbox: SandboxProcess, containing marker: String) -> Int {
        let log = (try? String(contentsOfFile: sandbox.stateDirectory + "/requests.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.contains(marker) }.count
    }

    /// The requests `requests(_:containing:)` counts, split by when they arrived: at or before
    /// `instant` (`Timestamp.string`), and after it. The sandbox writes a request down once it
    /// is answered, stamped with its arrival, so the split holds however late a line is written.
    /// A line without its stamp counts as after: it can never pass for a resumed upload.
    func requests(_ sandbox: SandboxProcess, containing marker: String, splitAt instant: String) -> (before: Int, after: Int) {
        let log = (try? String(contentsOfFile: sandbox.stateDirectory + "/requests.log", encoding: .utf8)) ?? ""
        var split = (before: 0, after: 0)
        for line in log.split(separator: "\n") where line.contains(marker) {
            let arrived = ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["time"] as? String ?? ""
            if arrived.isEmpty || arrived > instant { split.after += 1 } else { split.before += 1 }
        }
        return split
    }

    /// Waits until `n` items are done, asking `status --json` (one process) every 300 ms: polling
    /// `show` per item 20 times a second kept dozens of CLI processes on the catalog at once.
    func waitDone(_ h: RunHarness, _ n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout, every: 0.3) { ((h.status()["states"] as? [String: Any])?["done"] as? Int ?? 0) >= n }
    }

    func show(_ h: RunHarness, _ item: String) -> [String: Any] {
        (h.cli.run(["show", item, "--json"]).json as? [String: Any]) ?? [:]
    }

    func state(_ h: RunHarness, _ item: String) -> String? {
        (show(h, item)["item"] as? [String: Any])?["state"] as? String
    }

    /// Every item done: its files verified by the provider's hash (never read back), a link.
    func expectArchived(_ h: RunHarness, items: Int, _ provider: Provider) {
        for id in 1...items {
            let s = show(h, String(id))
            let archived = s["archived"] as? [[String: Any]] ?? []
            #expect(Set(archived.compactMap { $0["role"] as? String }).isSuperset(of: ["original", "receipt", "certificate", "manifest"]),
                    "item \(id): \(archived.map { $0["role"] ?? "" })")
            let hashName = ["dropbox": "content_hash:", "box": "sha1:", "sharefile": "md5:", "owncloud": "sha1:"][provider.rawValue]!
            #expect(archived.allSatisfy { ($0["verifiedBy"] as? String)?.hasPrefix(hashName) == true },
                    "item \(id) verified by \(hashName): \(archived.map { $0["verifiedBy"] ?? "" })")
            let links = s["links"] as? [[String: Any]] ?? []
            #expect(links.count == 1 && (links.first?["url"] as? String)?.isEmpty == false, "item \(id) has a link")
        }
    }

    @Test("every sample is confirmed, certified, archived, verified by the provider's hash and linked", arguments: Provider.selected)
    func everySample(_ provider: Provider) async throws {
        try await withSandbox { sandbox in
            let h = try harness(provider, sandbox)
            try h.start()
            let samples = try FileManager.default.contentsOfDirectory(atPath: CLI.samples).sorted()
            for name in samples {
                h.write(name, FileManager.default.contents(atPath: CLI.samples + "/" + name)!)
            }
            h.write("large.bin", randomBytes(provider.large / 3))
            let n = samples.count + 1
            #expect(waitDone(h, n, timeout: 120), "\(h.log.suffix(3000))")
            expectArchived(h, items: n, provider)
            let counts = uploads(sandbox)
            #expect(counts.count >= n * 4, "\(counts.count) remote files for \(n) items (original, 2 receipts, certificates, manifest each)")
            #expect(counts.values.allSatisfy { $0 == 1 }, "one upload per remote path: \(counts.filter { $0.value != 1 })")
            let again = h.cli.run(["archive", "1", "--config", h.configPath!, "--rules", h.rules])
            #expect(again.status == 0 && again.stdout.contains("already archived") && again.stdout.contains("link: "), "\(again.stdout)\(again.stderr)")
            let check = h.cli.run(["accounts", "check", "--json", "--config", h.configPath!])
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
            #expect(!h.log.contains("sandbox-password") && !h.log.contains("sandbox-box-secret") && !h.log.contains("sandbox-dropbox-secret"))
            #expect(h.stop() == 0)
        }
    }

    @Test("Nextcloud (no checksums of its own): each small archived file costs its PUT (If-None-Match: * guards it, no look first) and the read-back GET that proves it, no more")
    func nextcloudRequestsPerFile() async throws {
        try await withSandbox(["--owncloud-flavour", "nextcloud"]) { sandbox in
            let h = try harness(.owncloud, sandbox)
            try h.start()
            h.write("clip.bin", randomBytes(50_000))
            #expect(waitDone(h, 1, timeout: 120), "\(h.log.suffix(3000))")
            let archived = show(h, "1")["archived"] as? [[String: Any]] ?? []
            #expect(archived.count >= 5 && archived.allSatisfy { $0["verifiedBy"] as? String == "read-back sha256" }, "\(archived)")
            let log = (try? String(contentsOfFile: sandbox.stateDirectory + "/requests.log", encoding: .utf8)) ?? ""
            var byFile: [String: [String]] = [:]
            for line in log.split(separator: "\n") {
                guard let j = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                      let path = j["path"] as? String, let method = j["method"] as? String,
                      path.contains("/remote.php/dav/files/sandbox/evidence/"), !path.hasSuffix("/") else { continue }
                byFile[path, default: []].append(method)
            }
            let files = byFile.filter { $0.value.contains("PUT") }
            #expect(files.count == archived.count, "\(byFile)")
            for (path, methods) in files {
                #expect(methods == ["PUT", "GET"], "\(path): \(methods)")
            }
            #expect(h.stop() == 0)
        }
    }

    @Test("SIGKILL in the middle of a chunked upload: the restart resumes it, one remote copy, hashes match",
          arguments: Provider.selected)
    func killDuringUpload(_ provider: Provider) async throws {
        try await withSandbox(["--latency", "30ms", "--fault-path", provider.chunkMarker]) { sandbox in
            let h = try harness(provider, sandbox)
            try h.start()
            let data = randomBytes(provider.large)
            h.write("big.mov", data)
            let started = waitUntil(timeout: 90) { requests(sandbox, containing: provider.chunkMarker) >= 4 }
            #expect(started, "chunked upload began: \(h.log.suffix(2000))")
            _ = h.stop(SIGKILL)
            // The restart's chunk calls are those that arrive after this instant: the killed
            // process's last ones arrived before it, even those the sandbox writes down later.
            let killed = Timestamp.string(Date())
            try h.start()
            #expect(waitDone(h, 1, timeout: 120), "\(h.log.suffix(3000))")
            expectArchived(h, items: 1, provider)
            let counts = uploads(sandbox)
            let original = counts.filter { $0.key.hasSuffix("-big.mov") }
            #expect(original.count == 1 && original.values.first == 1, "one remote copy: \(counts)")
            let (before, after) = requests(sandbox, containing: provider.chunkMarker, splitAt: killed)
            #expect(after < provider.chunks,
                    "resumed, not restarted: \(before) chunk calls before the kill, \(after) after, \(provider.chunks) for the whole file")
            #expect(h.stop() == 0)
        }
    }

    func faults(_ provider: Provider) async throws {
        try await withSandbox(["--fail-rate", "0.15", "--drop-rate", "0.05", "--rate-limit", "40", "--fault-path", "/\(provider.rawValue)/",
                               "--seed", "5"]) { sandbox in
            let h = try harness(provider, sandbox)
            try h.start()
            for i in 0..<4 { h.write("clip-\(i).mp4", randomBytes(20_000 + i)) }
            #expect(waitDone(h, 4, timeout: 240),
                    "\(h.cli.run(["status", "--pending"]).stdout)\n\((1...4).map { show(h, String($0))["jobs"].map { "\($0)" } ?? "" }.joined(separator: "\n"))\n\(h.log.suffix(4000))")
            expectArchived(h, items: 4, provider)
            #expect(uploads(sandbox).values.allSatisfy { $0 == 1 }, "\(uploads(sandbox))")
            #expect(h.stop() == 0)
        }
    }

    @Test("accounts check proves a working account, names what is wrong with a broken one; accounts list shows no secret")
    func accounts() async throws {
        try await withSandbox { sandbox in
            let h = try harness(.box, sandbox)
            let url = sandbox.baseURL.absoluteString
            let bad = h.scratch.path + "/secrets/bad-secret"
            _ = FileManager.default.createFile(atPath: bad, contents: Data("not-the-secret-991".utf8), attributes: [.posixPermissions: 0o600])
            try (try String(contentsOfFile: h.configPath!, encoding: .utf8) + """

                [archives.broken]
                kind = "box"
                client_id = "sandbox-box-client"
                client_secret_file = "\(bad)"
                subject_type = "enterprise"
                subject_id = "sandbox-enterprise"
                base_url = "\(url)/box/api/2.0"
                upload_url = "\(url)/box/upload/api/2.0"
                auth_url = "\(url)/box/api/oauth2/token"
                """).write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            let good = h.cli.run(["accounts", "check", "vault", "--config", h.configPath!])
            #expect(good.status == 0 && good.stdout.contains("✓ vault (box)"), "\(good.stdout)\(good.stderr)")
            let all = h.cli.run(["accounts", "check", "--json", "--config", h.configPath!])
            #expect(all.status == 1)
            let rows = all.json as? [[String: Any]] ?? []
            let broken = rows.first { $0["name"] as? String == "broken" }
            #expect(broken?["ok"] as? Bool == false)
            let message = broken?["error"] as? String ?? ""
            #expect(message.hasPrefix("broken:") && message.contains("invalid_client"), "\(message)")
            #expect(!all.stdout.contains("not-the-secret-991"))
            let list = h.cli.run(["accounts", "list", "--json", "--config", h.configPath!])
            #expect(list.status == 0)
            let vault = (list.json as? [[String: Any]])?.first { $0["name"] as? String == "vault" }
            #expect(vault?["kind"] as? String == "box" && vault?["tokenExpires"] != nil, "\(list.stdout)")
            let tokenFile = vault?["tokenFile"] as? String ?? ""
            let token = (try? TokenFileReader.accessToken(tokenFile)) ?? ""
            #expect(!token.isEmpty && !list.stdout.contains(token), "the access token is never shown")
            let unknown = h.cli.run(["accounts", "check", "nope", "--config", h.configPath!])
            #expect(unknown.status == 2 && unknown.stderr.contains("no archive account \"nope\""))
        }
    }
}

enum TokenFileReader {
    static func accessToken(_ path: String) throws -> String {
        let j = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        return j?["access_token"] as? String ?? ""
    }
}

/// The long end-to-end runs of `ProviderCLITests`, apart so that `make test` stays short: `make test-long`
/// runs them (and CI runs both). The bodies are `ProviderCLITests`'s own, unchanged.
@Suite("Archive to the sandbox's providers, long runs: faults on every provider", .serialized, .ownThread)
struct ProviderLongTests {
    @Test("faults on the provider (5xx, 429, dropped connections): everything archived, no path uploaded twice",
          arguments: ProviderCLITests.Provider.selected)
    func faults(_ provider: ProviderCLITests.Provider) async throws {
        try await ProviderCLITests().faults(provider)
    }
}
