import EvidenceCore
import EvidencePipeline
import EvidenceStore
import Foundation
import Hummingbird

/// Responses the routes build: HTML pages and downloads.
enum Pages {
    static let htmlType = "text/html; charset=utf-8"

    static func html(_ status: HTTPResponse.Status = .ok, _ page: HTML) -> Response {
        Response(status: status, headers: [.contentType: htmlType], body: .init(byteBuffer: ByteBuffer(string: page.rendered)))
    }

    static func notFound(_ message: String) -> Response {
        html(.notFound, ErrorPage.render(status: 404, title: "Not found", message: message))
    }

    /// `attachment; filename="…"` with a name reduced to `[A-Za-z0-9._-]` (no quotes, no
    /// separators, no header injection), whatever the catalog holds.
    static func attachment(_ name: String) -> String {
        var safe = String(name.unicodeScalars.map { c -> Character in
            c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "." || c == "-" || c == "_") ? Character(c) : "_"
        })
        let dots = safe.prefix(while: { $0 == "." }).count   // no hidden files, no ".."
        safe = String(repeating: "_", count: dots) + safe.dropFirst(dots)
        if safe.isEmpty { safe = "download" }
        return "attachment; filename=\"\(String(safe.prefix(150)))\""
    }

    /// A file sent from an open descriptor in 256 KiB reads on the I/O threads; the
    /// descriptor closes when the body is done or dropped.
    static func download(_ file: FileHandle, size: Int64, contentType: String, fileName: String) -> Response {
        let box = FileBox(file)
        let body = ResponseBody(contentLength: Int(size)) { writer in
            var sent: Int64 = 0
            while sent < size {
                let chunk = try await box.read(Int(min(256 * 1024, size - sent)))
                guard !chunk.isEmpty else { throw DownloadError.shortRead(expected: size, got: sent) }
                try await writer.write(ByteBuffer(bytes: chunk))
                sent += Int64(chunk.count)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: contentType, .contentDisposition: attachment(fileName)], body: body)
    }

    /// A bundle's `.tar` sent part by part; the original is read from the store as it goes and
    /// re-hashed: if it does not hash to the item's SHA-256 the transfer is cut before the
    /// archive's end, so no client takes a complete archive with a changed original.
    static func stream(_ stream: BundleStream, contentType: String, fileName: String) -> Response {
        let object = FileBox(stream.object)
        let body = ResponseBody(contentLength: Int(stream.size)) { writer in
            for part in stream.parts {
                switch part {
                case .bytes(let data):
                    try await writer.write(ByteBuffer(bytes: data))
                case .original(let size):
                    let hasher = HasherBox()
                    var sent: Int64 = 0
                    while sent < size {
                        let chunk = try await object.read(Int(min(256 * 1024, size - sent)))
                        guard !chunk.isEmpty else { throw DownloadError.shortRead(expected: size, got: sent) }
                        hasher.update(chunk)
                        try await writer.write(ByteBuffer(bytes: chunk))
                        sent += Int64(chunk.count)
                    }
                    let digest = hasher.finalize()
                    guard digest == stream.digest else { throw DownloadError.changed(expected: stream.digest.hex, got: digest.hex) }
                }
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: contentType, .contentDisposition: attachment(fileName)], body: body)
    }

    enum DownloadError: Error, CustomStringConvertible {
        case shortRead(expected: Int64, got: Int64)
        case changed(expected: String, got: String)
        var description: String {
            switch self {
            case .shortRead(let expected, let got): return "file ended after \(got) of \(expected) bytes"
            case .changed(let expected, let got): return "the stored original hashes to \(got), not \(expected); transfer cut (run `evidence fsck`)"
            }
        }
    }
}

/// The running SHA-256 of a streamed original (one writer at a time: the body writes sequentially).
final class HasherBox: @unchecked Sendable {   // C handle (an OpenSSL digest context): the body's writes are sequential, one at a time
    private let hasher = SHA256Hasher()
    func update(_ data: Data) { hasher.update(data) }
    func finalize() -> SHA256Digest { hasher.finalize() }
}

/// Lets the response body (a `@Sendable` closure) own the handle.
final class FileBox: Sendable {
    private let file: FileHandle
    init(_ file: FileHandle) { self.file = file }
    func read(_ n: Int) async throws -> Data {
        let file = self.file
        return try await onIOThread { try file.read(upToCount: n) ?? Data() }
    }
}

