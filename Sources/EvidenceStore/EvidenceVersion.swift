import Foundation
import EvidenceCore

/// The tool's version, printed by `evidence --version` and on every declaration it signs.
public enum EvidenceVersion {
    public static let string = "0.31.0"

    /// SHA-256 of the executable (`path`, else the running one, `/proc/self/exe`): which build
    /// produced a document.
    public static func executableSHA256(path: String = "/proc/self/exe") -> String? {
        guard let r = try? FileHasher.hash(path: path) else { return nil }
        return r.digest.hex
    }
}
