import EvidenceCore
import Foundation

/// Turns a parsed rule file into a `WatchRule` (all checks that need only this file).
enum RuleParser {
    static let keys: Set<String> = [
        "path", "include", "exclude", "recursive", "max_depth", "settle", "settle_max", "empty", "poll_interval", "notary", "archive",
        "remote_path", "share", "after", "name", "note", "meta_data", "nodes", "labels", "digests",
    ]
    static let shareKeys: Set<String> = ["access", "expires_in", "password_env", "password_file"]

    /// `absolutePath` becomes `WatchRule.file`; relative paths resolve against `r.baseDirectory`.
    static func parse(_ r: TOMLReader, name: String, absolutePath: String) throws(ConfigError) -> WatchRule {
        let t = r.root
        try r.checkKeys(t, allowed: keys)
        let path = try r.require(r.path(t, "path"), t, "path", hint: " (the folder to watch)")
        var rule = WatchRule(name: name, file: absolutePath, path: path)

        if let include = try r.stringArray(t, "include") {
            guard !include.isEmpty else {
                throw r.error(["include"], "must not be empty (omit `include` to take every file)")
            }
            rule.include = include
        }
        rule.exclude = try r.stringArray(t, "exclude") ?? []
        rule.recursive = try r.bool(t, "recursive") ?? true
        rule.maxDepth = try r.int(t, "max_depth", range: 1...WatchRule.maxDepthLimit) ?? rule.maxDepth
        rule.settle = try r.duration(t, "settle", allowZero: true) ?? rule.settle
        if let settleMax = try r.duration(t, "settle_max") {
            guard settleMax >= rule.settle else {
                throw r.error(["settle_max"], "is shorter than `settle` (\(rule.settle) s): the window only ever grows from `settle`")
            }
            rule.settleMax = settleMax
        } else {
            rule.settleMax = max(rule.settle, WatchRule.defaultSettleMax)
        }
        if let empty = try r.string(t, "empty") {
            guard let e = EmptyFiles(rawValue: empty) else {
                throw r.error(["empty"], "must be \"take\" or \"skip\", not \"\(empty)\"")
            }
            rule.empty = e
        }
        rule.pollInterval = try r.duration(t, "poll_interval")
        if let nodes = try r.stringArray(t, "nodes") {
            guard !nodes.isEmpty else { throw r.error(["nodes"], "must not be empty (omit `nodes` to watch on every node)") }
            rule.nodes = nodes
        }

        if let digests = try r.stringArray(t, "digests") {
            var out: [DigestAlgorithm] = []
            for (i, name) in digests.enumerated() {
                guard let a = DigestAlgorithm(rawValue: name) else {
                    throw r.error(["digests"], "\"\(name)\" is not a digest this tool computes: "
                                  + DigestAlgorithm.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "), element: i)
                }
                guard !digests[..<i].contains(name) else { throw r.error(["digests"], "lists `\(name)` twice", element: i) }
                if a != .sha256 { out.append(a) }
            }
            rule.digests = out
        }

        let notary = try r.stringArray(t, "notary") ?? []
        for (i, n) in notary.enumerated() where notary[..<i].contains(n) {
            throw r.error(["notary"], "lists `\(n)` twice", element: i)
        }
        rule.notary = notary
        rule.archive = try r.string(t, "archive")

        rule.remotePath = try template(r, t, "remote_path") ?? rule.remotePath
        if rule.remotePath.split(separator: "/").contains("..") {
            throw r.error(["remote_path"], "must not contain `..` segments")
        }
        rule.nameTemplate = try template(r, t, "name") ?? rule.nameTemplate
        rule.noteTemplate = try template(r, t, "note", nonEmpty: false) ?? rule.noteTemplate

        if let s = try r.table(t, "share") {
            rule.share = try share(r, s)
            if rule.archive == nil {
                throw r.error(["share"], "a share link needs an `archive`")
            }
        }
        if let after = try r.string(t, "after") {
            rule.after = try afterAction(r, after, watched: rule.path)
        }
        if let m = try r.table(t, "meta_data") {
            for key in m.keys {
                rule.metaData[key] = try r.scalarText(m, key)
            }
        }
        if let l = try r.table(t, "labels") {
            try r.checkKeys(l, allowed: CertificateLabels.keys)
            for key in l.keys {
                guard let v = try r.string(l, key) else { continue }
                if let p = CertificateLabels.valueProblem(v) { throw r.error(l.path + [key], p) }
                rule.labels.values[key] = v
            }
        }
        return rule
    }

    private static func template(_ r: TOMLReader, _ t: TOMLTableRef, _ key: String, nonEmpty: Bool = true) throws(ConfigError) -> String? {
        guard let s = try r.string(t, key, nonEmpty: nonEmpty) else { return nil }
        if let problem = Template.validate(s) { throw r.error(t.path + [key], problem) }
        return s
    }

    private static func share(_ r: TOMLReader, _ s: TOMLTableRef) throws(ConfigError) -> ShareSettings {
        try r.checkKeys(s, allowed: shareKeys)
        let accessHint = " (" + ShareAccess.allCases.map(\.rawValue).joined(separator: " | ") + ")"
        let access = try r.require(r.choice(s, "access", ShareAccess.self), s, "access", hint: accessHint)
        let password = try r.secret(s, "password")
        return ShareSettings(
            access: access, expiresIn: try r.duration(s, "expires_in"),
            passwordEnv: password.env, passwordFile: password.file)
    }

    /// `keep` | `delete` | `move:DIR`; DIR resolved against the rule's directory and outside `watched`.
    private static func afterAction(_ r: TOMLReader, _ text: String, watched: String) throws(ConfigError) -> AfterAction {
        switch text {
        case "keep": return .keep
        case "delete": return .delete
        default:
            guard text.hasPrefix("move:") else {
                throw r.error(["after"], "invalid value \"\(text)\"; expected keep | delete | move:DIR")
            }
            let dir = String(text.dropFirst(5)).trimmingCharacters(in: .whitespaces)
            guard !dir.isEmpty else { throw r.error(["after"], "`move:` needs a folder, e.g. \"move:/srv/done\"") }
            let target = PathText.resolve(dir, relativeTo: r.baseDirectory)
            if PathText.isInside(target, watched) {
                throw r.error(
                    ["after"], "move destination \(target) is inside the watched folder \(watched); files moved there would be taken again")
            }
            return .move(target)
        }
    }
}
