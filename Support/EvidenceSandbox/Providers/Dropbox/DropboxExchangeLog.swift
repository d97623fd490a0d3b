import Foundation
import Hummingbird

/// The Dropbox API calls the emulation answered, as the wire carried them, for an oracle that
/// checks both sides against Dropbox's own schema (`scripts/oracles/dropbox_schema.py`, the
/// official SDK's stone serializers). Kept in memory, the newest `capacity` calls; served by
/// `GET /_sandbox/dropbox/exchanges`.
///
/// An exchange is the route (`files/upload_session/append_v2`), its argument as sent (the JSON
/// body of an RPC route, the `Dropbox-API-Arg` header of a content route), the status, and the
/// answer as sent (the body; for a `files/download` that succeeded, its `Dropbox-API-Result`
/// header). Texts are kept verbatim, so what is checked is what the client read; longer than
/// `maxText` bytes they are cut and marked `truncated`, which the oracle counts as a failure.
public final class DropboxExchangeLog: @unchecked Sendable {
    public struct Exchange: Sendable {
        var route: String
        var arg: String?
        var status: Int
        var answer: String
        var answerIsHeader: Bool
        var truncated: Bool
    }

    let capacity: Int
    static let maxText = 1 << 20
    private let lock = NSLock()
    private var entries: [Exchange] = []
    private var dropped = 0

    public init(capacity: Int = 2000) {
        self.capacity = capacity
    }

    /// Records `response` (the answer to `route` with argument `arg`) and returns it with its
    /// body, which this reads, put back. A download's bytes are not read: its answer is the header.
    func record(route: String, arg: String?, _ response: Response, download: Bool) async throws -> Response {
        var response = response
        let answer: String
        let isHeader = download && response.status == .ok
        if isHeader {
            answer = response.headers[.dropboxAPIResult] ?? ""
        } else {
            let sink = Sink()
            try await response.body.write(CollectingWriter(sink: sink))
            answer = String(decoding: sink.buffer.readableBytesView, as: UTF8.self)
            response.body = .init(byteBuffer: sink.buffer)
        }
        let cut = (arg?.utf8.count ?? 0) > Self.maxText || answer.utf8.count > Self.maxText
        append(Exchange(route: route, arg: arg.map { Self.prefix($0) }, status: Int(response.status.code),
                        answer: Self.prefix(answer), answerIsHeader: isHeader, truncated: cut))
        return response
    }

    private func append(_ e: Exchange) {
        lock.lock(); defer { lock.unlock() }
        entries.append(e)
        if entries.count > capacity {
            entries.removeFirst(entries.count - capacity)
            dropped += 1
        }
    }

    public func reset() {
        lock.lock(); entries = []; dropped = 0; lock.unlock()
    }

    /// JSON lines: `{"dropped":N}` first when older calls were let go, then one object per call
    /// `{"route":…,"arg":TEXT|null,"status":N,"answer":TEXT,"answer_from":"body"|"header"[,"truncated":true]}`.
    public func jsonLines() -> String {
        lock.lock()
        let (list, lost) = (entries, dropped)
        lock.unlock()
        var out = lost > 0 ? JSONValue.object([("dropped", .int(Int64(lost)))]).description + "\n" : ""
        for e in list {
            var fields: [(String, JSONValue)] = [
                ("route", .string(e.route)), ("arg", e.arg.map(JSONValue.string) ?? .null), ("status", .int(Int64(e.status))),
                ("answer", .string(e.answer)), ("answer_from", .string(e.answerIsHeader ? "header" : "body")),
            ]
            if e.truncated { fields.append(("truncated", .bool(true))) }
            out += JSONValue.object(fields).description + "\n"
        }
        return out
    }

    private static func prefix(_ s: String) -> String {
        s.utf8.count > maxText ? String(decoding: s.utf8.prefix(maxText), as: UTF8.self) : s
    }

    private final class Sink: @unchecked Sendable {
        var buffer = ByteBuffer()
    }

    /// A response body writer that keeps what is written (answers that are JSON or short text).
    private struct CollectingWriter: ResponseBodyWriter {
        let sink: Sink
        mutating func write(_ buffer: ByteBuffer) async throws {
            var b = buffer
            sink.buffer.writeBuffer(&b)
        }

        mutating func write(contentsOf buffers: some Sequence<ByteBuffer>) async throws {
            for b in buffers { try await write(b) }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
