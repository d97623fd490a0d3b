import EvidenceProcess
import Foundation
import Glibc
import EvidenceTesting

typealias TempDir = TempDirectory

extension TempDirectory {
    func file(_ name: String, _ data: Data) -> String { write(name, data) }
}

func randomData(_ n: Int) -> Data {
    var g = SystemRandomNumberGenerator()
    var d = Data(count: n)
    d.withUnsafeMutableBytes { raw in
        var i = 0
        while i + 8 <= n { raw.storeBytes(of: g.next() as UInt64, toByteOffset: i, as: UInt64.self); i += 8 }
        while i < n { raw[i] = UInt8.random(in: 0...255); i += 1 }
    }
    return d
}

/// Runs a command, returns stdout (trimmed) and exit status.
func run(_ args: [String]) -> (out: String, status: Int32) {
    let r = try! ChildProcess.run(args[0], Array(args.dropFirst()), separateStandardError: true)
    return (r.output.trimmingCharacters(in: .whitespacesAndNewlines), r.status)
}

func sha256sum(_ path: String) -> String {
    String(run(["sha256sum", path]).out.prefix(64))
}
