import EvidenceConfig
import EvidenceNotary

/// A TSA's `ca_file` holds one root unless the notary says otherwise (`allow_many_roots = true`).
/// Appending a second, self-made root to the file keeps the real TSA's tokens verifying and
/// makes the appender's own tokens verify too: exactly how a rewritten custody log was anchored
/// "cleanly" (issue 28). So a second root is refused wherever the config is loaded.
public enum CAFileRoots {
    /// Throws for the first rfc3161 notary (by name) whose `ca_file` holds more than one
    /// self-signed certificate, naming the file, the count and each root's subject. A file that
    /// cannot be read or holds no certificate passes here: using it fails with its own message.
    public static func check(_ config: EvidenceConfig) throws(ConfigError) {
        for (name, notary) in config.notaries.sorted(by: { $0.key < $1.key }) where notary.kind == .rfc3161 && !notary.allowManyRoots {
            guard let ca = notary.caFile, let roots = try? TSACertificates.roots(pemFile: ca), roots.count > 1 else { continue }
            throw ConfigError(file: config.file ?? "evidence.toml", field: "notaries.\(name).ca_file",
                              message: "\(ca) holds \(roots.count) root (self-signed) certificates: "
                                  + roots.map { "\"\($0.subject)\" (SHA-256 \($0.sha256))" }.joined(separator: ", ")
                                  + ". A TSA has one root: a second one appended to the file makes tokens signed by anyone holding it verify. "
                                  + "Keep only the root the TSA publishes, or set allow_many_roots = true in [notaries.\(name)] if it really has several")
        }
    }
}
