import Foundation
import Hummingbird

/// The RFC 3161 time-stamping authority, backed by `TestTSA` (a real `openssl ts` TSA with
/// its own CA under `<state-dir>/tsa`):
///
/// - `POST /tsa` with `Content-Type: application/timestamp-query` and a DER `TimeStampReq`
///   → 200 `application/timestamp-reply` (DER `TimeStampResp`). A malformed query gets, as
///   from a real TSA, a 200 reply with status `rejection`; another content type → 415; a
///   failure of `openssl` itself → 500 `text/plain` with the reason.
/// - `GET /tsa/ca.pem`, `/tsa/tsa.pem`, `/tsa/chain.pem` → the CA, the TSA's certificate and
///   the chain (PEM), for `openssl ts -verify -CAfile ca.pem -untrusted tsa.pem`.
///
/// The TSA is created on first use, so sandboxes that never time-stamp start fast; creating
/// it again on the same folder reuses its keys.
struct TSAEndpoint: Sendable {
    let holder: Holder

    init(directory: String) {
        self.holder = Holder(directory: directory)
    }

    /// Creates the `TestTSA` once; a failure is reported and retried on the next request.
    actor Holder {
        let directory: String
        private var tsa: TestTSA?

        init(directory: String) {
            self.directory = directory
        }

        func get() async throws -> TestTSA {
            if let tsa { return tsa }
            do {
                let directory = self.directory
                let created = try await TSAEndpoint.offload { try TestTSA(directory: directory) }
                tsa = created
                return created
            } catch {
                throw SandboxError.tsa("cannot set up the test TSA in \(directory): \(error)")
            }
        }
    }

    static let queryType = "application/timestamp-query"
    static let replyType = "application/timestamp-reply"
    static let maxQuerySize = 64 * 1024

    func addRoutes(to router: Router<SandboxRequestContext>) {
        router.post("tsa") { request, context in try await self.timestamp(request, context: context) }
        router.get("tsa/ca.pem") { _, _ in try await self.pem(\.caCertificatePath) }
        router.get("tsa/tsa.pem") { _, _ in try await self.pem(\.tsaCertificatePath) }
        router.get("tsa/chain.pem") { _, _ in try await self.pem(\.chainPath) }
    }

    private func timestamp(_ request: Request, context: SandboxRequestContext) async throws -> Response {
        guard request.mediaType == Self.queryType else {
            return .bytes(Array("expected Content-Type: \(Self.queryType)\n".utf8), contentType: "text/plain",
                          status: .unsupportedMediaType)
        }
        var request = request
        let body = try await request.collectBody(upTo: Self.maxQuerySize)
        let query = Data(body.readableBytesView)
        let tsa = try await holder.get()
        do {
            let reply = try await Self.offload { try tsa.reply(to: query) }
            return .bytes(reply, contentType: Self.replyType)
        } catch {
            context.logger.error("tsa failed", metadata: ["error": "\(error)"])
            return .bytes(Array("time-stamping failed: \(error)\n".utf8), contentType: "text/plain",
                          status: .internalServerError)
        }
    }

    private func pem(_ path: KeyPath<TestTSA, String>) async throws -> Response {
        let tsa = try await holder.get()
        let data = try Data(contentsOf: URL(fileURLWithPath: tsa[keyPath: path]))
        return .bytes(data, contentType: "application/x-pem-file")
    }

    /// Runs blocking work (the TSA may run `openssl`) off Swift's cooperative threads.
    static func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try work() })
            }
        }
    }
}
