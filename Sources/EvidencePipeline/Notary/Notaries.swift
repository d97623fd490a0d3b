import EvidenceConfig
import EvidenceHTTP
import EvidenceNotary
import Foundation
import Logging

/// The configured notaries, with their clients, built once per process from `[notaries.*]`.
public struct Notaries: Sendable {
    public enum Client: Sendable {
        case qed(QEDClient)
        case rfc3161(TSAClient)
    }

    public struct Entry: Sendable {
        public let config: NotaryConfig
        public let client: Client
    }

    public let entries: [String: Entry]

    public init(entries: [String: Entry] = [:]) { self.entries = entries }

    /// Reads API keys (env var or 0600 file) and builds one HTTP client per notary (its own CA
    /// file, if any). Errors name the config file and the field, never the secret.
    public static func build(config: EvidenceConfig, logger: Logger) throws(ConfigError) -> Notaries {
        var entries: [String: Entry] = [:]
        let configFile = config.file ?? "(embedded defaults)"
        for (name, notary) in config.notaries {
            let http = HTTPClient(configuration: HTTPClientConfiguration(caFile: notary.tlsCAFile, settingsTable: "notaries.\(name)"), logger: logger)
            switch notary.kind {
            case .qed:
                guard let source = notary.apiKey else {
                    throw ConfigError(file: configFile, field: "notaries.\(name).api_key_env",
                                      message: "a QED notary needs api_key_env or api_key_file")
                }
                let key = try ConfigLoader.readSecret(source, field: "notaries.\(name).api_key_\(source.isEnv ? "env" : "file")",
                                                      configFile: configFile)
                let client = QEDClient(name: name, baseURL: notary.baseURL ?? "https://api.qed.digital/v1/", apiKey: key, http: http)
                entries[name] = Entry(config: notary, client: .qed(client))
            case .rfc3161:
                entries[name] = Entry(config: notary, client: .rfc3161(
                    TSAClient(name: name, urls: notary.urls, caFile: notary.caFile, http: http)))
            }
        }
        return Notaries(entries: entries)
    }
}

extension SecretSource {
    var isEnv: Bool { if case .env = self { return true } else { return false } }
}
