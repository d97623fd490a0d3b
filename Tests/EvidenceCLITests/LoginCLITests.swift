import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// `evidence accounts login/logout` in a real terminal (tmux) against the sandbox's emulated
/// authorization servers: the operator opens the printed address (here: curl), pastes the code
/// shown; passwords are typed with echo off. Wrong and expired codes are refused, nothing saved.
@Suite("accounts login and logout in a terminal", .ownThread)
struct LoginCLITests {
    struct Setup {
        let scratch = Scratch()
        let sandbox: SandboxProcess
        var url: String { sandbox.baseURL.absoluteString }
        var config: String { scratch.path + "/evidence.toml" }
        var tokenFile: String { scratch.home + "/tokens/vault.json" }

        func secret(_ name: String, _ value: String) -> String {
            let p = scratch.path + "/" + name
            _ = FileManager.default.createFile(atPath: p, contents: Data(value.utf8), attributes: [.posixPermissions: 0o600])
            return p
        }

        /// An evidence.toml with one account `vault` and no credentials beyond the app's own.
        func write(account: String) {
            scratch.file("evidence.toml", "home = \"\(scratch.home)\"\n\n[archives.vault]\n" + account + "\n")
        }

        func terminal(_ args: [String]) throws -> Terminal {
            try Terminal([CLI.binary, "--config", config] + args)
        }

        func cli(_ args: [String]) -> CLI.Result {
            CLI.exec([CLI.binary, "--config", config] + args)
        }

        /// Follows the printed authorization address as a browser would; the code on the page.
        func code(fromScreen screen: String) throws -> String {
            let address = try #require(screen.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix(url) && $0.contains("code_challenge=") })
            let page = CLI.exec(["curl", "-sf", String(address)]).stdout
            let start = try #require(page.range(of: "<code id=\"auth-code\">"))
            return String(page[start.upperBound...].prefix { $0 != "<" })
        }

