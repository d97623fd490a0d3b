import EvidenceCatalog
import EvidenceTesting
import Foundation
import Testing

/// The two catalogs behind one contract: every test given `Backend.allCases` runs on both.
/// PostgreSQL is a real server (`PostgresServer`), a fresh database per test; when it cannot
/// be started the test fails saying why (scripts/deps.sh installs it), it is never skipped.
enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres

    var testDescription: String { rawValue }

    func make() throws -> any Catalog {
        switch self {
        case .sqlite:
            return try SQLiteCatalog.inMemory()
        case .postgres:
            return try Self.postgres()
        }
    }

    static func postgres() throws -> PostgresCatalog {
        try nodes(1).catalogs[0]
    }

    /// `count` catalogs on one fresh database, each with its own connections: several nodes.
    static func nodes(_ count: Int) throws -> (server: PostgresServer, database: String, catalogs: [PostgresCatalog]) {
        guard let server = PostgresServer.shared else {
            throw PostgresServer.Failure(description: "PostgreSQL test server unavailable: \(PostgresServer.unavailable)")
        }
        let database = try server.makeDatabase()
        return (server, database, try (0..<count).map { _ in try PostgresCatalog(target(server, database: database), headPath: nil) })
    }

    static func target(_ server: PostgresServer, database: String) -> PostgresTarget {
        PostgresTarget(host: "127.0.0.1", port: server.port, database: database, user: server.user, password: server.password)
    }
}
