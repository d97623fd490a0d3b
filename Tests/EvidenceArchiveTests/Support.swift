import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import Foundation
import Glibc
import Logging
import EvidenceTesting
import Testing

/// A fresh folder, removed on `cleanup()`.
final class TempDir {
    let path: String
    init() {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("evidence-archive-\(UUID().uuidString.prefix(8))")
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func cleanup() { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String, bytes: Int) -> String {
        let p = path + "/" + name
        var g = SystemRandomNumberGenerator()
        let data = Data((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &g) })
        FileManager.default.createFile(atPath: p, contents: data)
        return p
    }
}

func httpClient() -> HTTPClient {
    HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "archive-tests"))
}

func hex(_ path: String, _ kind: ProviderHashKind) throws -> String {
    switch kind {
    case .sha256: return try FileHasher.hexDigest(path: path, algorithm: .sha256)
    case .sha1: return try FileHasher.hexDigest(path: path, algorithm: .sha1)
    case .md5: return try FileHasher.hexDigest(path: path, algorithm: .md5)
    case .dropbox: return try FileHasher.dropboxContentHash(path: path)
    }
}
