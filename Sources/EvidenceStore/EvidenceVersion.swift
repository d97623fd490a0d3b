import Foundation
import EvidenceCore

/// The tool's version, printed by `evidence --version` and on every declaration it signs.
public enum EvidenceVersion {
    public static let string = "0.31.0"

    /// SHA-256 of the running executable (`/proc/self/exe`): which build produced a document.
    public static func executableSHA256() -> String? {
        guard let r = try? FileHasher.hash(path: "/proc/self/exe") else { return nil }
        return r.digest.hex
    }
}
