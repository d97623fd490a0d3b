import Foundation
import Hummingbird
import Logging

/// The portal's front door, in front of the router for every request (matched or not):
/// authentication, the read-only rule, security headers, HTML error pages, one log line.
public struct PortalResponder: HTTPResponder {
    public typealias Context = PortalContext
    let auth: PortalAuth
    let router: RouterResponder<PortalContext>
    let throttle: LoginThrottle

    /// No script, no frames, no outside resources; only our inline style sheet.
    public static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    public func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        var response: Response
        let authorization = request.headers[.authorization]
        // A request without credentials is a browser asking who it is talking to; one with them
        // is a sign-in, counted per client address and per user name.
        let attempt = authorization.map { header in
            throttle.attempt(Self.throttleKeys(authorization: header, clientAddress: context.clientAddress)) {
                auth.allows(authorization: header)
            }
        } ?? .denied(blocked: [])
        if case .throttled(let retryAfter, let key) = attempt {
            response = Pages.html(.tooManyRequests, ErrorPage.render(status: 429, title: "Too many failed sign-ins",
                message: "Too many wrong passwords or tokens were tried from your address or for this user name. "
                    + "Sign-ins are refused for \(retryAfter) more second(s), even with the right password; each new block lasts longer."))
            response.headers[.retryAfter] = String(retryAfter)
            context.logger.notice("sign-in refused while throttled", metadata: ["by": "\(key)", "retry_after": "\(retryAfter)"])
        } else if case .denied(let blocked) = attempt {
            for (key, length) in blocked {
                context.logger.warning("too many failed sign-ins: blocked", metadata: ["by": "\(key)", "seconds": "\(LoginThrottle.wholeSeconds(length))"])
            }
            response = Pages.html(.unauthorized, ErrorPage.render(status: 401, title: "Sign in required",
                                                                  message: "This portal needs the user name and password (or token) from its operator."))
            response.headers[.wwwAuthenticate] = PortalAuth.challenge
        } else if request.method != .get && request.method != .head {
            response = Pages.html(.methodNotAllowed, ErrorPage.render(status: 405, title: "Read-only",
                                                                      message: "This portal only reads: \(request.method.rawValue) is not allowed."))
            response.headers[.allow] = "GET, HEAD"
        } else {
            do {
                var context = context
                let who = authorization.flatMap { PortalAuth.basicUser(authorization: $0) }.map { String($0.prefix(64)) } ?? "token"
                context.principal = "portal:\(who)@\(context.clientAddress ?? "local")"
                response = try await router.respond(to: request, context: context)
                if response.status == .notFound && response.headers[.contentType] != Pages.htmlType {
                    response = Pages.notFound("There is no page at \(request.uri.path).")
                }
            } catch {
                // The details (paths, file names) go to the operator's log, not to the page.
                let reference = String(UInt32.random(in: 0...UInt32.max), radix: 16)
                context.logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)", "ref": "\(reference)"])
                response = Pages.html(.internalServerError, ErrorPage.render(status: 500, title: "Could not answer",
                                                                             message: "Something went wrong while answering. The operator's log has the details under reference \(reference)."))
            }
        }
        if request.method == .head { response = response.createHeadResponse() }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.xFrameOptions] = "DENY"
        response.headers[.referrerPolicy] = "no-referrer"
        // Evidence pages and downloads are behind a password: no shared or disk cache keeps them.
        response.headers[.cacheControl] = "no-store"
        // Path only: queries are search terms, and headers (credentials) are never logged.
        let elapsed = (ContinuousClock.now - started).components
        let ms = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
        context.logger.info("\(request.method.rawValue) \(request.uri.path) \(response.status.code)", metadata: ["ms": "\(ms)"])
        return response
    }
}

extension PortalResponder {
    /// The client's address, and the user name when the credentials are Basic.
    static func throttleKeys(authorization: String, clientAddress: String?) -> [LoginThrottle.Key] {
        var keys = [LoginThrottle.addressKey(clientAddress)]
        if let user = PortalAuth.basicUser(authorization: authorization) { keys.append(.user(String(user.prefix(256)))) }
        return keys
    }
}

extension HTTPFields.Element.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
