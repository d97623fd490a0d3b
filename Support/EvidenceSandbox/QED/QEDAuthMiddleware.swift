import Hummingbird

/// QED's token authentication (DRF `TokenAuthentication` with the keyword `app-token`):
/// no header, or another scheme → 401 "credentials were not provided"; a malformed
/// `app-token` header → 401 naming the problem; a wrong key → 401 "Invalid token.".
public struct QEDAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let apiKey: String

    public init(apiKey: String) {
        self.apiKey = apiKey
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else { throw QEDError.missingCredentials }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard let scheme = parts.first, scheme.lowercased() == "app-token" else { throw QEDError.missingCredentials }
        switch parts.count {
        case 1:
            throw QEDError(.unauthorized, detail: "Invalid token header. No credentials provided.",
                           headers: [.wwwAuthenticate: "app-token"])
        case 2:
            guard parts[1] == apiKey else { throw QEDError.invalidToken }
            return try await next(request, context)
        default:
            throw QEDError(.unauthorized, detail: "Invalid token header. Token string should not contain spaces.",
                           headers: [.wwwAuthenticate: "app-token"])
        }
    }
}
