import EvidenceHTTP
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small scripted HTTP/1.1 server on 127.0.0.1 (port chosen by the kernel), one thread per
/// connection. Each path has a handler that sees the parsed request and how many times the path
/// was hit, and answers with an `Action`. It records every request (bodies are streamed: only
/// the first MiB is kept, and compared on the fly with `Pattern`) so tests can assert what
/// really went over the wire, and how many requests of a path were in flight at once.
final class TestServer: @unchecked Sendable {
    struct Request: Sendable {
        var method: String
        var target: String
        var headers: [(name: String, value: String)]
        var bodyLength: Int
        /// The first `TestServer.keptBodyBytes` bytes.
        var body: Data
        /// Whether every received body byte equals `Pattern` at the same offset.
        var bodyMatchesPattern: Bool
        var connection: Int

        var path: String { String(target.prefix { $0 != "?" }) }

        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    indirect enum Action: Sendable {
        case respond(Int, headers: [(String, String)] = [], body: Data = Data())
        /// Bytes written verbatim, then the connection is closed.
        case raw(Data)
        /// Close the connection without answering.
        case drop
        /// Never answer; returns when the client goes away or the server stops.
        case hang
        case delay(Double, Action)
        /// `length` bytes of `Pattern`; with `dropAfter`, the connection is closed after that many.
        case stream(Int, length: Int64, dropAfter: Int64? = nil)
    }

    typealias Handler = @Sendable (_ request: Request, _ hit: Int) -> Action

    static let keptBodyBytes = 1 << 20

    let port: Int
    let keepAlive: Bool
    private let listener: Int32

    private let lock = NSLock()
    // Guarded by `lock`.
    private var routes: [String: Handler]
    private var recorded: [Request] = []
    private var hitCount: [String: Int] = [:]
    private var inFlight: [String: Int] = [:]
    private var peak: [String: Int] = [:]
    private var connections = 0
    private var sockets: Set<Int32> = []
    private var stopped = false

    init(keepAlive: Bool = false, routes: [String: Handler] = [:]) throws {
        self.keepAlive = keepAlive
        self.routes = routes
        let (fd, port) = try Self.listen()
        self.listener = fd
        self.port = port
        let thread = Thread { [self] in self.acceptLoop() }
        thread.name = "test-server-accept"
        thread.start()
    }

    var base: String { "http://127.0.0.1:\(port)" }
    func url(_ pathAndQuery: String) -> String { base + pathAndQuery }

    func route(_ path: String, _ handler: @escaping Handler) {
        lock.withLock { routes[path] = handler }
    }

    var requests: [Request] { lock.withLock { recorded } }
    func hits(_ path: String) -> Int { lock.withLock { hitCount[path] ?? 0 } }
    func peakInFlight(_ path: String) -> Int { lock.withLock { peak[path] ?? 0 } }
    func inFlightNow(_ path: String) -> Int { lock.withLock { inFlight[path] ?? 0 } }
    var connectionCount: Int { lock.withLock { connections } }

    /// Stops accepting and wakes every connection thread; the port is released.
    func stop() {
        lock.lock()
        let alreadyStopped = stopped
        stopped = true
        let open = sockets
        lock.unlock()
        if alreadyStopped { return }
        // A later server may get this port: it must not inherit a pause this one asked for.
        // Only this origin's: the other tests, running in parallel, keep theirs.
        OriginPause.shared.reset(origin: url("/"))
        shutdown(listener, Int32(SHUT_RDWR))
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    // MARK: - Sockets

    /// A listening socket on 127.0.0.1 and its port.
    static func listen(port: Int = 0) throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port on 127.0.0.1 that nothing listens on (bound, then released).
    static func freePort() throws -> Int {
        let (fd, port) = try listen()
        close(fd)
        return port
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR && !isStopped { continue }
                break
            }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            lock.lock()
            if stopped {
                lock.unlock()
                close(fd)
                break
            }
            connections += 1
            let number = connections
            sockets.insert(fd)
            lock.unlock()
            let thread = Thread { [self] in
                self.serve(fd, connection: number)
                self.lock.withLock { _ = self.sockets.remove(fd) }
                close(fd)
            }
            thread.name = "test-server-conn-\(number)"
            thread.start()
        }
        close(listener)
    }

    // MARK: - One connection

