import CCurl
import EvidenceStore
import Foundation
import Glibc

/// Where an S3-compatible bucket is and how to sign for it.
public struct S3Endpoint: Sendable, Equatable {
    /// `https://s3.example` or `http://127.0.0.1:9000` (path-style requests: `<endpoint>/<bucket>/<key>`).
    public var url: String
    public var bucket: String
    public var region: String
    public var accessKey: String
    public var secretKey: String
    /// An extra trusted CA (PEM); verification itself is always on.
    public var caFile: String?

    public init(url: String, bucket: String, region: String, accessKey: String, secretKey: String, caFile: String? = nil) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.bucket = bucket
        self.region = region
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.caFile = caFile
    }
}

/// A small synchronous S3 client on libcurl: every request is signed by libcurl's own AWS
/// Signature V4 (`CURLOPT_AWS_SIGV4`, the keys given by `CURLOPT_USERPWD`), never by code of
/// ours, and the keys never reach a log line, an error message or a command line.
///
/// The payload hash that SigV4 signs is given explicitly (`x-amz-content-sha256`): the hex
/// SHA-256 of small bodies, `UNSIGNED-PAYLOAD` for streamed objects, whose integrity the
/// server checks instead by `x-amz-checksum-sha256`. Easy handles are kept between requests
/// (their connections stay alive); a request runs on the calling thread, which blocks, like
/// the local store's file I/O.
final class S3Client: @unchecked Sendable {
    let endpoint: S3Endpoint
    private let lock = NSLock()
    private var idle: [UnsafeMutableRawPointer] = []

    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    init(endpoint: S3Endpoint) {
        self.endpoint = endpoint
        _ = Self.globalInit
    }

    deinit { idle.forEach { curl_easy_cleanup($0) } }

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    enum Body {
        case none
        case data(Data)
        /// `length` bytes from `offset` of an open file, read with `pread` (rewindable).
        case file(fd: Int32, offset: Int64, length: Int64)
    }

    struct Response {
        var status: Int
        /// Lowercased names.
        var headers: [String: String]
        var body: Data
        /// The keys the request was signed with, masked in `errorText` (a server may quote them).
        var secrets: [String] = []
        var isSuccess: Bool { (200..<300).contains(status) }

        /// `<Code>` and `<Message>` of an S3 error body (at most 300 characters), or the status alone.
        var errorText: String {
            let x = S3XML(body)
            let code = x.first("Code"), message = x.first("Message").map { String($0.prefix(300)) }
            var text = "HTTP \(status)" + (code.map { " \($0)" } ?? "") + (message.map { ": \($0)" } ?? "")
            for secret in secrets where !secret.isEmpty { text = text.replacingOccurrences(of: secret, with: "***") }
            return text
        }
    }

    /// `s3://bucket/key`, for messages.
    func location(_ key: String?) -> String { "s3://\(endpoint.bucket)" + (key.map { "/" + $0 } ?? "") }

    /// One request, retried (up to 4 attempts, backing off) when the connection failed or the
    /// server answered 500/502/503/504: a bounded body is resent from its start. Other answers are
    /// returned as they are. `query` is `name=value&…`, already encoded and sorted by name.
    func send(_ method: String, key: String?, query: String = "", headers: [(String, String)] = [],
              body: Body = .none, maxBody: Int = 16 << 20) throws(StoreError) -> Response {
        var attempt = 0
        while true {
            attempt += 1
            let result = once(method, key: key, query: query, headers: headers, body: body, maxBody: maxBody)
            switch result {
            case .answer(let r) where [500, 502, 503, 504].contains(r.status) && attempt < 4:
                break
            case .answer(let r):
                return r
            case .failed(let detail, let permanent) where attempt >= 4 || permanent:
                throw .remote(path: location(key), detail: "S3 \(method) failed: \(detail)")
            case .failed:
                break
            }
            usleep(UInt32(200_000 * attempt))
        }
    }

    enum Outcome {
        case answer(Response)
        /// `permanent`: a retry cannot help (TLS verification, a malformed URL, a local error).
        case failed(String, permanent: Bool = false)
    }

