import EvidenceArchive
import EvidenceHTTP
import EvidenceStore
import Foundation
import Glibc
import Logging
import EvidenceSandbox
import Testing
import EvidenceTesting

typealias TempDir = TempDirectory

extension TempDirectory {
    func cleanup() { remove() }

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
            _ = buffer.withUnsafeBytes { Glibc.write(dst, $0.baseAddress, n) }
            left -= n
        }
        return p
    }
}

func httpClient() -> HTTPClient {
    HTTPClient(configuration: HTTPClientConfiguration(), logger: Logger(label: "archive-tests"))
}

func hex(_ path: String, _ kind: ProviderHashKind) throws -> String { try kind.digest(of: path) }
