import EvidenceCore
import Foundation

/// A TOML table being read, with its key path from the document root.
struct TOMLTableRef: Sendable {
    var path: [String]
    var values: [String: TOMLNode]

    subscript(key: String) -> TOMLNode? { values[key] }
    var keys: [String] { values.keys.sorted() }
}

/// Typed getters over a parsed TOML document. Every failure is a `ConfigError` naming the
/// file, the line of the key (when found in the source) and the dotted field path.
/// A missing optional key yields nil; a key of the wrong type is an error, never "not found".
struct TOMLReader: Sendable {
    /// The file as the caller named it (used in messages).
    let file: String
    /// Directory that relative paths in this file are resolved against.
    let baseDirectory: String
    let index: KeyLineIndex
    let root: TOMLTableRef

    /// Reads and parses `path` (`file` is how messages name it).
    init(path: String, file: String) throws(ConfigError) {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
            throw ConfigError(file: file, message: "no such file")
        }
        guard !isDir.boolValue else { throw ConfigError(file: file, message: "is a directory, expected a TOML file") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError(file: file, message: "cannot read file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(file: file, message: "not UTF-8 text")
        }
        try self.init(source: text, file: file, baseDirectory: PathText.directory(of: path))
    }

    init(source: String, file: String, baseDirectory: String) throws(ConfigError) {
        self.file = file
        self.baseDirectory = baseDirectory
        self.index = KeyLineIndex(source: source)
        if let bad = index.badHeader {
            throw ConfigError(file: file, line: bad.line, column: bad.column,
                              message: "TOML syntax error: a table header's key must be bare (A-Z a-z 0-9 _ -) or quoted")
        }
        if let problem = TOMLGuard.check(source) {
            throw ConfigError(file: file, line: problem.line, column: problem.column,
                              message: "TOML syntax error: \(problem.message)")
        }
        self.root = TOMLTableRef(path: [], values: try TOMLNode.parse(source, file: file))
    }

    // MARK: Errors

    func error(_ path: [String], _ message: String, element: Int? = nil) -> ConfigError {
        var field = path.map(Self.displayKey).joined(separator: ".")
        if let element { field += "[\(element)]" }
        return ConfigError(file: file, line: index.line(for: path), field: path.isEmpty ? nil : field, message: message)
    }

    private static func displayKey(_ k: String) -> String {
        let bare = !k.isEmpty && k.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
        return bare ? k : "\"\(k)\""
    }

    private func typeError(_ path: [String], expected: String, found: TOMLNode, element: Int? = nil) -> ConfigError {
        error(path, "expected \(expected), found \(found.typeName)", element: element)
    }

    // MARK: Keys

    /// Rejects inline secrets first, then keys not in `allowed` (suggesting the closest allowed key).
    func checkKeys(_ t: TOMLTableRef, allowed: Set<String>) throws(ConfigError) {
        for key in t.keys where SecretKeys.isInlineSecret(key) {
            if allowed.contains(key + "_env") || allowed.contains(key + "_file") {
                throw error(t.path + [key], SecretKeys.message(for: key))
            }
            throw error(
                t.path + [key],
                "unknown field `\(key)` (secrets are never written in config files, only as `*_env` or `*_file`); allowed: "
                    + allowed.sorted().joined(separator: ", "))
        }
        for key in t.keys where !allowed.contains(key) {
            var message = "unknown field `\(key)`"
            if let s = Suggest.closest(to: key, in: allowed) { message += " (did you mean `\(s)`?)" }
            if allowed.isEmpty {
                message += "; this table takes no fields"
            } else {
                message += "; allowed: " + allowed.sorted().joined(separator: ", ")
            }
            throw error(t.path + [key], message)
        }
    }

    func require<T>(_ value: T?, _ t: TOMLTableRef, _ key: String, hint: String = "") throws(ConfigError) -> T {
        guard let value else { throw error(t.path + [key], "missing required field" + hint) }
        return value
    }

    // MARK: Scalars

    func string(_ t: TOMLTableRef, _ key: String, nonEmpty: Bool = true) throws(ConfigError) -> String? {
        guard let node = t[key] else { return nil }
        guard case .string(let s) = node else { throw typeError(t.path + [key], expected: "a string", found: node) }
        if nonEmpty && s.trimmingCharacters(in: .whitespaces).isEmpty {
            throw error(t.path + [key], "must not be empty")
        }
        return s
    }

    func int(_ t: TOMLTableRef, _ key: String, range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        guard let node = t[key] else { return nil }
        guard case .integer(let i) = node else { throw typeError(t.path + [key], expected: "an integer", found: node) }
        guard range.contains(i) else {
            throw error(t.path + [key], "must be between \(range.lowerBound) and \(range.upperBound), found \(i)")
        }
        return i
    }

    func bool(_ t: TOMLTableRef, _ key: String) throws(ConfigError) -> Bool? {
        guard let node = t[key] else { return nil }
        guard case .boolean(let b) = node else {
            throw typeError(t.path + [key], expected: "a boolean (true or false)", found: node)
        }
        return b
    }

    /// A string, integer, float or boolean, as text (for free-form settings and meta data).
    func scalarText(_ t: TOMLTableRef, _ key: String) throws(ConfigError) -> String? {
        guard let node = t[key] else { return nil }
        switch node {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .float(let d): return String(d)
        case .boolean(let b): return String(b)
        default: throw typeError(t.path + [key], expected: "a string, number or boolean", found: node)
        }
    }

