import CCurl
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One attempt on one easy handle, run on a pool thread. The curl callbacks receive this object
/// as their user pointer; it lives on the stack of `run` for the whole `curl_easy_perform`.
final class Transfer {
    let job: TransferJob
    let request: HTTPRequest
    let configuration: HTTPClientConfiguration
    /// The request's credentials, to mask in error messages: worked out at the first error.
    lazy var secrets: [String] = Redact.secrets(of: request)

    // Response, rebuilt for every status block so that interim `1xx` answers are dropped.
    var status = 0
    var headerLines: [(String, String)] = []
    var body = Data()
    var bodyGoesToFile: Bool?
    var tooLarge = false

    // Upload source.
    var uploadData: Data?
    var uploadFD: Int32 = -1
    var uploadStart: Int64 = 0
    var uploadLength: Int64 = 0
    var uploadPosition: Int64 = 0

    // Download sink.
    var downloadFD: Int32 = -1
    var downloadTemp: String?
    /// The body's hash, for a request with `digestBody` (made at its first 2xx byte).
    var bodyHash: BodyHash?

    /// A failure on our side of the transfer (file I/O); reported instead of curl's code.
    var localError: (code: Int, message: String)?
    var lastProgress: (Int64, Int64) = (-1, -1)
    /// Set when curl was about to send the request while its origin was paused: the send was
    /// stopped before a byte went (see `configure`).
    var heldByPause = false

    /// An error body of a download request is kept in memory only up to this size.
    static let errorBodyLimit = 64 << 10

    init(job: TransferJob) {
        self.job = job
        self.request = job.request
        self.configuration = job.configuration
    }

    /// What one run of the transfer came to.
    enum Run {
        case finished(TransferJob.Outcome)
        /// Nothing was sent on this run: the origin was paused when curl was about to send.
        /// Run it again once the pause is over.
        case heldByPause
    }

    static func run(_ job: TransferJob, on easy: CurlEasy) -> Run {
        let transfer = Transfer(job: job)
        let outcome = withExtendedLifetime(transfer) { transfer.perform(easy) }
        if transfer.heldByPause, case .failure = outcome, !job.isCancelled { return .heldByPause }
        return .finished(outcome)
    }

    // MARK: - Perform

    private func perform(_ easy: CurlEasy) -> TransferJob.Outcome {
        guard let h = easy.handle, CurlGlobal.initialized else {
            return .failure(error(.transport(code: 2, name: CurlCode.name(2)), "libcurl could not be initialised",
                                  retryable: false))
        }
        if job.isCancelled { return .failure(job.cancelledError) }
        if let failure = openUpload() { return .failure(failure) }
        defer { closeUpload() }

        var headerList: UnsafeMutablePointer<curl_slist>?
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer {
            // Reset first so the handle keeps no pointer to what is freed below.
            curl_easy_reset(h)
            curl_slist_free_all(headerList)
            errorBuffer.deallocate()
        }
        curl_easy_reset(h)

        switch buildHeaders() {
        case .success(let list): headerList = list
        case .failure(let failure): return .failure(failure)
        }
        let setupFailed = configure(h, headers: headerList, errorBuffer: errorBuffer)
        if let setupFailed {
            return .failure(error(.transport(code: Int(setupFailed.rawValue), name: CurlCode.name(Int(setupFailed.rawValue))),
                                  "curl option not accepted: \(String(cString: curl_easy_strerror(setupFailed)))",
                                  retryable: false))
        }

        let code = Int(curl_easy_perform(h).rawValue)

        guard code == 0 else {
            discardDownload()
            // A completed transfer is reported even if the task was cancelled meanwhile.
            if job.isCancelled { return .failure(job.cancelledError) }
            return .failure(transferError(code: code, errorBuffer: errorBuffer))
        }

        var responseCode = 0
        _ = evidence_curl_getinfo_long(h, CURLINFO_RESPONSE_CODE, &responseCode)
        if responseCode > 0 { status = responseCode }
        var effective: UnsafePointer<CChar>?
        _ = evidence_curl_getinfo_string(h, CURLINFO_EFFECTIVE_URL, &effective)
        let url = Redact.url(effective.map { String(cString: $0) } ?? request.url)

        // A 2xx whose body went elsewhere (a second status line among the headers switched it):
        // neither an empty download nor the digest of an empty body may stand for it.
        if (request.downloadTo != nil || request.digestBody) && (200..<300).contains(status) && bodyGoesToFile == false {
            discardDownload()
            return .failure(localFailure(8, "HTTP \(status) after a different status line among the headers: the body was not taken as the answer's"))
        }
        if request.downloadTo != nil {
            if (200..<300).contains(status) {
                if let failure = commitDownload() { return .failure(failure) }
            } else {
                discardDownload()
            }
        }
        var response = HTTPResponse(status: status, headers: responseHeaders(), body: body, url: url)
        if request.digestBody && (200..<300).contains(status) {
            let hash = bodyHash ?? BodyHash()  // an empty body
            response.bodyDigest = (hash.finish(), hash.length)
        }
        response.sentWith = SentRequest(url: request.url, headers: request.headers)
        return .success(response)
    }

