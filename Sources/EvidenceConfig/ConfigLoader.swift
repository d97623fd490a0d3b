import Foundation

/// Loads and checks `evidence.toml` and watch rules. Every error names the file (as given),
/// the line when it can be found, and the field; nothing invalid passes silently
/// (unknown keys, wrong types, inline secrets, bad durations and templates are all rejected).
public enum ConfigLoader {
    /// Loads the service configuration.
    ///
    /// - `path` given: that file, which must exist (relative to `currentDirectory`).
    /// - `path` nil: `$EVIDENCE_CONFIG` if set and non-empty (must exist), else
    ///   `evidence.toml` in `currentDirectory` if present, else `EvidenceConfig.embeddedDefaults`.
    ///
    /// Relative paths inside the file are resolved against the file's directory.
    public static func load(
        path: String?,
        environment: [String: String] = CommandEnvironment.current,
        currentDirectory: String = FileManager.default.currentDirectoryPath
    ) throws(ConfigError) -> EvidenceConfig {
        let given: String
        if let path {
            given = path
        } else if let env = environment["EVIDENCE_CONFIG"], !env.isEmpty {
            given = env
        } else {
            let candidate = PathText.resolve("evidence.toml", relativeTo: currentDirectory)
            guard FileManager.default.fileExists(atPath: candidate) else { return .embeddedDefaults }
            given = "evidence.toml"
        }
        let absolute = PathText.resolve(given, relativeTo: currentDirectory)
        let reader = try TOMLReader(path: absolute, file: given)
        return try ConfigFileParser.parse(reader, absolutePath: absolute)
    }

    /// Loads one rule file; the rule's name is the file's stem. Relative paths inside it are
    /// resolved against the file's directory. Errors name `file` as given.
    public static func loadRule(file: String) throws(ConfigError) -> WatchRule {
        let absolute = PathText.resolve(file, relativeTo: PathText.currentDirectoryPath())
        let base = PathText.lastComponent(absolute)
        let name = base.hasSuffix(".toml") ? String(base.dropLast(5)) : base
        guard !name.isEmpty else { throw ConfigError(file: file, message: "a rule file needs a name before `.toml`") }
        let reader = try TOMLReader(path: absolute, file: file)
        return try RuleParser.parse(reader, name: name, absolutePath: absolute)
    }

    /// Parses `source` as the text of an `evidence.toml` that `file` names, as `load` does once
    /// the file is read; relative paths resolve against `baseDirectory`.
    package static func parseConfig(source: String, file: String, baseDirectory: String) throws(ConfigError) -> EvidenceConfig {
        let reader = try TOMLReader(source: source, file: file, baseDirectory: baseDirectory)
        return try ConfigFileParser.parse(reader, absolutePath: PathText.resolve(file, relativeTo: baseDirectory))
    }

    /// Parses `source` as the text of rule `name`, as `loadRule` does once the file is read.
    package static func parseRule(source: String, name: String, file: String, baseDirectory: String) throws(ConfigError) -> WatchRule {
        let reader = try TOMLReader(source: source, file: file, baseDirectory: baseDirectory)
        return try RuleParser.parse(reader, name: name, absolutePath: PathText.resolve(file, relativeTo: baseDirectory))
    }

    /// Loads every `*.toml` in `directory` (not recursive; hidden files skipped), sorted by name.
    /// Returns the rules that loaded and one error per file that did not — it does not stop at
    /// the first. A missing or unreadable directory is a single error.
    public static func loadRules(directory: String) -> (rules: [WatchRule], errors: [ConfigError]) {
        let absolute = PathText.resolve(directory, relativeTo: PathText.currentDirectoryPath())
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDir), isDir.boolValue else {
            return ([], [ConfigError(file: directory, message: "rules folder not found")])
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: absolute)
        } catch {
            return ([], [ConfigError(file: directory, message: "cannot list rules folder: \(error.localizedDescription)")])
        }
        var rules: [WatchRule] = []
        var errors: [ConfigError] = []
        for name in names.sorted() where name.hasSuffix(".toml") && !name.hasPrefix(".") {
            let shown = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            do {
                rules.append(try loadRule(file: shown))
            } catch {
                errors.append(error)
            }
        }
        return (rules, errors)
    }
}
