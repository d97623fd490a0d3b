import EvidenceCore
import Foundation

extension SharedLink {
    /// How the custody log names a share link: the first 16 hex digits of the SHA-256 of its
    /// URL. The URL itself is a bearer capability and is kept out of the log and its bundles;
    /// whoever holds the URL can still match it to its event.
    public static func id(of url: String) -> String { String(SHA256Hasher.hash(Data(url.utf8)).hex.prefix(16)) }
}