    private func configure(_ h: UnsafeMutableRawPointer, headers: UnsafeMutablePointer<curl_slist>?,
                           errorBuffer: UnsafeMutablePointer<CChar>) -> CURLcode? {
        let me = Unmanaged.passUnretained(self).toOpaque()
        let config = configuration
        var results: [CURLcode] = []
        func long(_ option: CURLoption, _ value: Int) { results.append(evidence_curl_setopt_long(h, option, value)) }
        func string(_ option: CURLoption, _ value: String) { results.append(evidence_curl_setopt_string(h, option, value)) }
        func offT(_ option: CURLoption, _ value: Int64) { results.append(evidence_curl_setopt_off_t(h, option, curl_off_t(value))) }
        func pointer(_ option: CURLoption, _ value: UnsafeMutableRawPointer?) { results.append(evidence_curl_setopt_pointer(h, option, value)) }

        pointer(CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer))
        string(CURLOPT_URL, request.url)
        string(CURLOPT_PROTOCOLS_STR, "http,https")
        long(CURLOPT_NOSIGNAL, 1)
        long(CURLOPT_FOLLOWLOCATION, 0)
        long(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        long(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(config.connectTimeout))
        if let silent = request.silentFor {
            long(CURLOPT_TIMEOUT_MS, Self.milliseconds(silent))
            long(CURLOPT_LOW_SPEED_LIMIT, 0)
        } else {
            long(CURLOPT_TIMEOUT_MS, request.isBulk ? 0 : Self.milliseconds(config.totalTimeout))
            long(CURLOPT_LOW_SPEED_LIMIT, max(0, config.lowSpeedLimit))
        }
        long(CURLOPT_LOW_SPEED_TIME, max(0, Int(config.lowSpeedTime.rounded(.up))))
        long(CURLOPT_TCP_KEEPALIVE, 1)
        long(CURLOPT_BUFFERSIZE, 64 << 10)
        // Large bodies go in 2 MiB reads (curl's maximum; its default is 64 KiB): fewer callbacks
        // and syscalls per GiB sent, measurably faster to a local WebDAV server. Smaller ones
        // get a buffer of their own size: curl allocates this buffer afresh for every request
        // (the option frees it), and a 2 MiB one for each small body of the pipeline raised
        // glibc's mmap threshold to 2 MiB and left the heap holding those blocks.
        long(CURLOPT_UPLOAD_BUFFERSIZE, Self.uploadBufferSize(for: uploadLength))
        // TLS verification is not configurable.
        long(CURLOPT_SSL_VERIFYPEER, 1)
        long(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = config.caFile { string(CURLOPT_CAINFO, caFile) }
        string(CURLOPT_USERAGENT, config.userAgent)
        results.append(evidence_curl_setopt_slist(h, CURLOPT_HTTPHEADER, headers))

        results.append(evidence_curl_setopt_write_cb(h, CURLOPT_HEADERFUNCTION) { data, size, count, user in
            guard let data, let user else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
            return transfer.receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count))
        })
        pointer(CURLOPT_HEADERDATA, me)
        results.append(evidence_curl_setopt_write_cb(h, CURLOPT_WRITEFUNCTION) { data, size, count, user in
            guard let data, let user else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
            return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
        })
        pointer(CURLOPT_WRITEDATA, me)
        long(CURLOPT_NOPROGRESS, 0)
        results.append(evidence_curl_setopt_xferinfo_cb(h) { user, _, received, _, sent in
            guard let user else { return 1 }
            return Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue().reportProgress(sent: sent, received: received)
        })
        pointer(CURLOPT_XFERINFODATA, me)
        // No byte goes to a paused origin (`OriginPause`). `HTTPClient` waits out a pause before
        // it hands the request to curl, but curl may send later than that: after a slow connect,
        // or again by itself on a fresh connection when a kept-alive one closed before any
        // answer. That resend is how curl recovers from a connection the server closed while
        // idle, so it is kept; only while the origin is paused is it stopped here, before the
        // request goes, and `HTTPClient` runs the transfer again once the pause is over (a
        // fault soak saw curl's immediate resend land inside a Retry-After window).
        results.append(evidence_curl_setopt_prereq_cb(h) { user, _, _, _, _ in
            guard let user else { return 1 }   // CURL_PREREQFUNC_ABORT
            let transfer = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
            guard OriginPause.shared.remaining(for: transfer.request.url) > 0 else { return 0 }   // CURL_PREREQFUNC_OK
            transfer.heldByPause = true
            return 1
        })
        pointer(CURLOPT_PREREQDATA, me)

