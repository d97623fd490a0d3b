import Hummingbird

/// The providers' real host names, served by the one sandbox server.
///
/// Clients whose hosts cannot be configured (rclone's `dropbox` and `box` backends, the
/// providers' SDKs) reach the sandbox when those names resolve to it (an `/etc/hosts` entry in
/// a network namespace) and a TLS front forwards to its port. The request then says
/// `Host: api.dropboxapi.com` and asks for `/2/files/list_folder`; `HostRoutingResponder` turns
/// that into `/dropbox/api/2/files/list_folder` before the router sees it. Requests addressed
/// to any other host (`127.0.0.1:PORT`, as every other client is configured) are untouched.
///
/// URLs the emulations hand out (Box upload session endpoints and download redirects,
/// ShareFile chunk and download URIs) go back through `url(_:sandboxPath:)`, so a client that
/// came by a public name gets the public name's `https://` URL, as the real service answers.
public enum PublicHosts {
    struct Rule: Sendable {
        let host: String
        /// The path as the real service has it (`/2/`).
        let publicPrefix: String
        /// The same place in the sandbox (`/dropbox/api/2/`).
        let sandboxPrefix: String
    }

    /// Host, real path prefix, sandbox path prefix. A host may appear several times; the first
    /// matching prefix wins, both ways.
    static let rules: [Rule] = [
        Rule(host: "api.dropboxapi.com", publicPrefix: "/2/", sandboxPrefix: "/dropbox/api/2/"),
        Rule(host: "api.dropboxapi.com", publicPrefix: "/oauth2/token", sandboxPrefix: "/dropbox/api/oauth2/token"),
        Rule(host: "content.dropboxapi.com", publicPrefix: "/2/", sandboxPrefix: "/dropbox/content/2/"),
        // The version-1 OAuth paths, still served; the Dropbox Go SDK in rclone 1.60 uses them.
        Rule(host: "api.dropboxapi.com", publicPrefix: "/1/oauth2/token", sandboxPrefix: "/dropbox/api/oauth2/token"),
        Rule(host: "www.dropbox.com", publicPrefix: "/oauth2/authorize", sandboxPrefix: "/dropbox/oauth2/authorize"),
        Rule(host: "www.dropbox.com", publicPrefix: "/1/oauth2/authorize", sandboxPrefix: "/dropbox/oauth2/authorize"),
        Rule(host: "api.box.com", publicPrefix: "/2.0/", sandboxPrefix: "/box/api/2.0/"),
        Rule(host: "api.box.com", publicPrefix: "/oauth2/token", sandboxPrefix: "/box/api/oauth2/token"),
        Rule(host: "upload.box.com", publicPrefix: "/api/2.0/", sandboxPrefix: "/box/upload/api/2.0/"),
        Rule(host: "account.box.com", publicPrefix: "/api/oauth2/authorize", sandboxPrefix: "/box/api/oauth2/authorize"),
        // The older OAuth endpoints on the web host, still served (rclone's box backend uses them).
        Rule(host: "app.box.com", publicPrefix: "/api/oauth2/token", sandboxPrefix: "/box/api/oauth2/token"),
        Rule(host: "app.box.com", publicPrefix: "/api/oauth2/authorize", sandboxPrefix: "/box/api/oauth2/authorize"),
        // Box answers a content GET with a redirect to its download host.
        Rule(host: "dl.boxcloud.com", publicPrefix: "/d/", sandboxPrefix: "/box/dl/"),
        Rule(host: "sandbox.sf-api.com", publicPrefix: "/sf/v3/", sandboxPrefix: "/sharefile/sf/v3/"),
        Rule(host: "sandbox.sf-api.com", publicPrefix: "/oauth/token", sandboxPrefix: "/sharefile/oauth/token"),
        Rule(host: "secure.sharefile.com", publicPrefix: "/oauth/authorize", sandboxPrefix: "/sharefile/oauth/authorize"),
        // ShareFile's chunk URIs and download links point at a storage host of the tenant.
        Rule(host: "storage.sharefile.com", publicPrefix: "/upload/", sandboxPrefix: "/sharefile/upload/"),
        Rule(host: "storage.sharefile.com", publicPrefix: "/dl/", sandboxPrefix: "/sharefile/dl/"),
    ]

    /// Every host name the sandbox answers for, for a hosts file and a certificate's names.
    public static var hostNames: [String] {
        var seen: [String] = []
        for rule in rules where !seen.contains(rule.host) { seen.append(rule.host) }
        return seen
    }

    /// The sandbox path (with its query) for `path` on `authority`, or nil when `authority` is
    /// not one of the providers' hosts or the path is not one the sandbox serves there.
    static func sandboxPath(authority: String, path: String) -> String? {
        let host = hostName(authority)
        return rules.first { $0.host == host && path.hasPrefix($0.publicPrefix) }
            .map { $0.sandboxPrefix + path.dropFirst($0.publicPrefix.count) }
    }

    /// The absolute URL of `sandboxPath` for the client that sent `request`: the real service's
    /// `https://` URL when the request came by one of its host names, otherwise
    /// `http://HOST:PORT` + `sandboxPath` as the client addressed the sandbox.
    static func url(_ request: Request, sandboxPath: String) -> String {
        let authority = request.head.authority ?? "127.0.0.1"
        if rules.contains(where: { $0.host == hostName(authority) }),
           let rule = rules.first(where: { sandboxPath.hasPrefix($0.sandboxPrefix) }) {
            return "https://" + rule.host + rule.publicPrefix + sandboxPath.dropFirst(rule.sandboxPrefix.count)
        }
        return "http://" + authority + sandboxPath
    }

    /// `api.box.com` from `API.Box.com:443`.
    static func hostName(_ authority: String) -> String {
        let host = authority.split(separator: ":", maxSplits: 1).first.map(String.init) ?? authority
        return host.lowercased()
    }
}

/// Routes requests addressed to a provider's real host name to the sandbox path of its
/// emulation (see `PublicHosts`), then hands them to the router. It sits in front of the
/// router, not inside it, because Hummingbird picks the route before router middleware runs.
public struct HostRoutingResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == SandboxRequestContext {
    public typealias Context = SandboxRequestContext
    let inner: Inner

    public init(_ inner: Inner) {
        self.inner = inner
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        guard let authority = request.head.authority, let path = request.head.path,
              let mapped = PublicHosts.sandboxPath(authority: authority, path: path) else {
            return try await inner.respond(to: request, context: context)
        }
        var head = request.head
        head.path = mapped
        return try await inner.respond(to: Request(head: head, body: request.body), context: context)
    }
}
