import EvidenceProcess
import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import EvidencePortal
import EvidenceStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// A temp home with real items (stored objects, catalog records), removed when released.
final class PortalFixture {
    let dir: String
    let home: EvidenceHome
    static let user = "auditor"
    static let password = "correct horse battery staple"
    static let token = "t0ken-for-scripts"

    init() throws {
        dir = NSTemporaryDirectory() + "/evidence-portal-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/drop", withIntermediateDirectories: true)
        home = try EvidenceHome(path: dir + "/home")
    }

    deinit {
        _ = try? ChildProcess.run("/bin/chmod", ["-R", "u+rwX", dir])
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Writes `data` as drop/`name` and ingests it; returns the item.
    @discardableResult
    func ingest(_ name: String, _ data: Data) throws -> Item {
        let path = dir + "/drop/" + name
        _ = FileManager.default.createFile(atPath: path, contents: data)
        guard case .ingested(let outcome) = Ingestor(home: home, actor: "test").ingest(path: path) else {
            throw FixtureError.ingest(path)
        }
        return outcome.item
    }

    /// Stores `data` as an object (like a certificate or receipt) and returns its digest.
    func storeObject(_ data: Data) throws -> SHA256Digest {
        let path = dir + "/object-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: path, contents: data)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try home.store.ingest(path: path).digest
    }

    func portal(throttle: LoginThrottle = LoginThrottle()) throws -> Portal {
        Portal(home: home, options: .init(host: "127.0.0.1", port: 0,
                                          auth: try PortalAuth(token: Self.token, user: Self.user, password: Self.password),
                                          loginThrottle: throttle))
    }

    func app(throttle: LoginThrottle = LoginThrottle()) throws -> Application<PortalResponder> {
        var logger = Logger(label: "portal-test")
        logger.logLevel = .warning
        return try portal(throttle: throttle).makeApplication(logger: logger)
    }

    static var basic: HTTPFields {
        [.authorization: "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
    }

    enum FixtureError: Error { case ingest(String) }
}

extension TestResponse {
    var text: String { String(buffer: body) }
}

/// Runs `argv` and returns its exit status and output.
func run(_ argv: [String], cwd: String? = nil) throws -> (status: Int32, out: String) {
    let r = try ChildProcess.run(argv[0], Array(argv.dropFirst()), directory: cwd)
    return (r.status, r.output)
}
