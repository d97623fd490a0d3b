import EvidenceCatalog
import EvidencePipeline
import EvidenceTesting
import Foundation
import Testing

/// A catalog knows which store it describes: a node whose home is not the shared one is
/// refused before it ingests objects that the other nodes could never read.
@Suite("Home: the catalog and the store belong together")
struct HomeStoreIdentityTests {
    @Test("a second home on the same PostgreSQL catalog is refused, naming both stores; the first opens again")
    func foreignHomeRefused() throws {
        guard let pg = PostgresServer.shared else {
            throw PostgresServer.Failure(description: "PostgreSQL test server unavailable: \(PostgresServer.unavailable)")
        }
        let db = try pg.makeDatabase()
        let target = PostgresTarget(host: "127.0.0.1", port: pg.port, database: db, user: pg.user, password: pg.password)
        let a = TempDirectory("home-a"), b = TempDirectory("home-b")
        _ = try EvidenceHome(path: a.path, catalog: .postgres(target))
        do {
            _ = try EvidenceHome(path: b.path, catalog: .postgres(target))
            Issue.record("a home with another store opened the shared catalog")
        } catch {
            #expect("\(error)".contains("is not the one"), "\(error)")
            #expect("\(error)".contains(b.path))
        }
        _ = try EvidenceHome(path: a.path, catalog: .postgres(target))
    }

    @Test("processes opening a new home at once agree on one store identity")
    func concurrentFirstOpen() async throws {
        let home = TempDirectory("home")
        try FileManager.default.createDirectory(atPath: home.path, withIntermediateDirectories: true)
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask { try await onOwnThread { try EvidenceHome.storeIDForTesting(home: home.path) } }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids.count == 1, "\(ids)")
        let onDisk = try String(contentsOfFile: home.path + "/store-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(ids == [onDisk])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: home.path).filter { $0.hasPrefix(".store-id") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}

private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
        Thread { c.resume(with: Result { try body() }) }.start()
    }
}
