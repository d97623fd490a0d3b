import EvidenceCore
import Foundation

/// Where a PostgreSQL catalog lives: from `[catalog] url = "postgres://user@host:port/db"`,
/// with the password given apart (`password_env` / `password_file`, never in the URL) and
/// `tls_ca_file` for a server off this host (TLS with full verification is then required).
public struct PostgresTarget: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var database: String
    public var user: String
    public var password: String?
    public var tlsCAFile: String?

    public init(host: String, port: Int = 5432, database: String, user: String, password: String? = nil, tlsCAFile: String? = nil) {
        self.host = host; self.port = port; self.database = database; self.user = user
        self.password = password; self.tlsCAFile = tlsCAFile
    }

    /// Parses `postgres://user@host[:port]/database` (`PostgresURL`: a password inside is refused).
    public static func parse(_ url: String) throws(CatalogError) -> PostgresTarget {
        switch PostgresURL.parse(url) {
        case .success(let u): return PostgresTarget(host: u.host, port: u.port, database: u.database, user: u.user)
        case .failure(let refusal): throw .open(path: "[catalog] url", detail: refusal.description)
        }
    }

    /// Loopback or a local socket folder: the only places a catalog may be reached without TLS.
    public var isLocal: Bool { PostgresURL.isLocal(host: host) }

    /// `host:port/database` as user@…, never with the password: for messages.
    public var label: String { "postgres://\(user)@\(host.hasPrefix("/") ? "[\(host)]" : host):\(port)/\(database)" }
}
