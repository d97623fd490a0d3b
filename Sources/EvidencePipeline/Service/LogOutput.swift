import EvidenceCore
import Foundation
import Logging
import Synchronization

/// swift-log handler writing one line per message to stderr, as text or JSON. Secrets never
/// reach it: callers log paths, hashes and remote answers, never credentials. In text lines every
/// control character of the message and metadata (file names, server answers) is escaped, so a
/// name holding a newline or ESC cannot forge a log line or drive the terminal of whoever reads it.
public struct StderrLogHandler: LogHandler {
    public enum Format: String, Sendable { case text, json }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    let label: String
    let format: Format
    /// Held while a line is written, so lines from several threads never interleave.
    private static let writing = Mutex(())

    public init(label: String, level: Logger.Level, format: Format) {
        self.label = label
        self.logLevel = level
        self.format = format
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// One text log line, newline included, with every control character of the message and
    /// the metadata escaped.
    public static func textLine(ts: String, level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        let meta = metadata.isEmpty ? "" : " " + metadata.sorted { $0.key < $1.key }
            .map { "\(TerminalText.escape($0.key))=\(TerminalText.escape("\($0.value)"))" }.joined(separator: " ")
        return "\(ts) \(level.rawValue.uppercased()) \(TerminalText.escape(message))\(meta)\n"
    }

    public func log(event: LogEvent) {
        let line = self.line(event: event)
        Self.writing.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }

    /// The line `log` writes for `event`, newline included.
    func line(event: LogEvent) -> String {
        var all = metadata
        if let m = event.metadata { all.merge(m) { _, new in new } }
        let ts = Timestamp.now()
        let line: String
        switch format {
        case .text:
            line = Self.textLine(ts: ts, level: event.level, message: "\(event.message)", metadata: all)
        case .json:
            var obj: [String: String] = ["ts": ts, "level": event.level.rawValue, "msg": "\(event.message)", "logger": label]
            for (k, v) in all { obj[k] = "\(v)" }
            let data = (try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            line = String(decoding: data, as: UTF8.self) + "\n"
        }
        return line
    }

    /// Makes this handler the process's, at `level` in `format`; for a command run in-process
    /// (`TaskLog.current` bound), only that command's log is set so.
    public static func bootstrap(level: Logger.Level, format: Format) {
        if let log = TaskLog.current {
            log.use(level: level, format: format)
        } else {
            LoggingSystem.bootstrap { StderrLogHandler(label: $0, level: level, format: format) }
        }
    }
}

/// The log of a command run in-process by the CLI tests (`EvidenceCLI.run`), bound to its task:
/// its lines go to the run's captured stderr at the level and format the command asked for, as
/// they would have gone to a process's stderr. Several commands run side by side in one test
/// process, and the process's logging can be bootstrapped only once, so the one handler
/// installed (`installRouting`) asks the task which log it is writing.
public final class TaskLog: Sendable {
    @TaskLocal public static var current: TaskLog?

    private let settings = Mutex<(level: Logger.Level, format: StderrLogHandler.Format)>((.info, .text))
    private let write: @Sendable (Data) -> Void

    public init(write: @escaping @Sendable (Data) -> Void) { self.write = write }

    func use(level: Logger.Level, format: StderrLogHandler.Format) { settings.withLock { $0 = (level, format) } }

    private static let installed = Mutex(false)

    /// Installs, once per process, the handler that writes to the running task's `TaskLog`
    /// (and, outside any, to stderr at info, swift-log's default).
    public static func installRouting() {
        let first = installed.withLock { done in defer { done = true }; return !done }
        guard first else { return }
        LoggingSystem.bootstrap { label in
            RoutingHandler(label: label)
        }
    }

    private struct RoutingHandler: LogHandler {
        let label: String
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let (level, format) = TaskLog.current?.settings.withLock { $0 } ?? (.info, .text)
            guard event.level >= level else { return }
            var handler = StderrLogHandler(label: label, level: level, format: format)
            handler.metadata = metadata
            guard let log = TaskLog.current else { return handler.log(event: event) }
            log.write(Data(handler.line(event: event).utf8))
        }
    }
}

private enum Timestamp {
    static func now() -> String {
        var tv = timeval()
        gettimeofday(&tv, nil)
        var t = tv.tv_sec
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1,
                      Int(tmv.tm_mday), Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec), Int(tv.tv_usec / 1000))
    }
}
