#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where a secret (API key, password, client secret, refresh token) comes from.
/// Config files never hold secrets inline: only `*_env` (a variable name) or `*_file` (a path).
public enum SecretSource: Sendable, Equatable {
    /// Name of an environment variable.
    case env(String)
    /// Absolute path of a file that must be mode 0600 (no access for group or others).
    case file(String)
}

extension ConfigLoader {
    /// Reads a secret. A file must be a regular file with no permission bits for group or
    /// others (like ssh); surrounding whitespace and the trailing newline are trimmed; an
    /// empty secret is an error. Errors name `configFile` and `field`, never the secret.
    public static func readSecret(
        _ source: SecretSource, field: String, configFile: String,
        environment: [String: String] = CommandEnvironment.current
    ) throws(ConfigError) -> String {
        func fail(_ message: String) -> ConfigError {
            ConfigError(file: configFile, field: field, message: message)
        }
        switch source {
        case .env(let name):
            guard let value = environment[name] else {
                throw fail("environment variable \(name) is not set")
            }
            let secret = value.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else { throw fail("environment variable \(name) is empty") }
            return secret
        case .file(let path):
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw fail("cannot open secret file \(path): \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0 else {
                throw fail("cannot stat secret file \(path): \(String(cString: strerror(errno)))")
            }
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                throw fail("secret file \(path) is not a regular file")
            }
            let mode = Int(st.st_mode) & 0o777
            if mode & 0o077 != 0 {
                let what = mode & 0o044 != 0 ? "readable" : "accessible"
                throw fail(
                    "secret file \(path) is \(what) by others (mode \(octal(mode))); run chmod 600 \(path)")
            }
            var data: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw fail("cannot read secret file \(path): \(String(cString: strerror(errno)))")
                }
                if n == 0 { break }
                data.append(contentsOf: buffer[0..<n])
                guard data.count <= 1 << 20 else { throw fail("secret file \(path) is larger than 1 MiB") }
            }
            guard let text = String(validating: data, as: UTF8.self) else {
                throw fail("secret file \(path) is not UTF-8 text")
            }
            let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else { throw fail("secret file \(path) is empty") }
            return secret
        }
    }

    private static func octal(_ mode: Int) -> String {
        let s = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }
}

/// Which keys name secrets that must not be written inline.
enum SecretKeys {
    static let names: Set<String> = [
        "api_key", "apikey", "password", "passwd", "passphrase", "secret", "token",
        "app_secret", "client_secret", "refresh_token", "access_token", "private_key",
    ]

    /// True for `password`, `client_secret`, `refresh_token`, `*_password`, ... (not `*_env`/`*_file`).
    static func isInlineSecret(_ key: String) -> Bool {
        let k = key.lowercased()
        if k.hasSuffix("_env") || k.hasSuffix("_file") { return false }
        if names.contains(k) { return true }
        return ["_secret", "_password", "_token", "_api_key", "_passphrase", "_private_key"]
            .contains { k.hasSuffix($0) }
    }

    /// The operator-facing refusal for an inline secret `key`.
    static func message(for key: String) -> String {
        "secrets must not be written in config files; use `\(key)_env` (name of an environment variable) "
            + "or `\(key)_file` (path of a file with mode 0600)"
    }
}

/// The environment a command reads (`$EVIDENCE_HOME`, `$EVIDENCE_CONFIG`, `*_env` secrets): the
/// process's, or for a command run in-process by the CLI tests (`EvidenceCLI.run`) the one it
/// was given, as a child process would have been given it. Bound per task, so commands running
/// side by side in one test process each see their own.
public enum CommandEnvironment {
    @TaskLocal public static var values: [String: String]?

    public static var current: [String: String] { values ?? ProcessInfo.processInfo.environment }
}