    private func serve(_ fd: Int32, connection: Int) {
        var pending = [UInt8]()
        while !isStopped {
            guard var request = readHead(fd, &pending, connection: connection) else { return }
            let contentLength = Int(request.header("content-length") ?? "0") ?? 0
            guard readBody(fd, &pending, length: contentLength, into: &request) else { return }

            lock.lock()
            recorded.append(request)
            let hit = (hitCount[request.path] ?? 0) + 1
            hitCount[request.path] = hit
            let now = (inFlight[request.path] ?? 0) + 1
            inFlight[request.path] = now
            peak[request.path] = max(peak[request.path] ?? 0, now)
            let handler = routes[request.path]
            lock.unlock()

            let action = handler?(request, hit) ?? .respond(404, body: Data("no route \(request.path)".utf8))
            // A request stops being "in flight" when its answer starts: once the client has
            // read it, it may send the next request before this thread gets to run again.
            var answered = false
            let markAnswered = {
                if !answered {
                    answered = true
                    self.lock.withLock { self.inFlight[request.path, default: 1] -= 1 }
                }
            }
            let keepOpen = perform(action, on: fd, answering: markAnswered)
            markAnswered()
            if !keepOpen || !keepAlive || request.header("connection")?.lowercased() == "close" { return }
        }
    }

    private func readHead(_ fd: Int32, _ pending: inout [UInt8], connection: Int) -> Request? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while true {
            if pending.count >= 4 {
                for i in 0...(pending.count - 4) where pending[i..<(i + 4)].elementsEqual(terminator) {
                    end = i
                    break
                }
            }
            if end != nil { break }
            guard receive(fd, into: &pending) else { return nil }
        }
        let head = String(decoding: pending[0..<end!], as: UTF8.self)
        pending.removeFirst(end! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return Request(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers,
                       bodyLength: 0, body: Data(), bodyMatchesPattern: true, connection: connection)
    }

    private func readBody(_ fd: Int32, _ pending: inout [UInt8], length: Int, into request: inout Request) -> Bool {
        var received = 0
        func consume(_ bytes: UnsafeRawBufferPointer) {
            if request.bodyMatchesPattern, !Pattern.matches(bytes, at: Int64(received)) {
                request.bodyMatchesPattern = false
            }
            let room = Self.keptBodyBytes - request.body.count
            if room > 0 { request.body.append(contentsOf: bytes.prefix(room)) }
            received += bytes.count
        }
        let first = min(length, pending.count)
        pending.withUnsafeBytes { consume(UnsafeRawBufferPointer(rebasing: $0[0..<first])) }
        pending.removeFirst(first)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while received < length {
            let want = min(buffer.count, length - received)
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, want, 0) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { return false }
            buffer.withUnsafeBytes { consume(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
        }
        request.bodyLength = received
        return true
    }

    private func receive(_ fd: Int32, into pending: inout [UInt8]) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { return false }
            pending.append(contentsOf: buffer[0..<got])
            return true
        }
    }

    /// Returns whether the connection may be kept open.
    private func perform(_ action: Action, on fd: Int32, answering: () -> Void) -> Bool {
        switch action {
        case .respond(let status, let headers, let body):
            answering()
            return send(fd, head(status, headers: headers, length: Int64(body.count))) && send(fd, body)
        case .raw(let bytes):
            answering()
            _ = send(fd, bytes)
            return false
        case .drop:
            return false
        case .hang:
            var byte: UInt8 = 0
            while !isStopped {
                let got = recv(fd, &byte, 1, 0)
                if got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN) { break }
            }
            return false
        case .delay(let seconds, let next):
            // The scenario: a server slow to answer, held in short steps so that `stop()` ends it.
            let until = Date(timeIntervalSinceNow: seconds)
            while Date() < until && !isStopped { usleep(10_000) }
            return perform(next, on: fd, answering: answering)
        case .stream(let status, let length, let dropAfter):
            answering()
            guard send(fd, head(status, headers: [], length: length)) else { return false }
            let limit = min(length, dropAfter ?? length)
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            var sent: Int64 = 0
            while sent < limit {
                let count = Int(min(Int64(chunk.count), limit - sent))
                chunk.withUnsafeMutableBytes { Pattern.fill(UnsafeMutableRawBufferPointer(rebasing: $0[0..<count]), at: sent) }
                guard chunk.withUnsafeBytes({ sendAll(fd, UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) else {
                    return false
                }
                sent += Int64(count)
            }
            return dropAfter == nil
        }
    }

    private func head(_ status: Int, headers: [(String, String)], length: Int64) -> Data {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        var hasLength = false
        for (name, value) in headers {
            text += "\(name): \(value)\r\n"
            if name.lowercased() == "content-length" { hasLength = true }
        }
        if !hasLength { text += "Content-Length: \(length)\r\n" }
        if !keepAlive { text += "Connection: close\r\n" }
        return Data((text + "\r\n").utf8)
    }

    private func send(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { sendAll(fd, $0) }
    }

    private func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 302: "Found"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
