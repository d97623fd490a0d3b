import Foundation
import Hummingbird

/// The Dropbox API calls the emulation answered, as the wire carried them, for an oracle that
/// checks both sides against Dropbox's own schema (`scripts/oracles/dropbox_schema.py`, the
/// official SDK's stone serializers). Kept in memory, the newest `capacity` calls within
/// `budget` bytes of text (older ones are let go and counted); served by
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

        var bytes: Int { (arg?.utf8.count ?? 0) + answer.utf8.count }
    }

    let capacity: Int
    let budget: Int
    static let maxText = 1 << 20
    private let lock = NSLock()
    private var entries: [Exchange] = []
    private var bytes = 0
    private var dropped = 0

    public init(capacity: Int = 2000, budget: Int = 64 << 20) {
        self.capacity = capacity
        self.budget = budget
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
        add(route: route, arg: arg, status: Int(response.status.code), answer: answer, fromHeader: isHeader)
        return response
    }

    /// Keeps one call (texts longer than `maxText` cut and marked), letting the oldest go while
    /// more than `capacity` calls or `budget` bytes are kept.
    public func add(route: String, arg: String?, status: Int, answer: String, fromHeader: Bool) {
        let arg = arg.map(Self.withoutPassword)
        let cut = (arg?.utf8.count ?? 0) > Self.maxText || answer.utf8.count > Self.maxText
        let e = Exchange(route: route, arg: arg.map { Self.prefix($0) }, status: status, answer: Self.prefix(answer),
                         answerIsHeader: fromHeader, truncated: cut)
        lock.lock(); defer { lock.unlock() }
        entries.append(e)
        bytes += e.bytes
        while entries.count > capacity || (bytes > budget && entries.count > 1) {
            bytes -= entries.removeFirst().bytes
            dropped += 1
        }
    }

    /// `arg` with a link password (`settings.link_password`) replaced by a placeholder of the
    /// same type, so the control route, open to anyone on loopback, never serves a secret.
    static func withoutPassword(_ arg: String) -> String {
        guard arg.contains("link_password"),
              var top = (try? JSONSerialization.jsonObject(with: Data(arg.utf8))) as? [String: Any],
              var settings = top["settings"] as? [String: Any], settings["link_password"] != nil else { return arg }
        settings["link_password"] = "(link password)"
        top["settings"] = settings
        return (try? JSONSerialization.data(withJSONObject: top)).map { String(decoding: $0, as: UTF8.self) } ?? arg
    }

    public func reset() {
        lock.lock(); entries = []; bytes = 0; dropped = 0; lock.unlock()
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
