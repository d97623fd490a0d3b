import Foundation

extension ConfigLoader {
    /// Cross-checks rules against the config and each other. Returns every problem found:
    /// - each `notary` name must be a `[notaries.NAME]`, `archive` an `[archives.NAME]`;
    /// - no two rules watch the same folder, and no rule's folder lies inside one watched recursively by another;
    /// - a rule's folder is not inside `config.home` (nor `home` inside a recursively watched folder);
    /// - an `after = "move:DIR"` destination is not inside any rule's watched folder.
    ///
    /// Set `config.home` to the effective home (after `--home`/`$EVIDENCE_HOME`) before calling;
    /// nil skips the home check. Errors name the rule file (absolute) and, when found, the line.
    public static func validate(rules: [WatchRule], against config: EvidenceConfig) -> [ConfigError] {
        var errors: [ConfigError] = []
        var indexes: [String: KeyLineIndex] = [:]
        func fail(_ rule: WatchRule, _ field: String, _ message: String, element: Int? = nil) {
            if indexes[rule.file] == nil {
                let source = FileManager.default.contents(atPath: rule.file).flatMap { String(data: $0, encoding: .utf8) }
                indexes[rule.file] = KeyLineIndex(source: source ?? "")
            }
            var name = field
            if let element { name += "[\(element)]" }
            errors.append(ConfigError(
                file: rule.file, line: indexes[rule.file]?.line(for: [field]), field: name, message: message))
        }
        let configName = config.file ?? "the embedded defaults"

        for rule in rules {
            for (i, n) in rule.notary.enumerated() where config.notaries[n] == nil {
                fail(rule, "notary", "unknown notary `\(n)`; " + known(config.notaries.keys, "notaries", configName), element: i)
            }
            if let a = rule.archive {
                // A local archive's "link" is the file's file:// URL (recorded with a note saying so).
                if config.archives[a] == nil {
                    fail(rule, "archive", "unknown archive `\(a)`; " + known(config.archives.keys, "archives", configName))
                }
            }
            if let home = config.home.map(PathText.normalize) {
                if PathText.isInside(rule.path, home) {
                    fail(rule, "path", "\(rule.path) is inside the evidence home \(home)")
                } else if rule.recursive && PathText.isInside(home, rule.path) {
                    fail(rule, "path", "\(rule.path) contains the evidence home \(home) and is watched recursively")
                }
            }
        }

        for (j, rule) in rules.enumerated() {
            for other in rules[..<j] {
                if rule.path == other.path {
                    fail(rule, "path", "\(rule.path) is already watched by rule `\(other.name)` (\(other.file))")
                } else if other.recursive && PathText.isInside(rule.path, other.path) {
                    fail(rule, "path", "\(rule.path) is inside \(other.path), watched recursively by rule `\(other.name)`")
                } else if rule.recursive && PathText.isInside(other.path, rule.path) {
                    fail(rule, "path", "\(rule.path) is watched recursively and contains \(other.path), watched by rule `\(other.name)`")
                }
            }
            if case .move(let dir) = rule.after {
                for other in rules where other.file != rule.file && PathText.isInside(dir, other.path) {
                    fail(rule, "after", "move destination \(dir) is inside \(other.path), watched by rule `\(other.name)`")
                }
            }
        }
        return errors
    }

    private static func known(_ names: Dictionary<String, some Any>.Keys, _ what: String, _ configName: String) -> String {
        names.isEmpty
            ? "no \(what) are configured in \(configName)"
            : "configured \(what): " + names.sorted().joined(separator: ", ")
    }
}
