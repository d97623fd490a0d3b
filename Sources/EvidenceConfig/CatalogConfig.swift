import EvidenceCore
import Foundation

/// The `[catalog]` table: where the catalog lives when it is not the SQLite file in the home.
///
/// ```toml
/// [catalog]
/// url = "postgres://evidence@db.example:5432/evidence"   # no password in the URL
/// password_file = "/etc/evidence/db-password"            # or password_env
/// tls_ca_file = "/etc/evidence/db-ca.pem"                # required unless the host is loopback
/// ```
///
/// Without the table the catalog is `catalog.sqlite` in the home (one host). With it, every
/// node that names the same database shares one catalog, one custody log and one job queue.
public struct CatalogConfig: Sendable, Equatable {
    public static let allowedKeys: Set<String> = ["url", "password_env", "password_file", "tls_ca_file"]
    /// `postgres://user@host[:port]/database`, checked: no password, a user, a host and a database.
    public var url: String
    public var user: String
    public var host: String
    public var port: Int
    public var database: String
    public var password: SecretSource?
    public var tlsCAFile: String?

    public init(url: String, user: String, host: String, port: Int = 5432, database: String,
                password: SecretSource? = nil, tlsCAFile: String? = nil) {
        self.url = url; self.user = user; self.host = host; self.port = port; self.database = database
        self.password = password; self.tlsCAFile = tlsCAFile
    }

    /// Loopback or a local socket folder: the only places reached without TLS.
    public var isLocal: Bool { PostgresURL.isLocal(host: host) }
}

extension ConfigFileParser {
    static func catalog(_ r: TOMLReader, _ t: TOMLTableRef) throws(ConfigError) -> CatalogConfig {
        try r.checkKeys(t, allowed: CatalogConfig.allowedKeys)
        let url = try r.require(r.string(t, "url"), t, "url", hint: " (postgres://user@host:port/database)")
        let parts: PostgresURL
        switch PostgresURL.parse(url) {
        case .success(let u): parts = u
        case .failure(let refusal): throw r.error(t.path + ["url"], refusal.description)
        }
        var config = CatalogConfig(url: url, user: parts.user, host: parts.host, port: parts.port, database: parts.database)
        let secret = try r.secret(t, "password")
        config.password = secret.env.map(SecretSource.env) ?? secret.file.map(SecretSource.file)
        config.tlsCAFile = try r.path(t, "tls_ca_file")
        guard config.isLocal || config.tlsCAFile != nil else {
            throw r.error(t.path + ["tls_ca_file"], "missing: a catalog off this host is reached only over TLS verified against "
                          + "this CA (the one that signed the PostgreSQL server's certificate)")
        }
        return config
    }
}
