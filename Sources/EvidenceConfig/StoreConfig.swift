import EvidenceCore
import Foundation

/// The `[store]` table: where the content-addressed store is.
///
/// ```toml
/// [store]
/// kind = "s3"                                  # default "local": objects/ in the home
/// endpoint = "https://s3.eu-central-1.amazonaws.com"
/// bucket = "county-evidence"
/// region = "eu-central-1"                      # default us-east-1
/// access_key_env = "EVIDENCE_S3_ACCESS_KEY"    # or access_key_file
/// secret_key_file = "/etc/evidence/s3-secret"  # or secret_key_env
/// object_lock = "compliance"                   # optional: governance | compliance
/// retain = "7y"                                # with object_lock: 7y, 90d, 12h …
/// tls_ca_file = "/etc/evidence/s3-ca.pem"      # optional: a private CA
/// ```
public struct StoreConfig: Sendable, Equatable {
    public static let allowedKeys: Set<String> = [
        "kind", "endpoint", "bucket", "region", "access_key_env", "access_key_file", "secret_key_env", "secret_key_file",
        "object_lock", "retain", "tls_ca_file",
    ]

    public enum Kind: String, Sendable, CaseIterable { case local, s3 }
    public enum LockMode: String, Sendable, CaseIterable { case governance, compliance }
    public enum Retain: Sendable, Equatable {
        case years(Int)
        case seconds(Double)
    }

    public var kind: Kind
    public var endpoint: String?
    public var bucket: String?
    public var region: String
    public var accessKey: SecretSource?
    public var secretKey: SecretSource?
    public var objectLock: LockMode?
    public var retain: Retain?
    public var tlsCAFile: String?

    public init(kind: Kind = .local, endpoint: String? = nil, bucket: String? = nil, region: String = "us-east-1",
                accessKey: SecretSource? = nil, secretKey: SecretSource? = nil, objectLock: LockMode? = nil,
                retain: Retain? = nil, tlsCAFile: String? = nil) {
        self.kind = kind; self.endpoint = endpoint; self.bucket = bucket; self.region = region
        self.accessKey = accessKey; self.secretKey = secretKey; self.objectLock = objectLock
        self.retain = retain; self.tlsCAFile = tlsCAFile
    }

    /// `"7y"` (calendar years) or a duration (`"90d"`, `"12h"`).
    public static func parseRetain(_ text: String) -> Retain? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.hasSuffix("y"), let n = Int(t.dropLast()), n > 0, n <= 100 { return .years(n) }
        guard let s = try? DurationText.seconds(t), s > 0 else { return nil }
        return .seconds(s)
    }

    /// S3's bucket naming rules: 3–63 of `a-z 0-9 . -`, starting and ending with a letter or digit.
    static func bucketProblem(_ b: String) -> String? {
        let ok = (3...63).contains(b.count)
            && b.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" || $0 == "." }
            && b.first.map { $0.isLetter || $0.isNumber } == true && b.last.map { $0.isLetter || $0.isNumber } == true
        return ok ? nil : "\"\(b)\" is not a bucket name (3 to 63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit)"
    }
}

extension ConfigFileParser {
    static func store(_ r: TOMLReader, _ t: TOMLTableRef) throws(ConfigError) -> StoreConfig {
        try r.checkKeys(t, allowed: StoreConfig.allowedKeys)
        var config = StoreConfig()
        config.kind = try r.choice(t, "kind", StoreConfig.Kind.self) ?? .local
        guard config.kind == .s3 else {
            if let extra = t.keys.sorted().first(where: { $0 != "kind" }) {
                throw r.error(t.path + [extra], "only for kind = \"s3\" (the local store is objects/ in the home)")
            }
            return config
        }
        config.endpoint = try r.require(r.credentialURL(t, "endpoint"), t, "endpoint", hint: " (the S3 service's URL, e.g. https://s3.eu-central-1.amazonaws.com)")
        let bucket = try r.require(r.string(t, "bucket"), t, "bucket")
        if let problem = StoreConfig.bucketProblem(bucket) { throw r.error(t.path + ["bucket"], problem) }
        config.bucket = bucket
        config.region = try r.string(t, "region") ?? "us-east-1"
        for base in ["access_key", "secret_key"] {
            let secret = try r.secret(t, base)
            guard let source = secret.env.map(SecretSource.env) ?? secret.file.map(SecretSource.file) else {
                throw r.error(t.path + [base + "_env"], "missing: set `\(base)_env` (an environment variable's name) or `\(base)_file` (a file with mode 0600)")
            }
            if base == "access_key" { config.accessKey = source } else { config.secretKey = source }
        }
        config.objectLock = try r.choice(t, "object_lock", StoreConfig.LockMode.self)
        if let text = try r.string(t, "retain") {
            guard config.objectLock != nil else {
                throw r.error(t.path + ["retain"], "only with object_lock = \"governance\" or \"compliance\"")
            }
            guard let retain = StoreConfig.parseRetain(text) else {
                throw r.error(t.path + ["retain"], "invalid retention \"\(text)\": expected years like \"7y\" or a duration like \"90d\"")
            }
            config.retain = retain
        } else if config.objectLock != nil {
            throw r.error(t.path + ["retain"], "missing: how long Object Lock keeps each object, e.g. \"7y\" or \"90d\"")
        }
        config.tlsCAFile = try r.path(t, "tls_ca_file")
        return config
    }
}