        // Method and body. Bodies always go through the read callback, so file and memory
        // sources behave the same and curl can rewind them (seek callback).
        let method = request.method
        if method == "HEAD" {
            long(CURLOPT_NOBODY, 1)
        } else if !hasBody {
            long(CURLOPT_HTTPGET, 1)
            if method != "GET" { string(CURLOPT_CUSTOMREQUEST, method) }
        } else {
            if method == "POST" {
                long(CURLOPT_POST, 1)
                offT(CURLOPT_POSTFIELDSIZE_LARGE, uploadLength)
            } else {
                long(CURLOPT_UPLOAD, 1)
                offT(CURLOPT_INFILESIZE_LARGE, uploadLength)
                if method != "PUT" { string(CURLOPT_CUSTOMREQUEST, method) }
            }
            results.append(evidence_curl_setopt_write_cb(h, CURLOPT_READFUNCTION) { buffer, size, count, user in
                guard let buffer, let user else { return 0x1000_0000 }  // CURL_READFUNC_ABORT
                let transfer = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
                return transfer.supplyBody(UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
            })
            pointer(CURLOPT_READDATA, me)
            results.append(evidence_curl_setopt_seek_cb(h) { user, offset, origin in
                guard let user, origin == SEEK_SET else { return 2 }  // CURL_SEEKFUNC_CANTSEEK
                return Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue().rewind(to: Int64(offset))
            })
            pointer(CURLOPT_SEEKDATA, me)
        }
        return results.first { $0 != CURLE_OK }
    }

    private static func milliseconds(_ seconds: Double) -> Int {
        guard seconds > 0, seconds.isFinite else { return 0 }
        return max(1, Int((seconds * 1000).rounded()))
    }

    /// The upload buffer for a body of `length` bytes: the body rounded up to 16 KiB (curl's
    /// minimum), at most 2 MiB (its maximum).
    static func uploadBufferSize(for length: Int64) -> Int {
        let minimum: Int64 = 16 << 10, maximum: Int64 = 2 << 20
        let rounded = (max(length, 1) + minimum - 1) / minimum * minimum
        return Int(min(maximum, rounded))
    }

