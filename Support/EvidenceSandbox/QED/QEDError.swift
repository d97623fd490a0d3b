import Hummingbird

/// An error answer in Django REST framework's shapes, which QED (a DRF service) uses:
/// `{"detail": "…"}` for request-level problems, `{"field": ["message", …]}` for validation.
public struct QEDError: HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let body: JSONValue
    public let headers: HTTPFields

    public init(_ status: HTTPResponse.Status, body: JSONValue, headers: HTTPFields = [:]) {
        self.status = status
        self.body = body
        self.headers = headers
    }

    /// `{"detail": message}`.
    public init(_ status: HTTPResponse.Status, detail: String, headers: HTTPFields = [:]) {
        self.init(status, body: .object([("detail", .string(detail))]), headers: headers)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        .json(body, status: status, headers: headers)
    }

    static let notFound = QEDError(.notFound, detail: "Not found.")
    static let missingCredentials = QEDError(
        .unauthorized, detail: "Authentication credentials were not provided.", headers: [.wwwAuthenticate: "app-token"])
    static let invalidToken = QEDError(.unauthorized, detail: "Invalid token.", headers: [.wwwAuthenticate: "app-token"])

    static func methodNotAllowed(_ method: HTTPRequest.Method, allowed: [HTTPRequest.Method]) -> QEDError {
        QEDError(.methodNotAllowed, detail: "Method \"\(method.rawValue)\" not allowed.",
                 headers: [.allow: allowed.map(\.rawValue).joined(separator: ", ")])
    }

    static func unsupportedMediaType(_ mediaType: String) -> QEDError {
        QEDError(.unsupportedMediaType, detail: "Unsupported media type \"\(mediaType)\" in request.")
    }

    static func parseError(_ reason: String) -> QEDError {
        QEDError(.badRequest, detail: "JSON parse error - \(reason)")
    }

    static func validation(_ errors: JSONValue) -> QEDError {
        QEDError(.badRequest, body: errors)
    }
}
