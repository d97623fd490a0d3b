import EvidenceConfig
import EvidenceHTTP
import EvidenceNotary
import Foundation
import Logging
import Synchronization

/// The configured notaries, with their clients, built once per process from `[notaries.*]`.
public struct Notaries: Sendable {
    public enum Client: Sendable {
        case qed(QEDClient)
        case rfc3161(TSAClient)
        case opentimestamps(OTSClient)
    }

    public struct Entry: Sendable {
        public let config: NotaryConfig
        public let client: Client
    }

    final class Box: Sendable {
        let entries: Mutex<[String: Entry]>
        init(_ entries: [String: Entry]) { self.entries = Mutex(entries) }
    }
    private let box: Box

    /// The notaries now: every copy of one value shares them, and `replace(with:)` (a reload)
    /// puts new clients in place for all of them.
    public var entries: [String: Entry] { box.entries.withLock { $0 } }

    /// Puts `other`'s notaries in place of these, for every copy of this value.
    public func replace(with other: Notaries) {
        let new = other.entries
        box.entries.withLock { $0 = new }
    }

    public init(entries: [String: Entry] = [:]) { box = Box(entries) }

    /// Reads API keys (env var or 0600 file) and builds one HTTP client per notary (its own CA
    /// file, if any). Errors name the config file and the field, never the secret.
    public static func build(config: EvidenceConfig, logger: Logger, only: [String]? = nil) throws(ConfigError) -> Notaries {
        var entries: [String: Entry] = [:]
        let configFile = config.file ?? "(embedded defaults)"
        for (name, notary) in config.notaries where only?.contains(name) ?? true {
            switch notary.kind {
            case .qed:
                guard let source = notary.apiKey else {
                    throw ConfigError(file: configFile, field: "notaries.\(name).api_key_env",
                                      message: "a QED notary needs api_key_env or api_key_file")
                }
                let key = try ConfigLoader.readSecret(source, field: "notaries.\(name).api_key_\(source.isEnv ? "env" : "file")",
                                                      configFile: configFile)
                let client = QEDClient(name: name, baseURL: notary.baseURL ?? "https://api.qed.digital/v1/", apiKey: key,
                                       http: httpClient(for: notary, logger: logger))
                entries[name] = Entry(config: notary, client: .qed(client))
            case .rfc3161:
                entries[name] = Entry(config: notary, client: .rfc3161(tsaClient(notary, logger: logger)))
            case .opentimestamps:
                entries[name] = Entry(config: notary, client: .opentimestamps(otsClient(notary, logger: logger)))
            }
        }
        return Notaries(entries: entries)
    }

    /// The HTTP client of one notary: its own `tls_ca_file` and timeouts, and TLS errors that name its table.
    static func httpClient(for notary: NotaryConfig, logger: Logger) -> HTTPClient {
        HTTPClient(configuration: HTTPClientConfiguration(table: "notaries.\(notary.name)", caFile: notary.tlsCAFile, timeouts: notary.timeouts),
                   logger: logger)
    }

    /// The client of an opentimestamps notary (no secrets: calendars and headers are public).
    public static func otsClient(_ notary: NotaryConfig, logger: Logger) -> OTSClient {
        // Calendar answers and headers are small: nothing larger is read into memory.
        var configuration = HTTPClientConfiguration(table: "notaries.\(notary.name)", caFile: notary.tlsCAFile, timeouts: notary.timeouts)
        configuration.maxResponseBytes = 1 << 20
        return OTSClient(name: notary.name, calendars: notary.calendars, upgradeFrom: notary.upgradeURLs, minimum: notary.minCalendars,
                         headersURL: notary.headersURL ?? "", regtest: notary.otsNetwork == "regtest", confirmations: notary.confirmations,
                         http: HTTPClient(configuration: configuration, logger: logger))
    }

    /// The client of an rfc3161 notary alone, without reading any other notary's secrets
    /// (`evidence log anchor` needs only the `[custody]` TSA).
    public static func tsaClient(_ notary: NotaryConfig, logger: Logger) -> TSAClient {
        TSAClient(name: notary.name, urls: notary.urls, trust: notary.tsaTrust, http: httpClient(for: notary, logger: logger))
    }
}

extension NotaryConfig {
    /// The anchors this TSA's tokens must verify against: its `ca_file` and `tsa_cert_sha256`.
    public var tsaTrust: TSATrust {
        TSATrust(caFiles: caFile.map { [$0] } ?? [], pinnedSigners: tsaCertSHA256)
    }
}

extension EvidenceConfig {
    /// Every rfc3161 notary's anchors together: what `evidence verify` trusts from the config.
    public var tsaTrust: TSATrust {
        notaries.values.filter { $0.kind == .rfc3161 }.sorted { $0.name < $1.name }
            .reduce(TSATrust()) { $0.merging($1.tsaTrust) }
    }
}

extension SecretSource {
    var isEnv: Bool { if case .env = self { return true } else { return false } }
}