    /// POST and PUT always send a body (possibly empty); other methods only when given one.
    private var hasBody: Bool {
        if case .none = request.body {
            return request.method == "POST" || request.method == "PUT"
        }
        return true
    }

    private func buildHeaders() -> Result<UnsafeMutablePointer<curl_slist>?, HTTPError> {
        var lines: [String] = []
        var names = Set<String>()
        for (name, value) in request.headers {
            // Scalars, not Characters: "\r\n" is a single Character.
            let invalid = name.isEmpty
                || name.unicodeScalars.contains { $0 == ":" || $0 == " " || $0.properties.generalCategory == .control }
                || value.unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" }
            if invalid {
                return .failure(error(.transport(code: CurlCode.badArgument, name: CurlCode.name(CurlCode.badArgument)),
                                      "invalid header \(name.debugDescription)", retryable: false))
            }
            names.insert(name.lowercased())
            // "Name;" is curl's way to send a header with an empty value ("Name:" would remove it).
            lines.append(value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        // No `Expect: 100-continue` round trip: servers that need it are rare, stalls are not.
        if !names.contains("expect") { lines.append("Expect:") }
        // Don't let curl label a POST body as a form unless the caller said so.
        if request.method == "POST", hasBody, !names.contains("content-type") { lines.append("Content-Type:") }

        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let extended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                return .failure(error(.transport(code: 27, name: CurlCode.name(27)), "out of memory", retryable: false))
            }
            list = extended
        }
        return .success(list)
    }

    // MARK: - Callbacks (pool thread, inside curl_easy_perform)

    /// One header line from curl (its CR LF included), read as bytes: a status line starts a
    /// new block, a line starting with SP or HTAB continues the last field (obsolete folding),
    /// any other line with a colon is a field, name lowercased, both trimmed of SP and HTAB.
    func receiveHeader(_ line: UnsafeRawBufferPointer) -> Int {
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        let text = line[0..<end]
        if text.starts(with: "HTTP/".utf8) {
            // A new status block: an interim 1xx answer before it is forgotten.
            let parts = String(decoding: text, as: UTF8.self).split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            headerLines.removeAll()
            bodyGoesToFile = nil
            bodyHash = nil
        } else if let first = text.first, first == 0x20 || first == 0x09, !headerLines.isEmpty {
            headerLines[headerLines.count - 1].1 += " " + Self.trimmedOWS(text)
        } else if let colon = text.firstIndex(of: UInt8(ascii: ":")) {
            let name = Self.trimmedOWS(text[..<colon]).lowercased()
            let value = Self.trimmedOWS(text[(colon + 1)...])
            headerLines.append((name, value))
        }
        return line.count
    }

    /// `bytes` as text without leading and trailing SP and HTAB (HTTP's optional whitespace).
    static func trimmedOWS(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        var lo = bytes.startIndex, hi = bytes.endIndex
        while lo < hi, bytes[lo] == 0x20 || bytes[lo] == 0x09 { lo += 1 }
        while hi > lo, bytes[hi - 1] == 0x20 || bytes[hi - 1] == 0x09 { hi -= 1 }
        return String(decoding: bytes[lo..<hi], as: UTF8.self)
    }

