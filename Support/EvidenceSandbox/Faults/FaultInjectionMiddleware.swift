import Hummingbird
import NIOCore

/// Applies `FaultInjector`'s decision to requests whose path starts with one of `prefixes`
/// (the emulated APIs), before they are authenticated or routed.
///
/// Dropping works at the connection level: the middleware closes the request's NIO channel
/// (kept in `SandboxRequestContext`) and throws `ConnectionDropped`. The client sees the
/// connection end with no status line (curl: "Empty reply from server"); Hummingbird's own
/// attempt to answer the thrown error with a 500 fails on the closed channel and is dropped.
public struct FaultInjectionMiddleware: RouterMiddleware {
    public typealias Context = SandboxRequestContext

    let injector: FaultInjector
    let prefixes: [String]

    public init(injector: FaultInjector, prefixes: [String] = ["/v1/"]) {
        self.injector = injector
        self.prefixes = prefixes
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard prefixes.contains(where: { path.hasPrefix($0) || path + "/" == $0 }) else {
            return try await next(request, context)
        }
        // Throttle per API key when the client sends one, else per address.
        let client = request.headers[.authorization] ?? context.clientAddress
        let decision = injector.decide(client: client)
        if decision.latency > 0 {
            try await Task.sleep(nanoseconds: UInt64(decision.latency * 1_000_000_000))
        }
        switch decision.action {
        case .pass:
            return try await next(request, context)
        case .drop:
            try? await context.channel.close(mode: .all).get()
            throw ConnectionDropped()
        case .throttle(let retryAfter):
            return .json(.object([("detail", .string("Request was throttled. Expected available in \(retryAfter) seconds."))]),
                         status: .tooManyRequests, headers: [.retryAfter: String(retryAfter)])
        case .serverError(let status):
            return Self.serverError(status, retryAfter: injector.retryAfter)
        }
    }

    /// What sits in front of a Django app answers errors in its own format: the app a JSON
    /// 500, the proxy nginx-style HTML pages for 502 and 503.
    static func serverError(_ status: Int, retryAfter: Int) -> Response {
        switch status {
        case 502:
            return .bytes(Array(html("502 Bad Gateway").utf8), contentType: "text/html", status: .badGateway)
        case 503:
            return .bytes(Array(html("503 Service Temporarily Unavailable").utf8), contentType: "text/html",
                          status: .serviceUnavailable, headers: [.retryAfter: String(retryAfter)])
        default:
            return .json(.object([("detail", .string("A server error occurred."))]), status: .internalServerError)
        }
    }

    private static func html(_ title: String) -> String {
        "<html>\r\n<head><title>\(title)</title></head>\r\n<body>\r\n<center><h1>\(title)</h1></center>\r\n"
            + "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    }
}
