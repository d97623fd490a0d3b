/// One `[notaries.NAME]` table.
///
/// Keys by kind (anything else is rejected at load):
/// - all: `kind`, `poll_first` (duration, default 10s), `poll_max` (default 10m), `tls_ca_file`,
///   `connect_timeout` (default 10s), `stall_timeout` (default 60s; see `HTTPTimeouts`)
/// - `qed`: `base_url` (http/https, optional), exactly one of `api_key_env` / `api_key_file`
/// - `rfc3161`: `urls` (non-empty list of http/https URLs), and at least one of `ca_file` (the
///   TSA's CA certificate, PEM) and `tsa_cert_sha256` (SHA-256 fingerprint(s) of the TSA's signing
///   certificate): the trust anchors every token must verify against; `allow_many_roots`
///   (bool, default false) lets `ca_file` hold more than one self-signed certificate;
///   `batch` (duration, default 2s, at most 1h): items reaching the notary within one window
///   share one time-stamp over their hash tree, each with its own RFC 4998 evidence record
///   (`0s`: one token per item); `renew_before` (duration, default 180d): time-stamp renewal of
///   proofs whose newest token's signing certificate expires within it
/// - `opentimestamps`: `calendars` (non-empty list of calendar URLs), `min_calendars` (default
///   2, or 1 with one calendar: how many must answer a submission), `upgrade_urls` (further
///   calendar URLs a proof's pending attestations may be upgraded from; the calendars' own are
///   always allowed, no other URL a proof names is ever contacted), `headers_url` (required: an
///   Esplora-style source of Bitcoin block headers the operator trusts; a Bitcoin attestation
///   counts only when its message is the merkle root of that source's header), `batch` (duration,
///   default 2s, more than 0: items of one window share one submission of their tree's root),
///   `network` (`bitcoin`, default, or `regtest` for a test chain), `confirmations` (default 6:
///   blocks, the attesting one included, before an attestation counts)
/// File paths are absolute (resolved relative to the config file's directory).
public struct NotaryConfig: Sendable, Equatable {
    public var name: String
    public var kind: NotaryKind
    public var baseURL: String?
    /// Name of the environment variable holding the API key (never the key itself).
    public var apiKeyEnv: String?
    /// Absolute path of a file holding the API key (must be mode 0600 when read).
    public var apiKeyFile: String?
    /// Seconds before the first poll of a pending proof.
    public var pollFirst: Double
    /// Upper bound, in seconds, of the backoff between polls.
    public var pollMax: Double
    public var urls: [String]
    public var caFile: String?
    /// Pinned SHA-256 fingerprints (`AB:CD:…`) of TSA signing certificates (`tsa_cert_sha256`).
    public var tsaCertSHA256: [String] = []
    /// `allow_many_roots`: whether `ca_file` may hold more than one self-signed (root)
    /// certificate. Off by default: a second root appended to the file is how someone who can
    /// write it makes tokens from a TSA of their own verify (see `CAFileRoots`).
    public var allowManyRoots = false
    public var tlsCAFile: String?
    public var timeouts = HTTPTimeouts()
    /// `batch`: seconds of one time-stamp window of an rfc3161 notary (0: a token per item).
    public var batch: Double = 2
    /// `renew_before`: how long before the signing certificate of a proof's newest time-stamp
    /// expires it is renewed (RFC 4998 §5.2). Default 180 days.
    public var renewBefore: Double = 180 * 86_400
    /// `calendars` of an opentimestamps notary.
    public var calendars: [String] = []
    /// `upgrade_urls`: further calendars a pending attestation may be upgraded from.
    public var upgradeURLs: [String] = []
    /// `headers_url`: the Esplora-style block header source Bitcoin attestations are checked against.
    public var headersURL: String?
    /// `min_calendars`: how many calendars must answer a submission.
    public var minCalendars = 1
    /// `network`: `bitcoin` (headers must carry real proof of work, `headers_url` https) or
    /// `regtest` (a test chain: headers need only meet their own target).
    public var otsNetwork = "bitcoin"
    /// `confirmations`: blocks (the attesting one included) before an attestation counts.
    public var confirmations = 6

    public init(
        name: String, kind: NotaryKind, baseURL: String? = nil, apiKeyEnv: String? = nil,
        apiKeyFile: String? = nil, pollFirst: Double = 10, pollMax: Double = 600,
        urls: [String] = [], caFile: String? = nil, tlsCAFile: String? = nil
    ) {
        self.name = name
        self.kind = kind
        self.baseURL = baseURL
        self.apiKeyEnv = apiKeyEnv
        self.apiKeyFile = apiKeyFile
        self.pollFirst = pollFirst
        self.pollMax = pollMax
        self.urls = urls
        self.caFile = caFile
        self.tlsCAFile = tlsCAFile
    }

    /// Where the API key comes from; read it with `ConfigLoader.readSecret`.
    public var apiKey: SecretSource? {
        if let apiKeyEnv { return .env(apiKeyEnv) }
        if let apiKeyFile { return .file(apiKeyFile) }
        return nil
    }
}

/// `kind` of a notary: `qed` (REST), `rfc3161` (time-stamp authority) or `opentimestamps`
/// (calendars, then Bitcoin).
public enum NotaryKind: String, Sendable, Equatable, CaseIterable {
    case qed
    case rfc3161
    case opentimestamps
}

/// What a URL in an OpenTimestamps proof may hold (the format's own rule: letters, digits and
/// `-._/:`, at most 1000 bytes): a calendar whose URL could not be named in a proof cannot be used.
public enum OTSURI {
    static let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._/:".utf8)
    public static func isValid(_ uri: String) -> Bool {
        !uri.isEmpty && uri.utf8.count <= 1000 && uri.utf8.allSatisfy { allowed.contains($0) }
    }
}

extension EvidenceConfig {
    /// The CA files of the configured RFC 3161 notaries, by notary name: what checks their
    /// tokens' signatures and goes into bundles.
    public var tsaCAFiles: [String: String] {
        var cas: [String: String] = [:]
        for (name, n) in notaries where n.kind == .rfc3161 { if let ca = n.caFile { cas[name] = ca } }
        return cas
    }
}
