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
        let program = compiled.map { ["-cp", classPath + ":" + $0, "ERSCheck"] } ?? ["-cp", classPath, oracle]
        return try ChildProcess.run("java", program + [caFile, date] + pairs.flatMap { [$0.record, $0.data] })
    }

    /// The oracle compiled once (`javac`, about 1.7 s) into a folder named after the source's
    /// hash: `java ERSCheck.java` compiles the source again on every run, 1.5 s of the 2 s a
    /// check took. Compiled beside and renamed into place, so processes compiling at once each end
    /// with a complete folder. nil (the source is run as it is) when javac is missing or fails.
    static let compiled: String? = {
        guard let source = FileManager.default.contents(atPath: oracle) else { return nil }
        // FNV-1a over the source: a name for this version of it, not a security check.
        let digest = String(source.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }, radix: 16)
        let dir = NSTemporaryDirectory() + "evidence-erscheck-" + digest
        if FileManager.default.fileExists(atPath: dir + "/ERSCheck.class") { return dir }
        let staging = dir + ".\(getpid()).\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: staging) }
        guard (try? FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)) != nil,
              let result = try? ChildProcess.run("javac", ["-nowarn", "-cp", classPath, "-d", staging, oracle]),
              result.status == 0, FileManager.default.fileExists(atPath: staging + "/ERSCheck.class") else { return nil }
        if rename(staging, dir) != 0 && !FileManager.default.fileExists(atPath: dir + "/ERSCheck.class") { return nil }
        return dir
    }()

    public static func check(record: String, data: String, caFile: String, at: Date? = nil) throws -> ChildProcess.Result {
        try check([(record, data)], caFile: caFile, at: at)
    }
}
