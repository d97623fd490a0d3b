import Foundation

/// `postgres://user@host[:port]/database` (or `postgresql://`), the one reading of a
/// PostgreSQL catalog URL for both the config file and `evidence catalog migrate --to`.
/// A password inside the URL is refused: it would sit in the clear in the config or on a
/// command line, and reach every message that names the catalog.
public struct PostgresURL: Sendable, Equatable {
    public var user: String
    public var host: String
    public var port: Int
    public var database: String

    /// The parts, or the reason the URL is refused (never repeating a password it carries).
    public static func parse(_ url: String) -> Result<PostgresURL, Refusal> {
        guard let c = URLComponents(string: url), let scheme = c.scheme, ["postgres", "postgresql"].contains(scheme) else {
            return .failure(Refusal("\"\(url.prefix(200))\" is not a postgres://user@host:port/database URL"))
        }
        guard c.password == nil else {
            return .failure(Refusal("the URL carries a password: remove it and set password_env or password_file"))
        }
        guard let host = c.host, !host.isEmpty else { return .failure(Refusal("the URL names no host")) }
        guard let user = c.user, !user.isEmpty else { return .failure(Refusal("the URL names no user (postgres://USER@host/database)")) }
        let database = String(c.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            return .failure(Refusal("the URL names no database (postgres://user@host/DATABASE)"))
        }
        guard c.query == nil else { return .failure(Refusal("the URL takes no ?options: set tls_ca_file and password_* apart")) }
        return .success(PostgresURL(user: user, host: host, port: c.port ?? 5432, database: database))
    }

    /// Loopback or a local socket folder: the only places a catalog is reached without TLS.
    public static func isLocal(host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.") || host.hasPrefix("/")
    }

    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}
