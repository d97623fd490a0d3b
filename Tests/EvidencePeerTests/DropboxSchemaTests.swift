import EvidenceArchive
import EvidenceHTTP
import EvidenceProcess
import EvidenceSandbox
import EvidenceStore
import EvidenceTesting
import Foundation
import Testing

/// Dropbox, proven by Dropbox's own schema: the official Python SDK (PyPI `dropbox`, in the venv
/// `scripts/deps.sh` makes) decodes, strictly, every argument sent and every answer the emulation
/// gave (`scripts/oracles/dropbox_schema.py` over `/_sandbox/dropbox/exchanges`), first for our
/// client's calls, then for the SDK's own run against the emulation by Dropbox's host names.
@Suite("Dropbox's own schema (the official Python SDK) over our client's calls and the emulation's answers", .ownThread)
struct DropboxSchemaTests {
    /// Every route `DropboxProvider` calls.
    static let clientRoutes = [
        "users/get_current_account", "files/create_folder_v2", "files/get_metadata", "files/upload",
        "files/upload_session/start", "files/upload_session/append_v2", "files/upload_session/finish", "files/download",
        "sharing/list_shared_links", "sharing/create_shared_link_with_settings", "files/delete_v2",
    ]

    @Test("our client's calls (small and session uploads, conflict, folders, links, read-back, token refresh, busy, corruption) and the answers all decode by the SDK's schema")
    func ourClient() async throws {
        let python = try #require(DropboxSDK.python, "\(DropboxSDK.unavailable)")
        let dir = TempDirectory("dropbox-schema")
        let sandbox = try await SandboxProcess.start(executable: sandboxExecutable, stateDirectory: dir.path + "/sandbox")
        do {
            try await exercise(dir: dir, base: sandbox.baseURL.absoluteString)
            let checked = try DropboxSDK.checkSchema(python: python, sandbox: sandbox.baseURL.absoluteString)
            for route in Self.clientRoutes { #expect(checked[route, default: 0] > 0, "no \(route) call was checked: \(checked)") }
        } catch {
            _ = await sandbox.stop()
            throw error
        }
        _ = await sandbox.stop()
    }

    /// Every route `DropboxProvider` uses, with the answers it meets: successes, route errors
    /// (conflicts, not found, settings refused, too many writes, a damaged upload) and a 401.
    func exercise(dir: TempDirectory, base: String) async throws {
        let http = PeerSandbox.http
        let session = OAuthSession(account: "dbx", tokenURL: base + "/dropbox/api/oauth2/token", clientID: DropboxEmulator.appKey,
                                   clientSecret: DropboxEmulator.appSecret, grant: .refreshToken(initial: DropboxEmulator.refreshToken),
                                   tokenFile: dir.path + "/token.json", http: http)
        let dbx = DropboxProvider(account: "dbx", session: session, http: http, baseURL: base + "/dropbox/api",
                                  uploadURL: base + "/dropbox/content", resumeDirectory: dir.path + "/resume", chunkSize: 4 << 20)
        func control(_ path: String) async throws {
            let r = try await http.send(HTTPRequest(method: "POST", url: base + "/_sandbox/" + path))
            #expect(r.isSuccess, "\(path): \(r.status)")
        }
        func file(_ name: String, _ bytes: Int) throws -> (path: String, hash: String) {
            let path = dir.path + "/" + name
            try randomFile(path, bytes: bytes)
            return (path, try FileHasher.dropboxContentHash(path: path))
        }

        #expect(try await dbx.whoami().contains("Dropbox account"))
        try await dbx.makeFolders("evidence/2026")
        try await dbx.makeFolders("evidence/2026")                                     // 409 path/conflict/folder
        #expect(try await dbx.stat("evidence/2026/none.bin") == nil)                     // 409 path/not_found
        let small = try file("small.bin", 3000), big = try file("big.bin", (9 << 20) + 1)
        #expect(try await dbx.upload(local: small.path, size: 3000, hash: small.hash, to: "evidence/2026/small.bin", progress: nil).hash == small.hash)
        let other = try file("other.bin", 10)
        await #expect(throws: ArchiveError.self) {                                     // 409 path/conflict/file
            _ = try await dbx.upload(local: other.path, size: 10, hash: other.hash, to: "evidence/2026/small.bin", progress: nil)
        }
        let stored = try await dbx.upload(local: big.path, size: (9 << 20) + 1, hash: big.hash, to: "evidence/2026/big.bin", progress: nil)
        #expect(stored.hash == big.hash && stored.size == (9 << 20) + 1)
        #expect(try await dbx.stat("evidence/2026/big.bin")?.hash == big.hash)

        try await control("expire-tokens")                                             // 401 expired_access_token, then a refresh
        try await dbx.download("evidence/2026/big.bin", to: dir.path + "/back.bin")
        #expect(try FileHasher.dropboxContentHash(path: dir.path + "/back.bin") == big.hash)
        await #expect(throws: ArchiveError.self) { try await dbx.download("evidence/2026/none.bin", to: dir.path + "/none.bin") }

        let link = try await dbx.share("evidence/2026/small.bin", ShareRequest(access: .open))
        #expect(try await dbx.share("evidence/2026/small.bin", ShareRequest(access: .open)) == link)    // listed, reused
        let strict = try await dbx.share("evidence/2026/big.bin", ShareRequest(access: .open, expires: Date().addingTimeInterval(86400)))
        #expect(strict.fallback != nil, "a Basic account refuses the expiry (409 settings_error): \(strict)")
        // Every other setting our client can ask for, each on a file of its own.
        for (n, request) in [ShareRequest(access: .company, password: "not-logged"), ShareRequest(access: .collaborators),
                             ShareRequest(access: .open, password: "not-logged")].enumerated() {
            let one = try file("share\(n).bin", 100)
            _ = try await dbx.upload(local: one.path, size: 100, hash: one.hash, to: "evidence/2026/share\(n).bin", progress: nil)
            #expect(try await dbx.share("evidence/2026/share\(n).bin", request).audience == "no_one")
        }

        try await control("quirk?quirk=dropbox-409-too-many-writes&count=1")           // 409 too_many_write_operations, retried
        try await dbx.delete("evidence/2026/small.bin")
        try await dbx.delete("evidence/2026/small.bin")                                // 409 path_lookup/not_found
        try await control("corrupt-next-upload?provider=dropbox")                      // 409 content_hash_mismatch
        await #expect(throws: ArchiveError.self) {
            _ = try await dbx.upload(local: other.path, size: 10, hash: other.hash, to: "evidence/2026/other.bin", progress: nil)
        }

    }

    @Test("the SDK itself, by Dropbox's host names, uploads (small, by session, by batch), lists page by page, shares, reads back; its calls and the answers decode by its schema",
          .enabled(if: ProviderNamespace.available, "`ip netns add` is refused here (needs root and network namespaces)"))
    func sdkAgainstTheEmulation() async throws {
        let python = try #require(DropboxSDK.python, "\(DropboxSDK.unavailable)")
        try await withProviderNamespace { ns in
            let run = try ns.run([python, DropboxSDK.script("dropbox_sdk_run.py"), ns.dir + "/ca.pem"], timeout: 120)
            #expect(run.status == 0, "the SDK's run: \(run.output.suffix(2000)) \(run.stderr.suffix(3000))")
            // The checker runs in the namespace too: the sandbox listens on its loopback.
            let check = try ns.run([python, DropboxSDK.script("dropbox_schema.py"), try #require(ns.sandboxURL)], timeout: 120)
            #expect(check.status == 0, "schema check: \(check.output.suffix(4000)) \(check.stderr.suffix(2000))")
            let checked = DropboxSDK.counts(check.output)
            for route in Self.clientRoutes + ["files/list_folder", "files/list_folder/continue", "files/upload_session/finish_batch_v2"] {
                #expect(checked[route, default: 0] > 0, "no \(route) call was checked: \(checked)")
            }
        }
    }
}

/// The official SDK's python and the oracle scripts.
enum DropboxSDK {
    static let venv = (ProcessInfo.processInfo.environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
        ?? NSHomeDirectory() + "/.cache") + "/evidence/dropbox-sdk"

    /// The venv's python, when the SDK is installed there.
    static let python: String? = {
        let python = venv + "/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python),
              let r = try? ChildProcess.run(python, ["-c", "import dropbox"], timeout: 60), r.succeeded else { return nil }
        return python
    }()

    static let unavailable = "the Dropbox SDK is not installed in \(venv) (scripts/deps.sh installs dropbox==12.2.4 with pip)"

    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/oracles/" + name).path
    }

    /// Runs the schema oracle over the sandbox's recorded exchanges; the calls checked per route.
    static func checkSchema(python: String, sandbox: String) throws -> [String: Int] {
        let r = try ChildProcess.run(python, [script("dropbox_schema.py"), sandbox], timeout: 120)
        let passed = r.succeeded
        #expect(passed, "schema check: \(r.output.suffix(4000))")
        return counts(r.output)
    }

    /// `checked ROUTE N` lines.
    static func counts(_ output: String) -> [String: Int] {
        var counts: [String: Int] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("checked ") {
            let parts = line.split(separator: " ")
            if parts.count == 3, let n = Int(parts[2]) { counts[String(parts[1])] = n }
        }
        return counts
    }
}
