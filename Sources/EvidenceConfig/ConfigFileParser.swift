import EvidenceArchive
import EvidenceCore
import Foundation

/// Turns a parsed `evidence.toml` into an `EvidenceConfig` (all checks that need only this file).
enum ConfigFileParser {
    static let rootKeys: Set<String> = ["home", "rules", "log_level", "log_format", "workers", "notaries", "archives", "serve", "metrics", "custody", "catalog", "node", "store", "anchor_permissions", "timezone"]

    /// `absolutePath` becomes `EvidenceConfig.file`; relative paths resolve against `r.baseDirectory`.
    static func parse(_ r: TOMLReader, absolutePath: String) throws(ConfigError) -> EvidenceConfig {
        let root = r.root
        try r.checkKeys(root, allowed: rootKeys)
        var config = EvidenceConfig(file: absolutePath)
        config.home = try r.path(root, "home")
        config.rulesDir = try r.path(root, "rules")
        if let node = try r.string(root, "node") {
            guard node.count <= 64, node.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }) else {
                throw r.error(["node"], "\"\(node.prefix(80))\" is not a node name (up to 64 letters, digits, '-', '.', '_')")
            }
            config.node = node
        }
        if let tz = try r.string(root, "timezone") {
            guard let zone = LocalTime(identifier: tz) else {
                throw r.error(["timezone"], "\"\(tz.prefix(80))\" is not a time zone the zone database knows (e.g. \"Europe/Berlin\", \"America/New_York\", \"UTC\")")
            }
            config.timezone = zone
        }
        config.logLevel = try r.choice(root, "log_level", LogLevel.self) ?? .info
        config.logFormat = try r.choice(root, "log_format", LogFormat.self) ?? .text
        config.anchorPermissions = try r.choice(root, "anchor_permissions", AnchorPermissions.self) ?? .refuse
        if let w = try r.table(root, "workers") {
            try r.checkKeys(w, allowed: ["ingest", "jobs", "lease"])
            config.workers.ingest = try r.int(w, "ingest", range: Workers.allowedRange) ?? config.workers.ingest
            config.workers.jobs = try r.int(w, "jobs", range: Workers.allowedRange) ?? config.workers.jobs
            if let lease = try r.duration(w, "lease") {
                guard Workers.leaseRange.contains(lease) else {
                    throw r.error(w.path + ["lease"], "must be between 10s and 1h (how long before another runner takes a silent one's jobs)")
                }
                config.workers.lease = lease
            }
        }
        if let n = try r.table(root, "notaries") {
            for name in n.keys {
                let t = try r.require(r.table(n, name), n, name)
                config.notaries[name] = try notary(r, t, name: name)
            }
        }
        if let a = try r.table(root, "archives") {
            for name in a.keys {
                let t = try r.require(r.table(a, name), a, name)
                config.archives[name] = try archive(r, t, name: name)
            }
        }
        if let t = try r.table(root, "serve") {
            config.serve = try serve(r, t)
        }
        if let t = try r.table(root, "metrics") {
            config.metrics = try metrics(r, t)
        }
        if let t = try r.table(root, "catalog") {
            config.catalog = try catalog(r, t)
        }
        if let t = try r.table(root, "store") {
            config.store = try store(r, t)
        }
        if let t = try r.table(root, "custody") {
            config.custody = try custody(r, t, notaries: config.notaries, archives: config.archives)
        }
        return config
    }

    static func notary(_ r: TOMLReader, _ t: TOMLTableRef, name: String) throws(ConfigError) -> NotaryConfig {
        let kind = try r.require(r.choice(t, "kind", NotaryKind.self), t, "kind", hint: " (qed | rfc3161 | opentimestamps)")
        var allowed: Set<String> = HTTPTimeouts.keys.union(["kind", "poll_first", "poll_max", "tls_ca_file"])
        switch kind {
        case .qed: allowed.formUnion(["base_url", "api_key_env", "api_key_file"])
        case .rfc3161: allowed.formUnion(["urls", "ca_file", "tsa_cert_sha256", "allow_many_roots", "batch", "renew_before"])
        case .opentimestamps: allowed.formUnion(["calendars", "min_calendars", "upgrade_urls", "headers_url", "batch", "network", "confirmations"])
        }
        try r.checkKeys(t, allowed: allowed)
        var n = NotaryConfig(name: name, kind: kind)
        n.baseURL = try r.credentialURL(t, "base_url")
        let key = try r.secret(t, "api_key")
        n.apiKeyEnv = key.env
        n.apiKeyFile = key.file
        n.pollFirst = try r.duration(t, "poll_first") ?? n.pollFirst
        n.pollMax = try r.duration(t, "poll_max") ?? n.pollMax
        if n.pollFirst > n.pollMax {
            throw r.error(t.path + ["poll_first"], "must not be longer than `poll_max`")
        }
        n.caFile = try r.path(t, "ca_file")
        n.tlsCAFile = try r.path(t, "tls_ca_file")
        n.timeouts = try timeouts(r, t)
        switch kind {
        case .qed:
            if n.apiKey == nil {
                throw r.error(t.path + ["api_key_env"], "missing API key: set `api_key_env` or `api_key_file`")
            }
        case .rfc3161:
            let urls = try r.require(r.stringArray(t, "urls"), t, "urls", hint: " (the TSA's URLs)")
            guard !urls.isEmpty else { throw r.error(t.path + ["urls"], "must list at least one URL") }
            for (i, u) in urls.enumerated() {
                if let problem = TOMLReader.urlProblem(u) { throw r.error(t.path + ["urls"], problem, element: i) }
            }
            n.urls = urls
            n.tsaCertSHA256 = try fingerprints(r, t, "tsa_cert_sha256")
            n.allowManyRoots = try r.bool(t, "allow_many_roots") ?? false
            n.batch = try r.duration(t, "batch", allowZero: true) ?? n.batch
            n.renewBefore = try r.duration(t, "renew_before") ?? n.renewBefore
            guard n.batch <= 3600 else {
                throw r.error(t.path + ["batch"], "must be at most 1h (a longer window only delays every proof)")
            }
            // A token's signature is only worth something against an anchor the operator chose.
            if n.caFile == nil && n.tsaCertSHA256.isEmpty {
                throw r.error(t.path + ["ca_file"], "missing required field (the TSA's CA certificate, PEM, obtained from the TSA; "
                    + "or tsa_cert_sha256 = the SHA-256 fingerprint of its signing certificate): without it no token's signature can be verified")
            }
        case .opentimestamps:
            func urlList(_ key: String, required: Bool) throws(ConfigError) -> [String] {
                let list = required ? try r.require(r.stringArray(t, key), t, key, hint: " (the calendars' URLs)") : try r.stringArray(t, key) ?? []
                if required && list.isEmpty { throw r.error(t.path + [key], "must list at least one calendar URL") }
                for (i, u) in list.enumerated() {
                    if let problem = TOMLReader.urlProblem(u) { throw r.error(t.path + [key], problem, element: i) }
                    if !OTSURI.isValid(u) {
                        throw r.error(t.path + [key], "\"\(u.prefix(100))\": a calendar URL may hold only letters, digits and -._/: "
                                      + "(what an OpenTimestamps proof can name)", element: i)
                    }
                }
                return list
            }
            n.calendars = try urlList("calendars", required: true)
            n.upgradeURLs = try urlList("upgrade_urls", required: false)
            let headers = try r.require(r.string(t, "headers_url"), t, "headers_url",
                                        hint: " (an Esplora-style block header source you trust, e.g. https://blockstream.info/api)")
            if let problem = TOMLReader.urlProblem(headers) { throw r.error(t.path + ["headers_url"], problem) }
            n.headersURL = headers
            n.otsNetwork = try r.string(t, "network") ?? "bitcoin"
            guard ["bitcoin", "regtest"].contains(n.otsNetwork) else {
                throw r.error(t.path + ["network"], "\"\(TerminalText.escape(String(n.otsNetwork.prefix(40))))\" is not a network: bitcoin or regtest")
            }
            // The header source is the trust anchor of every Bitcoin attestation: reached over TLS,
            // unless it is this machine (a node of one's own).
            if n.otsNetwork == "bitcoin", !headers.lowercased().hasPrefix("https://"), !Self.isLoopback(url: headers) {
                throw r.error(t.path + ["headers_url"], "must be https:// (or a node on this machine): the block headers it serves "
                              + "decide what every Bitcoin attestation proves")
            }
            n.confirmations = try r.int(t, "confirmations", range: 1...1000) ?? 6
            let minimum = try r.int(t, "min_calendars", range: 1...max(1, n.calendars.count)) ?? min(2, n.calendars.count)
            guard minimum >= 1, minimum <= n.calendars.count else {
                throw r.error(t.path + ["min_calendars"], "must be 1…\(n.calendars.count) (how many of the \(n.calendars.count) calendars must answer)")
            }
            n.minCalendars = minimum
            n.batch = try r.duration(t, "batch") ?? n.batch
            guard n.batch <= 3600 else {
                throw r.error(t.path + ["batch"], "must be at most 1h (a longer window only delays every proof)")
            }
        }
        return n
    }

    /// Whether a URL's host is this machine (127.0.0.0/8, ::1, localhost).
    static func isLoopback(url: String) -> Bool {
        guard let host = URLComponents(string: url)?.host?.lowercased() else { return false }
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// A SHA-256 certificate fingerprint, or a list of them, in any common spelling
    /// (`ab12…`, `AB:12:…`), returned as upper-case colon-separated pairs.
    static func fingerprints(_ r: TOMLReader, _ t: TOMLTableRef, _ key: String) throws(ConfigError) -> [String] {
        let texts: [String]
        if case .string = t[key] {
            texts = try r.string(t, key).map { [$0] } ?? []
        } else {
            texts = try r.stringArray(t, key) ?? []
        }
        var out: [String] = []
        for (i, text) in texts.enumerated() {
            let hex = text.filter { !$0.isWhitespace && $0 != ":" }.uppercased()
            guard hex.count == 64, hex.allSatisfy(\.isHexDigit) else {
                throw r.error(t.path + [key], "\"\(text.prefix(100))\" is not a SHA-256 fingerprint (64 hex digits, colons allowed; "
                    + "`openssl x509 -in tsa.crt -noout -fingerprint -sha256` prints it)", element: texts.count > 1 ? i : nil)
            }
            out.append(stride(from: 0, to: 64, by: 2).map { String(Array(hex)[$0..<$0 + 2]) }.joined(separator: ":"))
        }
        return out
    }

    static func archive(_ r: TOMLReader, _ t: TOMLTableRef, name: String) throws(ConfigError) -> ArchiveConfig {
        let kinds = ArchiveKind.allCases.map(\.rawValue).joined(separator: " | ")
        let kind = try r.require(r.choice(t, "kind", ArchiveKind.self), t, "kind", hint: " (\(kinds))")
        try r.checkKeys(t, allowed: ArchiveConfig.allowedKeys(for: kind).union(["kind"]))
        var settings: [String: String] = [:]
        for key in t.keys where key != "kind" && !HTTPTimeouts.keys.contains(key) {
            if key.hasSuffix("_env") {
                settings[key] = try r.envName(t, key)
            } else if key.hasSuffix("_file") || key == "path" {
                settings[key] = try r.path(t, key)
            } else if key == "url" || key.hasSuffix("_url") {
                settings[key] = try r.credentialURL(t, key)
            } else {
                settings[key] = try r.scalarText(t, key)
            }
        }
        for key in t.keys where key.hasSuffix("_env") {
            let base = String(key.dropLast(4))
            if settings[base + "_file"] != nil {
                throw r.error(t.path + [base + "_file"], "set only one of `\(base)_env` and `\(base)_file`")
            }
        }
        let required = ArchiveConfig.requiredKeys(for: kind)
        for key in required.plain where settings[key] == nil {
            throw r.error(t.path + [key], "missing required field for kind \(kind.rawValue)")
        }
        for base in required.secrets where settings[base + "_env"] == nil && settings[base + "_file"] == nil {
            throw r.error(t.path + [base + "_env"], "missing secret: set `\(base)_env` or `\(base)_file`")
        }
        let descriptor = ProviderRegistry.descriptor(kind)
        for (key, values) in descriptor.choices.sorted(by: { $0.key < $1.key }) {
            if let value = settings[key], !values.contains(value) {
                throw r.error(t.path + [key], "invalid value \"\(value)\"; expected one of: \(values.joined(separator: " | "))")
            }
        }
        for group in descriptor.together {
            let set = group.filter { settings[$0] != nil }
            if !set.isEmpty, set.count < group.count, let missing = group.first(where: { settings[$0] == nil }) {
                throw r.error(t.path + [missing], group.map { "`\($0)`" }.joined(separator: " and ") + " go together")
            }
        }
        return ArchiveConfig(name: name, kind: kind, settings: settings, timeouts: try timeouts(r, t))
    }
}
