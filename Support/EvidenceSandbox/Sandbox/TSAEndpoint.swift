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
    let counters: SandboxCounters?

    init(directory: String, counters: SandboxCounters? = nil) {
        self.holder = Holder(directory: directory)
        self.counters = counters
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
        // The TSA renews its signing certificate (same key, same CA), valid `days` from now.
        router.post("_sandbox/tsa/reissue") { request, _ in
            let days = request.uri.queryParameters.get("days").flatMap { Int($0) } ?? 3650
            let tsa = try await self.holder.get()
            try await Self.offload { try tsa.reissueSigningCertificate(days: days) }
            return try await self.pem(\.tsaCertificatePath)
        }
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
            // Counted by the imprint the token is over (tests assert one token per batch root).
            counters?.recordTimestamp(imprint: Self.imprint(ofQuery: [UInt8](query)) ?? "unreadable")
            return .bytes(reply, contentType: Self.replyType)
        } catch {
            context.logger.error("tsa failed", metadata: ["error": "\(error)"])
            return .bytes(Array("time-stamping failed: \(error)\n".utf8), contentType: "text/plain",
                          status: .internalServerError)
        }
    }

    /// The hex hashedMessage of a DER TimeStampReq: SEQUENCE { version INTEGER,
    /// messageImprint SEQUENCE { AlgorithmIdentifier, OCTET STRING }, … }.
    static func imprint(ofQuery der: [UInt8]) -> String? {
        /// The content range of the TLV at `i`, and the index after it.
        func tlv(_ i: Int) -> (tag: UInt8, content: Range<Int>, end: Int)? {
            guard i + 1 < der.count else { return nil }
            var length = Int(der[i + 1]), start = i + 2
            if length & 0x80 != 0 {
                let count = length & 0x7f
                guard count >= 1, count <= 3, start + count <= der.count else { return nil }
                length = der[start..<(start + count)].reduce(0) { $0 << 8 | Int($1) }
                start += count
            }
            guard start + length <= der.count else { return nil }
            return (der[i], start..<(start + length), start + length)
        }
        guard let outer = tlv(0), outer.tag == 0x30, let version = tlv(outer.content.lowerBound), version.tag == 0x02,
              let imprint = tlv(version.end), imprint.tag == 0x30, let algorithm = tlv(imprint.content.lowerBound),
              let hashed = tlv(algorithm.end), hashed.tag == 0x04 else { return nil }
        return der[hashed.content].map { String(format: "%02x", $0) }.joined()
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
