import EvidenceProcess
import Foundation

/// Go's `golang.org/x/mod/sumdb/tlog` (Debian golang-golang-x-mod-dev), run on custody trees by
/// `scripts/oracles/tlog_check.go`: the RFC 9162 oracle we did not write (the Go checksum
/// database's own inclusion and consistency proofs).
public enum GoTlog {
    public static let oracle = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/oracles/tlog_check.go").path

    public enum Failure: Error, CustomStringConvertible {
        case build(String)
        public var description: String { switch self { case .build(let s): "cannot build \(oracle): \(s)" } }
    }

    /// `tlog_check bundle DIR`: every inclusion proof of a bundle's custody/.
    public static func checkBundle(_ dir: String) throws -> ChildProcess.Result {
        try ChildProcess.run(try binary(), ["bundle", dir])
    }

    /// `tlog_check log HASHES CHECKPOINTS.json`: every checkpoint's root from the events' hashes,
    /// and every consistency proof of `evidence log checkpoints --json`.
    public static func checkLog(hashes: String, checkpoints: String) throws -> ChildProcess.Result {
        try ChildProcess.run(try binary(), ["log", hashes, checkpoints])
    }

    /// Built once per version of the source (GOPATH mode: Debian's packages, no module download),
    /// into a file named after the source's hash, renamed into place.
    static func binary() throws -> String {
        let built = Self.built
        if let path = built.path { return path }
        throw Failure.build(built.error)
    }

    static let built: (path: String?, error: String) = {
        guard let source = FileManager.default.contents(atPath: oracle) else { return (nil, "no source") }
        let digest = String(source.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }, radix: 16)
        let path = NSTemporaryDirectory() + "evidence-tlog-check-" + digest
        if FileManager.default.isExecutableFile(atPath: path) { return (path, "") }
        let staging = path + ".\(getpid()).\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: staging) }
        let env = ["GO111MODULE=off", "GOPATH=/usr/share/gocode", "GOCACHE=" + NSTemporaryDirectory() + "evidence-go-cache",
                   "HOME=" + NSTemporaryDirectory(), "PATH=/usr/lib/go/bin:/usr/bin:/bin"]
        guard let result = try? ChildProcess.run("env", env + ["go", "build", "-o", staging, oracle]) else { return (nil, "go did not run") }
        guard result.status == 0 else { return (nil, result.output) }
        if rename(staging, path) != 0 && !FileManager.default.isExecutableFile(atPath: path) { return (nil, "rename failed") }
        return (path, "")
    }()
}
