import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import Foundation
import Glibc
import Logging
import EvidenceTesting
import Testing

/// A fresh folder, removed on `cleanup()`.
final class TempDir: @unchecked Sendable {
    let path: String
    init() {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("evidence-archive-\(UUID().uuidString.prefix(8))")
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    /// An existing folder, to make files in (not removed by anyone but its owner).
    init(existing: String) { path = existing }
    func cleanup() { try? FileManager.default.removeItem(atPath: path) }

    /// A file of `bytes` random bytes, copied from /dev/urandom a MiB at a time (fast even in
    /// debug builds, so big files do not hold up the test threads).
    func file(_ name: String, bytes: Int) -> String {
        let p = path + "/" + name
        let src = open("/dev/urandom", O_RDONLY), dst = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(src); close(dst) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var left = bytes
        while left > 0 {
            let n = buffer.withUnsafeMutableBytes { read(src, $0.baseAddress, min(left, 1 << 20)) }
            guard n > 0 else { break }
            _ = buffer.withUnsafeBytes { write(dst, $0.baseAddress, n) }
            left -= n
        }
        return p
    }
}

func httpClient() -> HTTPClient {
    HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "archive-tests"))
}

func hex(_ path: String, _ kind: ProviderHashKind) throws -> String { try kind.digest(of: path) }
