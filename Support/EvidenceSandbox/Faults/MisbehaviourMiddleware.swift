import Foundation
import Hummingbird
import NIOCore

/// Answers requests that `Misbehaviour` picked with the armed mode instead of routing them.
/// Sits after the request recorder (the answer is counted and logged with status 200) and
/// before fault injection and the emulations.
public struct MisbehaviourMiddleware: RouterMiddleware {
    public typealias Context = SandboxRequestContext

    let misbehaviour: Misbehaviour

    public init(misbehaviour: Misbehaviour) {
        self.misbehaviour = misbehaviour
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard !path.hasPrefix("/_sandbox/"), let mode = misbehaviour.take(path: path) else {
            return try await next(request, context)
        }
        context.logger.info("misbehaving", metadata: ["path": "\(path)", "mode": "\(mode.rawValue)"])
        return Self.answer(mode, misbehaviour: misbehaviour, channel: context.channel, path: path,
                           host: request.head.authority)
    }

    static func answer(_ mode: Misbehaviour.Mode, misbehaviour: Misbehaviour, channel: any Channel,
                       path: String = "/", host: String? = nil) -> Response {
        switch mode {
        case .redirect:
            let other = path.hasSuffix("/") ? String(path.dropLast()) : path + "/"
            return Response(status: .movedPermanently, headers: [.location: "http://\(host ?? "127.0.0.1")\(other)",
                                                                 .contentType: "text/html; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: "<h1>Moved</h1>")))
        case .redirectAway:
            return Response(status: .found, headers: [.location: "http://elsewhere.invalid\(path)"],
                            body: .init(byteBuffer: ByteBuffer(string: "")))
        case .garbage:
            let bytes: [UInt8] = [0xff, 0xfe, 0x00, 0x7b] + Array("\u{1}garbage\u{2}{{]]".utf8) + [0xc3, 0x28, 0x80]
            return .bytes(bytes, contentType: "application/json")
        case .html:
            let page = "<!DOCTYPE html>\n<html><head><title>Sign in to the network</title></head>"
                + "<body><form action=\"/login\"><input name=\"user\"></form></body></html>\n"
            return .bytes(Array(page.utf8), contentType: "text/html; charset=utf-8")
        case .truncated:
            let whole = Array(#"{"slug":"truncated-answer","status":"pending","hash":"00","tx":{"hash":"0x00"}}"#.utf8)
            let sent = whole.prefix(whole.count / 2)
            let body = ResponseBody(contentLength: whole.count) { writer in
                try await writer.write(ByteBuffer(bytes: sent))
                // Close mid-body: the client sees fewer bytes than Content-Length promised.
                try? await channel.close(mode: .all).get()
                throw ConnectionDropped()
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: body)
        case .oversized:
            let total = Misbehaviour.oversizeBytes
            let body = ResponseBody(contentLength: total) { writer in
                // One 64 KiB piece of a JSON string, written again and again.
                let piece = ByteBuffer(bytes: Array(repeating: UInt8(ascii: "x"), count: 64 << 10))
                var left = total
                try await writer.write(ByteBuffer(bytes: Array(#"{"x":""#.utf8)))
                left -= 6
                while left > 2 {
                    let n = min(left - 2, piece.readableBytes)
                    try await writer.write(piece.getSlice(at: 0, length: n)!)
                    left -= n
                }
                try await writer.write(ByteBuffer(bytes: Array(#""}"#.utf8)))
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: body)
        case .slow:
            let interval = misbehaviour.slowInterval, limit = misbehaviour.slowLimit
            let body = ResponseBody { writer in
                let start = Date()
                try await writer.write(ByteBuffer(bytes: Array("{".utf8)))
                while Date().timeIntervalSince(start) < limit {
                    try await Task.sleep(nanoseconds: UInt64(interval * 1_000_000_000))
                    try await writer.write(ByteBuffer(bytes: Array(" ".utf8)))
                }
                try await writer.write(ByteBuffer(bytes: Array("}".utf8)))
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: body)
        case .wrongType:
            // The 8-byte PNG signature and an IHDR chunk header: unmistakably an image.
            let png: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52,
                                0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89]
            return .bytes(png, contentType: "image/png")
        case .locked:
            let xml = """
                <?xml version="1.0" encoding="utf-8"?>
                <d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns">
                  <s:exception>OCA\\DAV\\Connector\\Sabre\\Exception\\FileLocked</s:exception>
                  <s:message>The resource is locked by another request</s:message>
                </d:error>

                """
            return .bytes(Array(xml.utf8), contentType: "application/xml; charset=utf-8", status: .init(code: 423, reasonPhrase: "Locked"))
        case .wrongJSON:
            return .bytes(Array(#"{"detail":"Service in maintenance mode","items":null,"version":"0"}"#.utf8),
                          contentType: "application/json")
        }
    }
}
