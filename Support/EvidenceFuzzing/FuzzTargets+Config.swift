import EvidenceConfig
import Foundation

extension FuzzTargets {
    static let tomlTokens = ["\n[", "]\n", "[[", "]]", " = ", "\"", "'''", "\"\"\"", "\\u", "#", ".", "{", "}", ",",
                             "\n", "\r\n", "true", "1979-05-27T07:32:00Z", "9223372036854775808", "-0", "nan", "inf",
                             "\"{sha8}\"", "\"move:\"", "\"1h30m\"", "\"0ms\"", "_env", "_file", "api_key", "password"]

    /// `evidence.toml` (TOMLKit + our validation): refused input is a `ConfigError` naming the file.
    static let config = FuzzTarget(
        name: "config", summary: "evidence.toml: ConfigLoader (TOMLKit + validation)", tokens: tomlTokens + [
            "[notaries.", "kind = \"qed\"", "kind = \"rfc3161\"", "[archives.", "kind = \"owncloud\"", "[serve]", "[metrics]",
            "listen = \"", "[workers]", "poll_first", "poll_max", "stall_timeout", "connect_timeout", "base_url = \"http://", "urls = [\"https://",
        ]
    ) { data throws(FuzzViolation) in
        guard let source = text(data) else { return }  // not UTF-8: refused before parsing (covered by the config tests)
        do throws(ConfigError) {
            _ = try ConfigLoader.parseConfig(source: source, file: "evidence.toml", baseDirectory: "/srv/evidence")
        } catch {
            try checkConfigError(error, file: "evidence.toml", source: source, target: "config")
        }
    }

    /// A watch rule file: refused input is a `ConfigError` naming the rule file.
    static let rule = FuzzTarget(
        name: "rule", summary: "watch-rules/*.toml: ConfigLoader.loadRule", tokens: tomlTokens + [
            "path = \"", "include = [", "after = \"move:", "remote_path = \"", "[share]", "access = \"", "[meta_data]",
            "{rule}", "{yyyy}", "{{", "}}", "{", "}", "..", "notary = [\"a\", \"a\"]",
        ]
    ) { data throws(FuzzViolation) in
        guard let source = text(data) else { return }
        do throws(ConfigError) {
            _ = try ConfigLoader.parseRule(source: source, name: "bodycam", file: "watch-rules/bodycam.toml",
                                           baseDirectory: "/srv/evidence/watch-rules")
        } catch {
            try checkConfigError(error, file: "watch-rules/bodycam.toml", source: source, target: "rule")
        }
    }

    /// The error promises of `ConfigError`: the file as given, a line inside the file, a message.
    static func checkConfigError(_ e: ConfigError, file: String, source: String, target: String) throws(FuzzViolation) {
        try require(e.file == file, target, "error names \(e.file), not \(file): \(e)")
        try require(!e.message.isEmpty, target, "error without a message: \(e)")
        try require(e.description.hasPrefix(file), target, "description does not start with the file: \(e)")
        if let line = e.line {
            let lines = source.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).count
            try require(line >= 1 && line <= lines + 1, target, "line \(line) outside the file's \(lines) lines: \(e)")
        }
        if let field = e.field { try require(!field.isEmpty, target, "empty field name: \(e)") }
    }
}