    func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Int {
        if job.isCancelled { return 0 }
        if bodyGoesToFile == nil {
            bodyGoesToFile = (request.downloadTo != nil || request.digestBody) && (200..<300).contains(status)
        }
        if bodyGoesToFile == true {
            if request.digestBody {
                if bodyHash == nil { bodyHash = BodyHash() }
                bodyHash?.update(chunk)
                return chunk.count
            }
            return writeToDownload(chunk) ? chunk.count : 0
        }
        if request.downloadTo != nil || request.digestBody {
            // The error body of a download: keep the start for the message, drop the rest.
            let room = max(0, Self.errorBodyLimit - body.count)
            body.append(contentsOf: chunk.prefix(room))
            return chunk.count
        }
        // A declared length over the limit is refused at the first byte, before anything is
        // buffered: an oversized answer never costs its size in memory.
        if body.isEmpty, let declared = headerLines.last(where: { $0.0 == "content-length" }).flatMap({ Int64($0.1) }),
           declared > Int64(configuration.maxResponseBytes) {
            tooLarge = true
            return 0
        }
        if body.count + chunk.count > configuration.maxResponseBytes {
            tooLarge = true
            return 0
        }
        body.append(contentsOf: chunk)
        return chunk.count
    }

    func supplyBody(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        let remaining = uploadLength - uploadPosition
        let wanted = Int(min(Int64(buffer.count), max(0, remaining)))
        guard wanted > 0 else { return 0 }
        if let data = uploadData {
            let start = data.startIndex + Int(uploadPosition)
            data.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]),
                           from: start..<(start + wanted))
            uploadPosition += Int64(wanted)
            return wanted
        }
        while true {
            let got = pread(uploadFD, buffer.baseAddress, wanted, off_t(uploadStart + uploadPosition))
            if got < 0 && errno == EINTR { continue }
            if got <= 0 {
                let reason = got < 0 ? String(cString: strerror(errno)) : "file is shorter than when the upload started"
                localError = (CurlCode.readError, "cannot read \(uploadPath): \(reason)")
                return 0x1000_0000  // CURL_READFUNC_ABORT
            }
            uploadPosition += Int64(got)
            return got
        }
    }

    func rewind(to offset: Int64) -> Int32 {
        guard offset >= 0, offset <= uploadLength else { return 1 }  // CURL_SEEKFUNC_FAIL
        uploadPosition = offset
        return 0
    }

    func reportProgress(sent: curl_off_t, received: curl_off_t) -> Int32 {
        if job.isCancelled { return 1 }
        let now = (Int64(sent), Int64(received))
        if let progress = job.progress, now != lastProgress {
            lastProgress = now
            progress(now.0, now.1)
        }
        return 0
    }

    // MARK: - Upload source

    private var uploadPath: String {
        if case .file(let path, _, _) = request.body { return path }
        return "request body"
    }

    private func openUpload() -> HTTPError? {
        switch request.body {
        case .none:
            uploadData = Data()
            uploadLength = 0
        case .data(let data):
            uploadData = data
            uploadLength = Int64(data.count)
        case .file(let path, let offset, let length):
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                return localFailure(CurlCode.readError, "cannot open \(path): \(String(cString: strerror(errno)))")
            }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let message = "cannot stat \(path): \(String(cString: strerror(errno)))"
                close(fd)
                return localFailure(CurlCode.readError, message)
            }
            let size = Int64(info.st_size)
            let count = length ?? (size - offset)
            guard offset >= 0, count >= 0, offset + count <= size else {
                close(fd)
                return localFailure(CurlCode.readError,
                                    "\(path) has \(size) bytes, fewer than the requested range \(offset)+\(count)")
            }
            uploadFD = fd
            uploadStart = offset
            uploadLength = count
        }
        uploadPosition = 0
        return nil
    }

    private func closeUpload() {
        if uploadFD >= 0 { close(uploadFD) }
        uploadFD = -1
        uploadData = nil
    }

    // MARK: - Download sink (temp file + fsync + rename)

    private func writeToDownload(_ chunk: UnsafeRawBufferPointer) -> Bool {
        if downloadFD < 0, !openDownload() { return false }
        var offset = 0
        while offset < chunk.count {
            let written = write(downloadFD, chunk.baseAddress! + offset, chunk.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                localError = (CurlCode.writeError, "cannot write \(downloadTemp ?? ""): \(String(cString: strerror(errno)))")
                return false
            }
            offset += written
        }
        return true
    }

    private func openDownload() -> Bool {
        guard let path = request.downloadTo else { return false }
        let temp = "\(path).part-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            localError = (CurlCode.writeError, "cannot create \(temp): \(String(cString: strerror(errno)))")
            return false
        }
        downloadFD = fd
        downloadTemp = temp
        return true
    }

    private func commitDownload() -> HTTPError? {
        guard let path = request.downloadTo else { return nil }
        // An empty 2xx body still produces the (empty) file.
        if downloadFD < 0, !openDownload() {
            return localFailure(localError?.code ?? CurlCode.writeError, localError?.message ?? "cannot create \(path)")
        }
        guard let temp = downloadTemp else { return nil }
        if fsync(downloadFD) != 0 {
            let message = "cannot fsync \(temp): \(String(cString: strerror(errno)))"
            discardDownload()
            return localFailure(CurlCode.writeError, message)
        }
        close(downloadFD)
        downloadFD = -1
        if rename(temp, path) != 0 {
            let message = "cannot rename \(temp) to \(path): \(String(cString: strerror(errno)))"
            discardDownload()
            return localFailure(CurlCode.writeError, message)
        }
        downloadTemp = nil
        let directory = (path as NSString).deletingLastPathComponent
        let dirFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            fsync(dirFD)
            close(dirFD)
        }
        return nil
    }

    private func discardDownload() {
        if downloadFD >= 0 { close(downloadFD) }
        downloadFD = -1
        if let temp = downloadTemp { unlink(temp) }
        downloadTemp = nil
    }

    // MARK: - Results

    private func responseHeaders() -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in headerLines {
            if let existing = headers[name] {
                headers[name] = existing + ", " + value
            } else {
                headers[name] = value
            }
        }
        return headers
    }

    private func transferError(code: Int, errorBuffer: UnsafeMutablePointer<CChar>) -> HTTPError {
        if tooLarge {
            return error(.tooLarge, "response body exceeds \(configuration.maxResponseBytes) bytes", retryable: false)
        }
        if let localError {
            return localFailure(localError.code, localError.message)
        }
        var text = String(cString: errorBuffer)
        if text.isEmpty { text = String(cString: curl_easy_strerror(CURLcode(UInt32(code)))) }
        text = Redact.text(text.trimmingCharacters(in: .whitespacesAndNewlines), secrets: secrets)
        var failure = CurlCode.failure(code, text, method: request.method, url: request.url)
        if failure.kind == .tls { failure.message += Self.tlsAdvice(text, configuration) }
        return failure
    }

    /// What to change in the config after a TLS failure: another host's certificate is not
    /// fixed by trusting a CA, an unknown issuer is (verification itself is never switched off).
    static func tlsAdvice(_ curlText: String, _ config: HTTPClientConfiguration) -> String {
        guard let table = config.settingsTable else { return "" }
        let lower = curlText.lowercased()
        if lower.contains("subject name") || lower.contains("host name") || lower.contains("hostname") {
            return " (the server's certificate is for another host name: check the URL in [\(table)]; a CA file does not change this)"
        }
        if lower.contains("certificate") || lower.contains("issuer") || lower.contains("self-signed") || lower.contains("self signed") {
            if let ca = config.caFile {
                return " (the server's certificate is not signed by a trusted CA, nor by \(ca) from [\(table)] tls_ca_file)"
            }
            return " (the server's certificate is not signed by a trusted CA: set tls_ca_file in [\(table)] to the CA's PEM file)"
        }
        return ""
    }

    private func localFailure(_ code: Int, _ message: String) -> HTTPError {
        error(.transport(code: code, name: CurlCode.name(code)), message, retryable: false)
    }

    private func error(_ kind: HTTPError.Kind, _ message: String, retryable: Bool? = nil) -> HTTPError {
        HTTPError(kind: kind, method: request.method, url: Redact.url(request.url),
                  message: Redact.text(message, secrets: secrets), isRetryable: retryable)
    }
}
