import Foundation

/// Removes credentials from what we log and report. Used for every URL, header list and remote
/// text that leaves `HTTPClient`.
public enum Redact {
    public static let mask = "<redacted>"

    /// Query (and fragment) parameters whose values are masked, compared lowercased.
    public static let sensitiveParameters: Set<String> = [
        "access_token", "token", "key", "api_key", "apikey", "password", "passwd", "secret",
        "client_secret", "code", "refresh_token", "id_token", "sig", "signature",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
    ]

    /// Drops `user:password@` and masks the values of sensitive query parameters.
    /// `https://u:p@h/x?access_token=abc&a=1` → `https://h/x?access_token=<redacted>&a=1`.
    public static func url(_ s: String) -> String {
        // Without `@`, `?` and `#` there is no userinfo, query or fragment: nothing to redact
        // (nearly every URL we send; this runs for each request and its answer).
        if !s.utf8.contains(where: { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { return s }
        var rest = Substring(s)
        var out = ""
        if let schemeEnd = rest.range(of: "://") {
            out += rest[..<schemeEnd.upperBound]
            rest = rest[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            var authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@") {
                authority = authority[authority.index(after: at)...]
            }
            out += authority
            rest = rest[authorityEnd...]
        }
        var fragment: Substring?
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            out += rest[...question]
            out += maskParameters(rest[rest.index(after: question)...])
        } else {
            out += rest
        }
        if let fragment {
            out += "#" + (fragment.contains("=") ? maskParameters(fragment) : String(fragment))
        }
        return out
    }

    private static func maskParameters(_ query: Substring) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let eq = pair.firstIndex(of: "=") else { return String(pair) }
            let rawName = pair[..<eq]
            let name = (String(rawName).removingPercentEncoding ?? String(rawName)).lowercased()
            return sensitiveParameters.contains(name) ? "\(rawName)=\(mask)" : String(pair)
        }.joined(separator: "&")
    }

    /// Whether a header carries a credential: Authorization, Proxy-Authorization, Cookie,
    /// Set-Cookie, X-Api-Key, or any name containing "token" or "secret".
    public static func isSensitiveHeader(_ name: String) -> Bool {
        let n = name.lowercased()
        switch n {
        case "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key":
            return true
        default:
            return n.contains("token") || n.contains("secret")
        }
    }

    /// The same headers, in order, with sensitive values replaced by `<redacted>`.
    public static func headers(_ h: [(String, String)]) -> [(String, String)] {
        h.map { isSensitiveHeader($0.0) ? ($0.0, mask) : $0 }
    }

    /// Replaces every occurrence of each secret (longest first) with `<redacted>`.
    public static func text(_ s: String, secrets: [String]) -> String {
        var result = s
        for secret in Set(secrets).sorted(by: { $0.count > $1.count }) where !secret.isEmpty {
            result = result.replacingOccurrences(of: secret, with: mask)
        }
        return result
    }

    /// The credentials a request carries, so that an echo of them in a remote body or a curl
    /// message can be removed: sensitive header values (whole, the part after the auth scheme,
    /// decoded Basic credentials, cookie values), URL userinfo and sensitive query values.
    static func secrets(of request: HTTPRequest) -> [String] {
        secrets(url: request.url, headers: request.headers)
    }

    /// `secrets(of:)` of a request with this URL and these headers.
    static func secrets(url: String, headers: [(name: String, value: String)]) -> [String] {
        var found: [String] = []
        func add(_ s: some StringProtocol) {
            let t = s.trimmingCharacters(in: .whitespaces)
            if t.count >= 4 { found.append(t) }
        }
        for (name, value) in headers where isSensitiveHeader(name) {
            add(value)
            let lower = name.lowercased()
            if lower == "authorization" || lower == "proxy-authorization",
               let space = value.firstIndex(of: " ") {
                let scheme = value[..<space].lowercased()
                let credentials = value[value.index(after: space)...].trimmingCharacters(in: .whitespaces)
                add(credentials)
                if scheme == "basic", let data = Data(base64Encoded: credentials),
                   let decoded = String(data: data, encoding: .utf8) {
                    add(decoded)
                    if let colon = decoded.firstIndex(of: ":") {
                        add(decoded[decoded.index(after: colon)...])
                    }
                }
            }
            if lower == "cookie" || lower == "set-cookie" {
                for part in value.split(separator: ";") {
                    if let eq = part.firstIndex(of: "=") { add(part[part.index(after: eq)...]) }
                }
            }
        }
        if let schemeEnd = url.range(of: "://") {
            let afterScheme = url[schemeEnd.upperBound...]
            let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
            let authority = afterScheme[..<authorityEnd]
            if let at = authority.lastIndex(of: "@") {
                let userinfo = authority[..<at]
                add(userinfo)
                if let colon = userinfo.firstIndex(of: ":") {
                    let password = userinfo[userinfo.index(after: colon)...]
                    add(password)
                    if let decoded = String(password).removingPercentEncoding { add(decoded) }
                }
            }
        }
        if let question = url.firstIndex(of: "?") {
            let query = url[url.index(after: question)...].split(whereSeparator: { $0 == "&" || $0 == "#" })
            for pair in query {
                guard let eq = pair.firstIndex(of: "=") else { continue }
                let name = (String(pair[..<eq]).removingPercentEncoding ?? String(pair[..<eq])).lowercased()
                guard sensitiveParameters.contains(name) else { continue }
                let value = pair[pair.index(after: eq)...]
                add(value)
                if let decoded = String(value).removingPercentEncoding { add(decoded) }
            }
        }
        return found
    }

    /// A one-line, redacted, truncated rendering of a remote body for error messages.
    static func excerpt(_ data: Data, secrets: [String], limit: Int = 300) -> String {
        guard !data.isEmpty else { return "" }
        // Read a little more than the limit so a secret straddling the cut is still found.
        let head = data.prefix(limit * 4 + 1024)
        let decoded = String(decoding: head, as: UTF8.self)
        let oneLine = decoded.split(whereSeparator: { $0.isNewline || $0 == "\t" })
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
        let redacted = text(oneLine, secrets: secrets)
        if redacted.count <= limit && head.count == data.count {
            return redacted
        }
        return String(redacted.prefix(limit - 1)) + "…"
    }
}
