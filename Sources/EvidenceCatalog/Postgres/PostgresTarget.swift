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

    /// Parses `postgres://user@host[:port]/database` (or `postgresql://`). A password inside the
    /// URL is refused: it would sit in the config in the clear and reach every message that
    /// names the catalog.
    public static func parse(_ url: String) throws(CatalogError) -> PostgresTarget {
        let bad = { (why: String) -> CatalogError in .open(path: "[catalog] url", detail: why) }
        guard let c = URLComponents(string: url), let scheme = c.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw bad("\"\(url.prefix(200))\" is not a postgres://user@host:port/database URL")
        }
        guard c.password == nil else {
            throw bad("the URL carries a password: remove it and set password_env or password_file instead")
        }
        guard let host = c.host, !host.isEmpty else { throw bad("the URL names no host") }
        guard let user = c.user, !user.isEmpty else { throw bad("the URL names no user (postgres://USER@host/database)") }
        let database = String(c.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else { throw bad("the URL names no database (postgres://user@host/DATABASE)") }
        return PostgresTarget(host: host, port: c.port ?? 5432, database: database, user: user)
    }

    /// Loopback or a local socket folder: the only places a catalog may be reached without TLS.
    public var isLocal: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.") || host.hasPrefix("/")
    }

    /// `host:port/database` as user@…, never with the password: for messages.
    public var label: String { "postgres://\(user)@\(host.hasPrefix("/") ? "[\(host)]" : host):\(port)/\(database)" }
}
