import EvidenceConfig
import Foundation
import Testing
import EvidenceTesting

typealias TempDir = TempDirectory


/// The `ConfigError` thrown by `body`, or nil when it succeeded (any other error is recorded as a failure).
func configError<T>(_ body: () throws -> T) -> ConfigError? {
    do {
        _ = try body()
        return nil
    } catch let error as ConfigError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

/// Loads `text` as `evidence.toml` in `dir`.
func loadConfig(_ text: String, in dir: TempDir) throws(ConfigError) -> EvidenceConfig {
    try ConfigLoader.load(path: dir.write("evidence.toml", text), environment: [:], currentDirectory: dir.path)
}

/// Loads `text` as rule `name`.toml in `dir`.
func loadRule(_ text: String, named name: String = "bodycam", in dir: TempDir) throws(ConfigError) -> WatchRule {
    try ConfigLoader.loadRule(file: dir.write("watch-rules/\(name).toml", text))
}

/// Loads `text` as an evidence.toml written to a fresh temp folder.
func loadConfigText(_ text: String) throws -> EvidenceConfig {
    let dir = TempDir()
    return try ConfigLoader.load(path: dir.write("evidence.toml", text))
}
