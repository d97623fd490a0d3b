import EvidenceProcess
import Foundation

/// Bouncy Castle's ERS (Debian libbcpkix-java), run on evidence records by `scripts/oracles/ERSCheck.java`:
/// the RFC 4998 oracle we did not write.
public enum BouncyCastleERS {
    public static let oracle = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/oracles/ERSCheck.java").path
    static let classPath = ["bcprov", "bcpkix", "bcutil"].map { "/usr/share/java/\($0).jar" }.joined(separator: ":")

    /// One JVM for all `pairs` (record, data file): one output line each, `RECORD: verified …` or
    /// `RECORD: refused: …`; succeeded when every record verified against `caFile` as of `at`.
    public static func check(_ pairs: [(record: String, data: String)], caFile: String, at: Date? = nil) throws -> ChildProcess.Result {
        let date = at.map { ISO8601DateFormatter().string(from: $0) } ?? "now"
        return try ChildProcess.run("java", ["-cp", classPath, oracle, caFile, date] + pairs.flatMap { [$0.record, $0.data] })
    }

    public static func check(record: String, data: String, caFile: String, at: Date? = nil) throws -> ChildProcess.Result {
        try check([(record, data)], caFile: caFile, at: at)
    }
}
