import Foundation
import Hummingbird
import Logging

/// The portal's front door, in front of the router for every request (matched or not):
/// authentication, the read-only rule, security headers, HTML error pages, one log line.
public struct PortalResponder: HTTPResponder {
    public typealias Context = BasicRequestContext
    let auth: PortalAuth
    let router: RouterResponder<BasicRequestContext>
    let failedLogins = FailedLogins()

    /// No script, no frames, no outside resources; only our inline style sheet.
    public static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    public func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        var response: Response
        if !auth.allows(authorization: request.headers[.authorization]) {
            // A request without credentials is a browser asking who it is talking to; a wrong
            // one is a guess, and guesses are slowed down.
            if request.headers[.authorization] != nil {
                let hold = failedLogins.failed()
                if hold > 0 { try? await Task.sleep(for: .seconds(hold)) }
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

extension HTTPFields.Element.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
