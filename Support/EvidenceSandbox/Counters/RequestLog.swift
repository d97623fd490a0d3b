import EvidenceCore
import Foundation

/// `<state-dir>/requests.log`: one JSON object per line and request, appended with
/// `O_APPEND` so lines from concurrent requests never interleave:
/// `{"time":"2026-…Z","method":"POST","path":"/v1/reports/","status":201,"client":"127.0.0.1","ms":3}`
/// where `status` is a number, or the string `"dropped"` for a closed connection; answers that
/// carry `Retry-After` add `"retry_after":SECONDS`, so a test can measure whether clients wait.
public final class RequestLog: @unchecked Sendable {
    public let path: String
    private let lock = NSLock()
    private var fd: Int32

    public init(path: String) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw SandboxError.stateDirectory("cannot open \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    public enum Outcome: Sendable {
        case status(Int)
        case dropped
    }

    public func append(time: Date, method: String, path: String, outcome: Outcome, client: String, milliseconds: Int,
                       retryAfter: Int? = nil) {
        let status: JSONValue
        switch outcome {
        case .status(let code): status = .int(Int64(code))
        case .dropped: status = .string("dropped")
        }
        var fields: [(String, JSONValue)] = [
            ("time", .string(Timestamp.string(time))),
            ("method", .string(method)),
            ("path", .string(path)),
            ("status", status),
            ("client", .string(client)),
            ("ms", .int(Int64(milliseconds))),
        ]
        if let retryAfter { fields.append(("retry_after", .int(Int64(retryAfter)))) }
        let line = JSONValue.object(fields).serialized() + Data("\n".utf8)
        lock.lock()
        defer { lock.unlock() }
        // One write per line: O_APPEND keeps each line whole; a short write on a local file
        // means the disk is full, and the sandbox keeps serving regardless.
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
