import Foundation
import Hummingbird

/// Outermost middleware: turns every error into the answer the client will see (QED's JSON
/// shapes), then counts the request and appends it to `requests.log`. Requests to the
/// `/_sandbox/` control routes are answered but neither counted nor logged, so a test
/// polling the counters does not disturb the rates it measures.
public struct RequestRecorderMiddleware: RouterMiddleware {
    public typealias Context = SandboxRequestContext

    let counters: SandboxCounters
    let log: RequestLog?

    public init(counters: SandboxCounters, log: RequestLog?) {
        self.counters = counters
        self.log = log
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = Date()
        let path = request.uri.path
        let recorded = !path.hasPrefix("/_sandbox/")
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as ConnectionDropped {
            if recorded { record(request, path: path, outcome: .dropped, context: context, start: start) }
            throw error
        } catch let error as QEDError {
            response = .json(error.body, status: error.status, headers: error.headers)
        } catch let error as HTTPError {
            // Router-level errors (unknown path, body too large) in the same `{"detail"}` shape.
            let detail = error.body ?? (error.status == .notFound ? "Not found." : "\(error.status.reasonPhrase).")
            response = .json(.object([("detail", .string(detail))]), status: error.status, headers: error.headers)
        } catch {
            context.logger.error("request failed", metadata: ["path": "\(path)", "error": "\(error)"])
            response = .json(.object([("detail", .string("A server error occurred."))]), status: .internalServerError)
        }
        if recorded {
            record(request, path: path, outcome: .status(response.status.code), context: context, start: start,
                   retryAfter: response.headers[.retryAfter].flatMap { Int($0) })
        }
        return response
    }

    private func record(_ request: Request, path: String, outcome: RequestLog.Outcome, context: Context, start: Date,
                        retryAfter: Int? = nil) {
        counters.recordRequest()
        let ms = Int((Date().timeIntervalSince(start) * 1000).rounded())
        log?.append(time: start, method: request.method.rawValue, path: path, outcome: outcome,
                    client: context.clientAddress, milliseconds: ms, retryAfter: retryAfter)
        let status: String
        switch outcome {
        case .status(let code): status = String(code)
        case .dropped: status = "dropped"
        }
        context.logger.debug("\(request.method.rawValue) \(path) \(status) \(ms)ms")
    }
}
