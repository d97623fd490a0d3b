import Foundation
import Hummingbird

extension Response {
    /// A JSON answer in the compact form the emulated services write.
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        let data = value.serialized()
        fields[.contentLength] = String(data.count)
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Raw bytes with a content type (PDF, DER, PEM, HTML).
    static func bytes(_ data: some Collection<UInt8>, contentType: String, status: HTTPResponse.Status = .ok,
                      headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = contentType
        fields[.contentLength] = String(data.count)
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension Request {
    /// The media type of the body without parameters, lowercased (`application/json`), or "".
    var mediaType: String {
        guard let value = headers[.contentType] else { return "" }
        return value.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        } ?? ""
    }
}
