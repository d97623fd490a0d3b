import Foundation
import Glibc
import Synchronization

/// A scripted stand-in for an S3 endpoint on 127.0.0.1 (port chosen by the kernel): each
/// request gets the answer `script` gives for it and its number (1-based), on a connection
/// that is then closed. Records when each request arrived. For answers moto does not give
/// (503 SlowDown with `Retry-After`, malformed or hostile XML).
final class ScriptedS3: Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: [(String, String)] = []
        var body = Data()
        static func xml(_ text: String, status: Int = 200) -> Answer {
            Answer(status: status, headers: [("Content-Type", "application/xml")], body: Data(text.utf8))
        }
    }
    struct Seen: Sendable {
        var method: String
        var target: String
        var at: ContinuousClock.Instant
    }
    typealias Script = @Sendable (_ method: String, _ target: String, _ number: Int) -> Answer

    let port: Int
    private let listener: Int32
    private let script: Script
    private let seen = Mutex<[Seen]>([])
    private let stopped = Mutex(false)

    init(_ script: @escaping Script) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0,
              withUnsafeMutablePointer(to: &addr, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }) == 0
        else { throw POSIXError(.EADDRNOTAVAIL) }
        listener = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        self.script = script
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var url: String { "http://127.0.0.1:\(port)" }
    var requests: [Seen] { seen.withLock { $0 } }

    func stop() {
        stopped.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while !stopped.withLock({ $0 }) {
            let fd = accept(listener, nil, nil)
            if fd < 0 { if errno == EINTR { continue }; break }
            serve(fd)
            close(fd)
        }
        close(listener)
    }

    private func serve(_ fd: Int32) {
        var bytes = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        let end: Int
        while true {
            if let r = Self.find([13, 10, 13, 10], in: bytes) { end = r; break }
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return }
            bytes += buffer[0..<n]
        }
        let head = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let line = head[0].split(separator: " ")
        guard line.count >= 2 else { return }
        let length = head.dropFirst().compactMap { h -> Int? in
            let parts = h.split(separator: ":", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "content-length" ? Int(parts[1].trimmingCharacters(in: .whitespaces)) : nil
        }.first ?? 0
        var body = bytes.count - end - 4
        while body < length {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return }
            body += n
        }
        let (method, target) = (String(line[0]), String(line[1]))
        let number = seen.withLock { s in
            s.append(Seen(method: method, target: target, at: .now))
            return s.count
        }
        let answer = script(method, target, number)
        var text = "HTTP/1.1 \(answer.status) Scripted\r\nConnection: close\r\nContent-Length: \(answer.body.count)\r\n"
        for (name, value) in answer.headers { text += "\(name): \(value)\r\n" }
        var out = Array((text + "\r\n").utf8)
        if method != "HEAD" { out += answer.body }
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return }
            sent += n
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}