        func mode(_ path: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1) & 0o777
        }
    }

    func withSetup(_ body: (Setup) async throws -> Void) async throws {
        let scratch = Scratch()
        let sandbox = try await SandboxProcess.start(executable: NotarizationCLITests.sandboxBinary, stateDirectory: scratch.path + "/sandbox",
                                                     arguments: [])
        do {
            try await body(Setup(sandbox: sandbox))
        } catch {
            _ = await sandbox.stop()
            throw error
        }
        _ = await sandbox.stop()
    }

    func dropbox(_ s: Setup) -> String {
        """
        kind = "dropbox"
        app_key = "sandbox-dropbox-key"
        base_url = "\(s.url)/dropbox/api"
        upload_url = "\(s.url)/dropbox/content"
        auth_url = "\(s.url)/dropbox/api/oauth2/token"
        authorize_url = "\(s.url)/dropbox/oauth2/authorize"
        """
    }

    @Test("Dropbox: PKCE paste-back with an offline token; saved 0600; list, check, logout")
    func dropboxLogin() async throws {
        try await withSetup { s in
            s.write(account: dropbox(s))
            let t = try s.terminal(["accounts", "login", "vault"])
            let screen = try #require(t.wait(for: "Code:"), "no prompt:\n\(t.screen())")
            #expect(screen.contains("token_access_type=offline") && screen.contains("code_challenge_method=S256"))
            t.type(try s.code(fromScreen: screen))
            #expect(t.exitStatus() == 0, "\(t.screen())")
            #expect(t.screen().contains("✓ logged in: vault (dropbox) as"))
            #expect(s.mode(s.tokenFile) == 0o600)
            let record = try #require(FileManager.default.contents(atPath: s.tokenFile))
            let json = try #require(try JSONSerialization.jsonObject(with: record) as? [String: Any])
            #expect((json["refresh_token"] as? String)?.isEmpty == false, "\(json.keys)")

            let list = s.cli(["accounts", "list", "--json"])
            #expect(list.stdout.contains("refresh token saved"), "\(list.stdout)")
            #expect(!list.stdout.contains(json["refresh_token"] as? String ?? "-"))
            // The saved refresh token works after the access token is gone.
            _ = CLI.exec(["curl", "-sf", "-X", "POST", "\(s.url)/_sandbox/expire-tokens"])
            let check = s.cli(["accounts", "check", "vault"])
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")

            let out = s.cli(["accounts", "logout", "vault"])
            #expect(out.status == 0 && out.stdout.contains("removed"), "\(out.stdout)\(out.stderr)")
            #expect(!FileManager.default.fileExists(atPath: s.tokenFile))
            let after = s.cli(["accounts", "check", "vault"])
            #expect(after.status == 1 && after.stdout.contains("accounts login vault"), "\(after.stdout)")
        }
    }

    @Test("a wrong code and an expired code are refused with the reason; nothing is saved")
    func wrongAndExpiredCodes() async throws {
        try await withSetup { s in
            s.write(account: dropbox(s))
            let wrong = try s.terminal(["accounts", "login", "vault"])
            #expect(wrong.wait(for: "Code:") != nil)
            wrong.type("not-a-code-the-server-issued")
            #expect(wrong.exitStatus() == 1)
            #expect(wrong.screen().contains("invalid_grant"), "\(wrong.screen())")
            #expect(!FileManager.default.fileExists(atPath: s.tokenFile))

            // Box: codes live 30 s; the sandbox clock jumps a minute before the paste.
            s.write(account: """
                kind = "box"
                client_id = "sandbox-box-client"
                client_secret_file = "\(s.secret("box-secret", "sandbox-box-secret"))"
                base_url = "\(s.url)/box/api/2.0"
                upload_url = "\(s.url)/box/upload/api/2.0"
                auth_url = "\(s.url)/box/api/oauth2/token"
                authorize_url = "\(s.url)/box/api/oauth2/authorize"
                """)
            let late = try s.terminal(["accounts", "login", "vault"])
            let screen = try #require(late.wait(for: "Code:"), "\(late.screen())")
            let code = try s.code(fromScreen: screen)
            #expect(CLI.exec(["curl", "-sf", "-X", "POST", "\(s.url)/_sandbox/advance-clock?seconds=60"]).status == 0)
            late.type(code)
            #expect(late.exitStatus() == 1)
            #expect(late.screen().contains("expired"), "\(late.screen())")
            #expect(!FileManager.default.fileExists(atPath: s.tokenFile))

            // A fresh code, pasted in time, works (Box hands out a refresh token too).
            let again = try s.terminal(["accounts", "login", "vault"])
            let screen2 = try #require(again.wait(for: "Code:"))
            again.type(try s.code(fromScreen: screen2))
            #expect(again.exitStatus() == 0, "\(again.screen())")
            #expect(s.cli(["accounts", "check", "vault"]).status == 0)
        }
    }

    @Test("ShareFile password and ownCloud app password: asked with echo off, wrong ones refused")
    func passwords() async throws {
        try await withSetup { s in
            s.write(account: """
                kind = "sharefile"
                subdomain = "sandbox"
                client_id = "sandbox-sharefile-client"
                client_secret_file = "\(s.secret("sf-secret", "sandbox-sharefile-secret"))"
                base_url = "\(s.url)/sharefile/sf/v3"
                auth_url = "\(s.url)/sharefile/oauth/token"
                """)
            let bad = try s.terminal(["accounts", "login", "vault"])
            #expect(bad.wait(for: "user name") != nil, "\(bad.screen())")
            bad.type("sandbox@example.org")
            #expect(bad.wait(for: "(not shown)") != nil)
            bad.type("Wrong-Password-42")
            #expect(bad.exitStatus() == 1)
            #expect(!bad.screen().contains("Wrong-Password-42"), "the password was echoed:\n\(bad.screen())")
            #expect(bad.screen().contains("invalid_grant"), "\(bad.screen())")
            #expect(!FileManager.default.fileExists(atPath: s.tokenFile))

            let good = try s.terminal(["accounts", "login", "vault"])
            #expect(good.wait(for: "user name") != nil)
            good.type("sandbox@example.org")
            #expect(good.wait(for: "(not shown)") != nil)
            good.type("sandbox-password")
            #expect(good.exitStatus() == 0, "\(good.screen())")
            #expect(!good.screen().contains("sandbox-password"))
            #expect(s.mode(s.tokenFile) == 0o600)
            let saved = String(decoding: FileManager.default.contents(atPath: s.tokenFile) ?? Data(), as: UTF8.self)
            #expect(!saved.contains("sandbox-password"), "the password must not be stored")
            #expect(s.cli(["accounts", "check", "vault"]).status == 0)

            // ownCloud: the app password is proven against the server, then written to password_file.
            let target = s.scratch.path + "/secrets/oc.password"
            s.write(account: """
                kind = "owncloud"
                url = "\(s.url)/owncloud"
                user = "sandbox"
                password_file = "\(target)"
                """)
            let ocBad = try s.terminal(["accounts", "login", "vault"])
            #expect(ocBad.wait(for: "(Settings") != nil, "\(ocBad.screen())")
            ocBad.type("not-the-app-password")
            #expect(ocBad.exitStatus() == 1, "\(ocBad.screen())")
            #expect(!FileManager.default.fileExists(atPath: target))
            let oc = try s.terminal(["accounts", "login", "vault"])
            #expect(oc.wait(for: "(Settings") != nil)
            oc.type("sandbox-app-password")
            #expect(oc.exitStatus() == 0, "\(oc.screen())")
            #expect(!oc.screen().contains("sandbox-app-password"))
            #expect(s.mode(target) == 0o600)
            #expect(s.cli(["accounts", "check", "vault"]).status == 0)
        }
    }
}