    /// A duration string (`"500ms"`, `"2s"`, `"10m"`, `"30d"`), in seconds; must be > 0 unless `allowZero`.
    func duration(_ t: TOMLTableRef, _ key: String, allowZero: Bool = false) throws(ConfigError) -> Double? {
        guard let node = t[key] else { return nil }
        guard case .string(let s) = node else {
            throw typeError(t.path + [key], expected: "a duration string like \"2s\"", found: node)
        }
        let seconds: Double
        do {
            seconds = try DurationText.seconds(s)
        } catch {
            throw self.error(t.path + [key], error.description)
        }
        guard allowZero || seconds > 0 else { throw error(t.path + [key], "must be longer than zero") }
        return seconds
    }

    /// One of `E`'s raw values.
    func choice<E: RawRepresentable & CaseIterable>(_ t: TOMLTableRef, _ key: String, _: E.Type) throws(ConfigError) -> E?
    where E.RawValue == String {
        guard let s = try string(t, key, nonEmpty: false) else { return nil }
        guard let v = E(rawValue: s) else {
            let all = E.allCases.map(\.rawValue).joined(separator: " | ")
            throw error(t.path + [key], "invalid value \"\(s)\"; expected one of: \(all)")
        }
        return v
    }

    /// An `http://` or `https://` URL with a host and no user name or password in it.
    func url(_ t: TOMLTableRef, _ key: String) throws(ConfigError) -> String? {
        guard let s = try string(t, key) else { return nil }
        if let problem = Self.urlProblem(s) { throw error(t.path + [key], problem) }
        return s
    }

    /// A URL that requests carry credentials to (an API key, a token, a password): `https://`,
    /// or `http://` only to this machine (loopback: `localhost`, `127.0.0.0/8`, `::1`), where
    /// nobody on the network can read them.
    func credentialURL(_ t: TOMLTableRef, _ key: String) throws(ConfigError) -> String? {
        guard let s = try url(t, key) else { return nil }
        if let problem = Self.cleartextProblem(s) { throw error(t.path + [key], problem) }
        return s
    }

    static func cleartextProblem(_ s: String) -> String? {
        guard let c = URLComponents(string: s), c.scheme?.lowercased() == "http", let host = c.host?.lowercased() else { return nil }
        let loopback = host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
        return loopback ? nil : "\(s) is plain http:// to another host: the credentials sent with every request would "
            + "cross the network readable by anyone on the path; use https:// (http:// is accepted only for loopback)"
    }

    /// Why `s` is not a URL we accept, or nil. Never quotes a password written into it.
    static func urlProblem(_ s: String) -> String? {
        let shown = withoutUserinfo(s)
        if shown != s {
            return "a user name or password in the URL (\(shown)) is not allowed: secrets must not be written in config files; "
                + "give them with the table's `*_env` or `*_file` fields"
        }
        return isHTTPURL(s) ? nil : "invalid URL \"\(s)\": expected http:// or https:// with a host"
    }

    /// `s` with any `user:password@` replaced by `…@`, for messages.
    static func withoutUserinfo(_ s: String) -> String {
        guard let schemeEnd = s.range(of: "://") else { return s }
        let rest = s[schemeEnd.upperBound...]
        let authority = rest[..<(rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex)]
        guard let at = authority.lastIndex(of: "@") else { return s }
        return String(s[..<schemeEnd.upperBound]) + "…" + String(s[at...])
    }

    static func isHTTPURL(_ s: String) -> Bool {
        guard let u = URL(string: s), let scheme = u.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = u.host, !host.isEmpty else { return false }
        return true
    }

    /// A path, resolved absolute against `baseDirectory`.
    func path(_ t: TOMLTableRef, _ key: String) throws(ConfigError) -> String? {
        guard let s = try string(t, key) else { return nil }
        return PathText.resolve(s, relativeTo: baseDirectory)
    }

    /// The name of an environment variable (`[A-Za-z_][A-Za-z0-9_]*`).
    func envName(_ t: TOMLTableRef, _ key: String) throws(ConfigError) -> String? {
        guard let s = try string(t, key) else { return nil }
        guard Self.isEnvName(s) else {
            throw error(t.path + [key], "\"\(s)\" is not an environment variable name (letters, digits, _)")
        }
        return s
    }

    static func isEnvName(_ s: String) -> Bool {
        guard let f = s.first, f == "_" || (f.isASCII && f.isLetter) else { return false }
        return s.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }

    // MARK: Collections

    func stringArray(_ t: TOMLTableRef, _ key: String) throws(ConfigError) -> [String]? {
        guard let node = t[key] else { return nil }
        guard case .array(let items) = node else {
            throw typeError(t.path + [key], expected: "an array of strings", found: node)
        }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item else {
                throw typeError(t.path + [key], expected: "a string", found: item, element: i)
            }
            guard !s.isEmpty else { throw error(t.path + [key], "must not be empty", element: i) }
            out.append(s)
        }
        return out
    }

    func table(_ t: TOMLTableRef, _ key: String) throws(ConfigError) -> TOMLTableRef? {
        guard let node = t[key] else { return nil }
        guard case .table(let values) = node else { throw typeError(t.path + [key], expected: "a table", found: node) }
        return TOMLTableRef(path: t.path + [key], values: values)
    }

    /// For a secret `base`: the `base_env` / `base_file` pair, at most one of them set.
    func secret(_ t: TOMLTableRef, _ base: String) throws(ConfigError) -> (env: String?, file: String?) {
        let env = try envName(t, base + "_env")
        let file = try path(t, base + "_file")
        if env != nil && file != nil {
            throw error(t.path + [base + "_file"], "set only one of `\(base)_env` and `\(base)_file`")
        }
        return (env, file)
    }
}
