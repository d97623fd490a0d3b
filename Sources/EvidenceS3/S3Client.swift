import CCurl
import EvidenceHTTP
import EvidenceStore
import Foundation
import Glibc
import Synchronization

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
/// the local store's file I/O. Retries are EvidenceHTTP's (`HTTPClient.retryingBlocking`).
final class S3Client: Sendable {
    let endpoint: S3Endpoint
    let retry: RetryPolicy
    /// Idle easy handles.
    private let idle = Mutex<[CurlHandle]>([])

    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// 4 attempts, 0.2 s doubling (jittered) between them, never less than a `Retry-After`; one
    /// longer than a minute is not waited out by a thread that holds an ingest.
    static let defaultRetry = RetryPolicy(maxAttempts: 4, base: 0.2, cap: 5, maxRetryAfter: 60)

    init(endpoint: S3Endpoint, retry: RetryPolicy = S3Client.defaultRetry) {
        self.endpoint = endpoint
        self.retry = retry
        _ = Self.globalInit
    }

    deinit { idle.withLock { $0.forEach { curl_easy_cleanup($0.raw) } } }

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

        /// `<Code>` and `<Message>` of an S3 error body (at most 300 characters), or the status
        /// alone when the body is not XML.
        var errorText: String {
            let x = try? S3XML(parsing: body)
            let code = x?.first("Code"), message = x?.first("Message").map { String($0.prefix(300)) }
            var text = "HTTP \(status)" + (code.map { " \($0)" } ?? "") + (message.map { ": \($0)" } ?? "")
            for secret in secrets where !secret.isEmpty { text = text.replacingOccurrences(of: secret, with: "***") }
            return text
        }
    }

    /// `s3://bucket/key`, for messages.
    func location(_ key: String?) -> String { "s3://\(endpoint.bucket)" + (key.map { "/" + $0 } ?? "") }

    /// The text of the answer's first `<name>`, or `StoreError.remote` naming `key` and what is
    /// wrong with the answer (not XML, no such element).
    func field(_ r: Response, _ name: String, key: String?, what: String) throws(StoreError) -> String {
        do { return try S3XML(parsing: r.body).required(name) } catch {
            throw .remote(path: location(key), detail: "\(what): unreadable answer (HTTP \(r.status)): \(error)")
        }
    }

    /// The XML of an answer, or `StoreError.remote` naming `key` and what is wrong with it.
    func xml(_ r: Response, key: String?, what: String) throws(StoreError) -> S3XML {
        do { return try S3XML(parsing: r.body) } catch {
            throw .remote(path: location(key), detail: "\(what): unreadable answer (HTTP \(r.status)): \(error)")
        }
    }

    /// One request through EvidenceHTTP's retry loop (`HTTPClient.retryingBlocking`): a
    /// connection failure or an answer it judges retryable (408, 429, 5xx: S3's `SlowDown` and
    /// `InternalError`) is sent again after the `retry` back-off, never sooner than the server's
    /// `Retry-After`, and a 429/503 with `Retry-After` pauses every request to the endpoint
    /// (`OriginPause`). A bounded body is resent from its start. Other answers, and the last
    /// retryable one, are returned as they are; a request that got no answer throws
    /// `StoreError.remote`. `query` is `name=value&…`, already encoded and sorted by name.
    func send(_ method: String, key: String?, query: String = "", headers: [(String, String)] = [],
              body: Body = .none, maxBody: Int = 16 << 20) throws(StoreError) -> Response {
        let url = self.url(key: key, query: query)
        do {
            let answer = try HTTPClient.retryingBlocking(method: method, url: url, policy: retry) { () throws(HTTPError) in
                try once(method, url: url, headers: headers, body: body, maxBody: maxBody)
            }
            return Response(status: answer.status, headers: answer.headers, body: answer.body,
                            secrets: [endpoint.secretKey, endpoint.accessKey])
        } catch {
            throw .remote(path: location(key), detail: "S3 \(method) failed: \(Self.detail(error))")
        }
    }

    func url(key: String?, query: String) -> String {
        var path = "/" + endpoint.bucket
        if let key { path += "/" + key }
        return endpoint.url + path + (query.isEmpty ? "" : "?" + query)
    }

    /// What went wrong, without the method and URL the store's error already names.
    static func detail(_ e: HTTPError) -> String {
        let what: String
        switch e.kind {
        case .transport(_, let name): what = e.message.isEmpty ? name : "\(e.message) (\(name))"
        case .timeout: what = "timed out" + (e.message.isEmpty ? "" : ": \(e.message)")
        case .paused: what = "not sent: the server asked to wait \(e.retryAfter.map { "\(Int($0)) s" } ?? "longer")"
        case .status(let code): what = "HTTP \(code)"
        case .tls, .tooLarge, .cancelled: what = e.message.isEmpty ? e.description : e.message
        }
        return what
    }

    /// One attempt: the answer, or the `HTTPError` EvidenceHTTP's curl-error table gives (`CurlCode`).
    private func once(_ method: String, url: String, headers: [(String, String)],
                      body: Body, maxBody: Int) throws(HTTPError) -> HTTPResponse {
        func failure(_ code: Int, _ message: String) -> HTTPError {
            HTTPError(kind: .transport(code: code, name: CurlCode.name(code)), method: method, url: url, message: message,
                      isRetryable: false)
        }
        guard let h = takeHandle() else { throw failure(2, "libcurl could not be initialised") }
        var keep = true
        defer { giveBack(h, keep: keep) }
        curl_easy_reset(h)
        let call = S3Call(body: body, maxBody: maxBody)
        let outcome = withExtendedLifetime(call) { () -> Result<HTTPResponse, HTTPError> in
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
                return .failure(failure(Int(bad.rawValue), "curl option not accepted: \(String(cString: curl_easy_strerror(bad)))"))
            }
            let code = curl_easy_perform(h)
            if let local = call.localError { keep = false; return .failure(failure(CurlCode.readError, local)) }
            if call.tooLarge {
                keep = false
                return .failure(HTTPError(kind: .tooLarge, method: method, url: url, message: "answer larger than \(maxBody) bytes"))
            }
            guard code == CURLE_OK else {
                keep = false
                // curl's own text names the host and the failure, never the credentials.
                var text = String(cString: curl_easy_strerror(code))
                if code.rawValue == 60 || code.rawValue == 77 {
                    text += endpoint.caFile.map { " (the server's certificate is not signed by a trusted CA, nor by \($0) from [store] tls_ca_file)" }
                        ?? " (the server's certificate is not signed by a trusted CA: set [store] tls_ca_file to the CA's PEM file)"
                }
                return .failure(CurlCode.failure(Int(code.rawValue), text, method: method, url: url))
            }
            var status = 0
            _ = evidence_curl_getinfo_long(h, CURLINFO_RESPONSE_CODE, &status)
            return .success(HTTPResponse(status: status, headers: call.headers, body: call.body, url: url))
        }
        return try outcome.get()
    }

    private func takeHandle() -> UnsafeMutableRawPointer? {
        idle.withLock { $0.popLast() }?.raw ?? curl_easy_init()
    }

    private func giveBack(_ h: UnsafeMutableRawPointer, keep: Bool) {
        let kept = keep && idle.withLock { handles in
            guard handles.count < 8 else { return false }
            handles.append(CurlHandle(raw: h))
            return true
        }
        if !kept { curl_easy_cleanup(h) }
    }
}

/// A libcurl easy handle between requests: owned by the idle list or by the one request that took it.
private struct CurlHandle: @unchecked Sendable {   // C handle; used by one thread at a time (taken from and given back to the list)
    let raw: UnsafeMutableRawPointer
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