    /// libcurl codes a retry does not fix: unsupported protocol, malformed URL, TLS set-up and
    /// certificate verification failures.
    static let permanentCodes: Set<UInt32> = [1, 3, 35, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98]

    private func once(_ method: String, key: String?, query: String, headers: [(String, String)],
                      body: Body, maxBody: Int) -> Outcome {
        guard let h = takeHandle() else { return .failed("libcurl could not be initialised", permanent: true) }
        var keep = true
        defer { giveBack(h, keep: keep) }
        curl_easy_reset(h)
        let call = S3Call(body: body, maxBody: maxBody)
        return withExtendedLifetime(call) { () -> Outcome in
            var list: UnsafeMutablePointer<curl_slist>?
            defer { curl_easy_reset(h); curl_slist_free_all(list) }
            var lines = headers.map { "\($0.0): \($0.1)" }
            if !headers.contains(where: { $0.0.lowercased() == "x-amz-content-sha256" }) {
                let hash: String
                switch body {
                case .none: hash = Self.emptyPayloadHash
                case .data(let d): hash = SHA256Hasher.hash(d).hex
                case .file: hash = "UNSIGNED-PAYLOAD"
                }
                lines.append("x-amz-content-sha256: \(hash)")
            }
            // No "Expect:" line to switch off 100-continue: libcurl 7.88's SigV4 signs a header
            // removed that way although it is not sent, and the server refuses the signature.
            for line in lines { list = curl_slist_append(list, line) }

            var path = "/" + endpoint.bucket
            if let key { path += "/" + key }
            let url = endpoint.url + path + (query.isEmpty ? "" : "?" + query)
            let me = Unmanaged.passUnretained(call).toOpaque()
            var codes: [CURLcode] = []
            func long(_ o: CURLoption, _ v: Int) { codes.append(evidence_curl_setopt_long(h, o, v)) }
            func string(_ o: CURLoption, _ v: String) { codes.append(evidence_curl_setopt_string(h, o, v)) }
            string(CURLOPT_URL, url)
            string(CURLOPT_PROTOCOLS_STR, "http,https")
            long(CURLOPT_NOSIGNAL, 1)
            long(CURLOPT_FOLLOWLOCATION, 0)
            long(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
            long(CURLOPT_CONNECTTIMEOUT_MS, 10_000)
            long(CURLOPT_LOW_SPEED_LIMIT, 1)
            long(CURLOPT_LOW_SPEED_TIME, 60)
            long(CURLOPT_TCP_KEEPALIVE, 1)
            long(CURLOPT_UPLOAD_BUFFERSIZE, 2 << 20)
            long(CURLOPT_SSL_VERIFYPEER, 1)
            long(CURLOPT_SSL_VERIFYHOST, 2)
            if let ca = endpoint.caFile { string(CURLOPT_CAINFO, ca) }
            string(CURLOPT_USERAGENT, "evidence/0.1")
            string(CURLOPT_AWS_SIGV4, "aws:amz:\(endpoint.region):s3")
            string(CURLOPT_USERPWD, endpoint.accessKey + ":" + endpoint.secretKey)
            codes.append(evidence_curl_setopt_slist(h, CURLOPT_HTTPHEADER, list))
            codes.append(evidence_curl_setopt_write_cb(h, CURLOPT_HEADERFUNCTION) { data, size, count, user in
                guard let data, let user else { return 0 }
                return Unmanaged<S3Call>.fromOpaque(user).takeUnretainedValue()
                    .header(UnsafeRawBufferPointer(start: data, count: size * count))
            })
            codes.append(evidence_curl_setopt_pointer(h, CURLOPT_HEADERDATA, me))
            codes.append(evidence_curl_setopt_write_cb(h, CURLOPT_WRITEFUNCTION) { data, size, count, user in
                guard let data, let user else { return 0 }
                return Unmanaged<S3Call>.fromOpaque(user).takeUnretainedValue()
                    .receive(UnsafeRawBufferPointer(start: data, count: size * count))
            })
            codes.append(evidence_curl_setopt_pointer(h, CURLOPT_WRITEDATA, me))
            switch method {
            case "HEAD":
                long(CURLOPT_NOBODY, 1)
            case "GET":
                long(CURLOPT_HTTPGET, 1)
            case "DELETE":
                long(CURLOPT_HTTPGET, 1)
                string(CURLOPT_CUSTOMREQUEST, "DELETE")
            default:
                long(CURLOPT_UPLOAD, 1)
                codes.append(evidence_curl_setopt_off_t(h, CURLOPT_INFILESIZE_LARGE, curl_off_t(call.length)))
                if method != "PUT" { string(CURLOPT_CUSTOMREQUEST, method) }
                codes.append(evidence_curl_setopt_write_cb(h, CURLOPT_READFUNCTION) { buffer, size, count, user in
                    guard let buffer, let user else { return 0x1000_0000 }
                    return Unmanaged<S3Call>.fromOpaque(user).takeUnretainedValue()
                        .supply(UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
                })
                codes.append(evidence_curl_setopt_pointer(h, CURLOPT_READDATA, me))
                codes.append(evidence_curl_setopt_seek_cb(h) { user, offset, origin in
                    guard let user, origin == SEEK_SET else { return 2 }
                    return Unmanaged<S3Call>.fromOpaque(user).takeUnretainedValue().rewind(Int64(offset))
                })
                codes.append(evidence_curl_setopt_pointer(h, CURLOPT_SEEKDATA, me))
            }
            if let bad = codes.first(where: { $0 != CURLE_OK }) {
                keep = false
                return .failed("curl option not accepted: \(String(cString: curl_easy_strerror(bad)))", permanent: true)
            }
            let code = curl_easy_perform(h)
            if let local = call.localError { keep = false; return .failed(local, permanent: true) }
            if call.tooLarge { keep = false; return .failed("answer larger than \(maxBody) bytes") }
            guard code == CURLE_OK else {
                keep = false
                // curl's own text names the host and the failure, never the credentials.
                var text = String(cString: curl_easy_strerror(code))
                if code.rawValue == 60 || code.rawValue == 77 {
                    text += endpoint.caFile.map { " (the server's certificate is not signed by a trusted CA, nor by \($0) from [store] tls_ca_file)" }
                        ?? " (the server's certificate is not signed by a trusted CA: set [store] tls_ca_file to the CA's PEM file)"
                }
                return .failed(text, permanent: Self.permanentCodes.contains(code.rawValue))
            }
            var status = 0
            _ = evidence_curl_getinfo_long(h, CURLINFO_RESPONSE_CODE, &status)
            return .answer(Response(status: status, headers: call.headers, body: call.body,
                                    secrets: [endpoint.secretKey, endpoint.accessKey]))
        }
    }

    private func takeHandle() -> UnsafeMutableRawPointer? {
        lock.lock()
        if let h = idle.popLast() { lock.unlock(); return h }
        lock.unlock()
        return curl_easy_init()
    }

    private func giveBack(_ h: UnsafeMutableRawPointer, keep: Bool) {
        lock.lock()
        if keep && idle.count < 8 { idle.append(h); lock.unlock(); return }
        lock.unlock()
        curl_easy_cleanup(h)
    }
}

/// The state of one request, handed to curl's callbacks as their user pointer.
private final class S3Call {
    let source: S3Client.Body
    let maxBody: Int
    let length: Int64
    var position: Int64 = 0
    var headers: [String: String] = [:]
    var body = Data()
    var tooLarge = false
    var localError: String?

    init(body: S3Client.Body, maxBody: Int) {
        self.source = body
        self.maxBody = maxBody
        switch body {
        case .none: length = 0
        case .data(let d): length = Int64(d.count)
        case .file(_, _, let n): length = n
        }
    }

    func header(_ raw: UnsafeRawBufferPointer) -> Int {
        var text = String(decoding: raw, as: UTF8.self)
        while let last = text.last, last.isNewline { text.removeLast() }
        if text.hasPrefix("HTTP/") {
            headers.removeAll()
        } else if let colon = text.firstIndex(of: ":") {
            let name = text[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            headers[name] = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return raw.count
    }

    func receive(_ chunk: UnsafeRawBufferPointer) -> Int {
        if body.count + chunk.count > maxBody { tooLarge = true; return 0 }
        body.append(contentsOf: chunk)
        return chunk.count
    }

    func supply(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        let wanted = Int(min(Int64(buffer.count), max(0, length - position)))
        guard wanted > 0 else { return 0 }
        switch source {
        case .none:
            return 0
        case .data(let d):
            let start = d.startIndex + Int(position)
            d.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), from: start..<(start + wanted))
            position += Int64(wanted)
            return wanted
        case .file(let fd, let offset, _):
            while true {
                let got = pread(fd, buffer.baseAddress, wanted, off_t(offset + position))
                if got < 0 && errno == EINTR { continue }
                if got <= 0 {
                    localError = got < 0 ? "cannot read the spool: \(String(cString: strerror(errno)))" : "the spool is shorter than its size"
                    return 0x1000_0000
                }
                position += Int64(got)
                return got
            }
        }
    }

    func rewind(_ offset: Int64) -> Int32 {
        guard offset >= 0, offset <= length else { return 1 }
        position = offset
        return 0
    }
}

/// Enough XML for S3's answers: the text of elements by name, entities decoded. S3 answers are
/// flat lists of simple elements; nothing here trusts their structure beyond that.
struct S3XML {
    let text: String
    init(_ data: Data) { text = String(decoding: data, as: UTF8.self) }
    init(_ string: String) { text = string }

    /// Every `<name>…</name>` in order (also `<name attr="…">`).
    func all(_ name: String) -> [String] {
        var out: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "<\(name)") {
            let after = rest[open.upperBound...]
            guard let first = after.first, first == ">" || first == " " else { rest = after; continue }
            guard let gt = after.firstIndex(of: ">") else { break }
            if gt > after.startIndex, after[after.index(before: gt)] == "/" { out.append(""); rest = after[after.index(after: gt)...]; continue }
            let content = after[after.index(after: gt)...]
            guard let close = content.range(of: "</\(name)>") else { break }
            out.append(Self.decode(String(content[..<close.lowerBound])))
            rest = content[close.upperBound...]
        }
        return out
    }

    func first(_ name: String) -> String? { all(name).first }

    /// The `<parent>` blocks, each as its own document.
    func blocks(_ parent: String) -> [S3XML] {
        var out: [S3XML] = []
        var rest = text[...]
        while let open = rest.range(of: "<\(parent)>") {
            guard let close = rest[open.upperBound...].range(of: "</\(parent)>") else { break }
            out.append(S3XML(String(rest[open.upperBound..<close.lowerBound])))
            rest = rest[close.upperBound...]
        }
        return out
    }

    static func decode(_ s: String) -> String {
        guard s.contains("&") else { return s }
        var out = s
        for (entity, char) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&apos;", "'"), ("&#39;", "'"), ("&#34;", "\""), ("&#xD;", "\r"), ("&#13;", "\r"), ("&#xA;", "\n"), ("&#10;", "\n")] {
            out = out.replacingOccurrences(of: entity, with: char)
        }
        return out.replacingOccurrences(of: "&amp;", with: "&")
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}

/// AWS's URI encoding of a query value: everything but `A-Za-z0-9-_.~` as `%XX`.
func s3QueryEncode(_ s: String) -> String {
    var out = ""
    for b in s.utf8 {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
            out.append(Character(UnicodeScalar(b)))
        default:
            out += String(format: "%%%02X", b)
        }
    }
    return out
}

/// Printing an endpoint (a log line, an `EvidenceHome.StoreLocation` in a message) never shows the keys.
extension S3Endpoint: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { "s3://\(bucket) at \(url) (\(region))" }
    public var debugDescription: String { description }
}
