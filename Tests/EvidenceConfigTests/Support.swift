import EvidenceConfig
import Foundation
import Testing

/// A fresh temporary folder, removed when released.
final class TempDir {
    let path: String

    init() throws {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("evidence-config-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` to `name` (subfolders created) and returns the absolute path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: Int? = nil) throws -> String {
        let file = path + "/" + name
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: file, atomically: false, encoding: .utf8)
        if let mode {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
        }
        return file
    }
}

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
    let file: String
    do { file = try dir.write("evidence.toml", text) } catch { fatalError("cannot write test file: \(error)") }
    return try ConfigLoader.load(path: file, environment: [:], currentDirectory: dir.path)
}

/// Loads `text` as rule `name`.toml in `dir`.
func loadRule(_ text: String, named name: String = "bodycam", in dir: TempDir) throws(ConfigError) -> WatchRule {
    let file: String
    do { file = try dir.write("watch-rules/\(name).toml", text) } catch { fatalError("cannot write test file: \(error)") }
    return try ConfigLoader.loadRule(file: file)
}

/// Loads `text` as an evidence.toml written to a fresh temp folder.
func loadConfigText(_ text: String) throws -> EvidenceConfig {
    let dir = try TempDir()
    return try ConfigLoader.load(path: try dir.write("evidence.toml", text))
}
