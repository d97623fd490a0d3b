import EvidenceHTTP
import Foundation
import Logging
import Testing
#if canImport(Glibc)
import Glibc
import EvidenceTesting
#endif

/// Deterministic, non-repeating-at-power-of-two content for large transfers: byte `i` is
/// `block[i % 65521]` (a prime period, so a misplaced 64 KiB chunk is noticed).
enum Pattern {
    static let period = 65_521
    static let block: [UInt8] = {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<period).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }()

    static func fill(_ buffer: UnsafeMutableRawBufferPointer, at offset: Int64) {
        block.withUnsafeBytes { source in
            var position = 0
            var start = Int(offset % Int64(period))
            while position < buffer.count {
                let count = min(period - start, buffer.count - position)
                memcpy(buffer.baseAddress! + position, source.baseAddress! + start, count)
                position += count
                start = 0
            }
        }
    }

    static func matches(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        block.withUnsafeBytes { source in
            var position = 0
            var start = Int(offset % Int64(period))
            while position < bytes.count {
                let count = min(period - start, bytes.count - position)
                if memcmp(bytes.baseAddress! + position, source.baseAddress! + start, count) != 0 { return false }
                position += count
                start = 0
            }
            return true
        }
    }

    static func data(count: Int, at offset: Int64 = 0) -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { fill($0, at: offset) }
        return data
    }

    /// Writes `size` pattern bytes to `path` with a 1 MiB buffer.
    static func writeFile(_ path: String, size: Int64) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) == true,
              let handle = FileHandle(forWritingAtPath: path) else {
            throw POSIXError(.EIO)
        }
        defer { try? handle.close() }
        var written: Int64 = 0
        while written < size {
            let count = Int(min(1 << 20, size - written))
            try handle.write(contentsOf: data(count: count, at: written))
            written += Int64(count)
        }
    }

    /// Whether `path` holds exactly `size` pattern bytes.
    static func fileMatches(_ path: String, size: Int64) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        var offset: Int64 = 0
        while true {
            guard let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty else { break }
            guard chunk.withUnsafeBytes({ matches($0, at: offset) }) else { return false }
            offset += Int64(chunk.count)
        }
        return offset == size
    }
}


/// Resident set size of this process, in bytes (from /proc/self/status).
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes * 1024
    }
    return 0
}

/// Collects every log line (level, message and metadata) so tests can look for leaked secrets.
final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [String] = []

    var lines: [String] { lock.withLock { collected } }

    var logger: Logger {
        var logger = Logger(label: "evidence.http.test") { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ line: String) { lock.withLock { collected.append(line) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.append("\(event.level) \(event.message) \(all)")
        }
    }
}

/// A client for tests: quiet logger, fast retries unless told otherwise.
func makeClient(_ configure: (inout HTTPClientConfiguration) -> Void = { _ in },
                logger: Logger = Logger(label: "evidence.http.test", factory: { _ in SwiftLogNoOpLogHandler() }))
    -> HTTPClient
{
    var configuration = HTTPClientConfiguration()
    configuration.retry = RetryPolicy(maxAttempts: 5, base: 0.02, cap: 0.1)
    configuration.totalTimeout = 30
    configure(&configuration)
    return HTTPClient(configuration: configuration, logger: logger)
}

/// Runs `body` and returns its result with the seconds it took.
func timed<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
    let start = ContinuousClock.now
    let value = try await body()
    let elapsed = ContinuousClock.now - start
    return (value, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

/// The HTTPError thrown by `body`, or nil when it did not throw.
func httpError<T>(_ body: () async throws -> T) async -> HTTPError? {
    do {
        _ = try await body()
        return nil
    } catch let error as HTTPError {
        return error
    } catch {
        Issue.record("not an HTTPError: \(error)")
        return nil
    }
}
