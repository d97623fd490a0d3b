import EvidenceArchive
import EvidenceHTTP
import Foundation
import Logging
import Testing

/// One place per provider kind: what config, accounts and login ask of it.
@Suite("Provider registry")
struct ProviderRegistryTests {
    /// Settings with every required key and secret set.
    func settings(_ d: ProviderDescriptor, extra: [String: String] = [:]) -> ProviderSettings {
        var values: [String: String] = [:]
        for key in d.requiredKeys { values[key] = key == "url" ? "https://cloud.example.org" : "x" }
        return ProviderSettings(account: "acct", values: values.merging(extra) { $1 }) { _ in "secret" }
    }

    @Test("every kind has a descriptor that builds its client, reporting the descriptor's hash kind", arguments: ProviderKind.allCases)
    func builds(_ kind: ProviderKind) throws {
        let d = ProviderRegistry.descriptor(kind)
        #expect(d.kind == kind)
        let http = HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "registry-tests"))
        let built = try d.build(ProviderSetup(settings: settings(d), http: http, tokenFile: "/nonexistent/t.json",
                                              resumeDirectory: "/nonexistent/u", chunkSize: nil))
        #expect(built.provider.hashKind == d.hashKind)
        #expect(built.provider.account == "acct")
        #expect((built.session != nil) == d.usesOAuth)
        #expect(d.allowedKeys.isSuperset(of: d.requiredKeys))
    }

    @Test("a missing required key is named, not guessed", arguments: ProviderKind.allCases)
    func missingKey(_ kind: ProviderKind) throws {
        let d = ProviderRegistry.descriptor(kind)
        guard let key = d.requiredKeys.first else { return }
        let http = HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "registry-tests"))
        var s = settings(d)
        s.values[key] = nil
        let error = #expect(throws: ProviderSetupError.self) {
            _ = try d.build(ProviderSetup(settings: s, http: http, tokenFile: "/t", resumeDirectory: "/u", chunkSize: nil))
        }
        #expect(error?.key == key)
    }

    @Test("ShareFile's root_folder_id is an allowed key, and one that is not an item id is refused naming the key")
    func shareFileRootFolder() throws {
        let d = ProviderRegistry.descriptor(.sharefile)
        #expect(d.allowedKeys.contains("root_folder_id"))
        let http = HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "registry-tests"))
        let good = settings(d, extra: ["root_folder_id": "fo1a2b3c-4d5e"])
        _ = try d.build(ProviderSetup(settings: good, http: http, tokenFile: "/t", resumeDirectory: "/u", chunkSize: nil))
        let bad = settings(d, extra: ["root_folder_id": "../Items(home)"])
        let error = #expect(throws: ProviderSetupError.self) {
            _ = try d.build(ProviderSetup(settings: bad, http: http, tokenFile: "/t", resumeDirectory: "/u", chunkSize: nil))
        }
        #expect(error?.key == "root_folder_id" && error?.message.contains("is not a ShareFile item id") == true)
    }

    @Test("login styles: Box with client credentials and a local folder need none; ShareFile asks a password; Dropbox asks an offline token")
    func loginStyles() {
        let box = ProviderRegistry.descriptor(.box)
        #expect(box.login(for: settings(box, extra: ["subject_type": "enterprise", "subject_id": "1"])) == .none)
        guard case .authorizationCode(_, "client_id", _) = box.login(for: settings(box)) else { Issue.record("box"); return }
        #expect(ProviderRegistry.descriptor(.local).login == .none)
        #expect(ProviderRegistry.descriptor(.sharefile).login == .passwordGrant)
        #expect(ProviderRegistry.descriptor(.owncloud).login == .appPassword)
        guard case .authorizationCode(_, "app_key", let extra) = ProviderRegistry.descriptor(.dropbox).login else { Issue.record("dropbox"); return }
        #expect(extra == [.init(name: "token_access_type", value: "offline")])
    }

    @Test("config keys: secrets as _env or _file, HTTP keys only for HTTP kinds, token_file only for OAuth kinds")
    func keys() {
        let owncloud = ProviderRegistry.descriptor(.owncloud).allowedKeys
        #expect(owncloud.isSuperset(of: ["url", "user", "password_env", "password_file", "base_url", "tls_ca_file", "chunk_size"]))
        #expect(!owncloud.contains("token_file"))
        #expect(ProviderRegistry.descriptor(.local).allowedKeys == ["path"])
        let box = ProviderRegistry.descriptor(.box)
        #expect(box.allowedKeys.isSuperset(of: ["client_secret_env", "client_secret_file", "subject_type", "subject_id", "token_file"]))
        #expect(box.choices["subject_type"] == ["user", "enterprise"] && box.together == [["subject_type", "subject_id"]])
        #expect(ProviderRegistry.descriptor(.box).credentialKeys.contains("subject_type"))
        #expect(!ProviderRegistry.descriptor(.dropbox).credentialKeys.contains("app_secret_file"))
    }
}
