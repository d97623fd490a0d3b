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

    /// One JSON log line, newline included: an object of strings, keys sorted. Written by
    /// `FlatStringJSON.write` rather than `JSONSerialization`, whose `sortedKeys` compares every
    /// pair of keys as localized, case-insensitive, numeric strings (a burst's "stored" lines
    /// cost a tenth of its CPU that way). Every control character, DEL, C1 control, bidi mark and
    /// line separator is escaped, so a name holding a newline or ESC stays inside its string and
    /// nothing in it acts on the terminal of whoever reads the log.
    public static func jsonLine(_ object: [String: String]) -> String {
        var bytes = FlatStringJSON.write(object, forTerminal: true)
        bytes.append(UInt8(ascii: "\n"))
        return String(decoding: bytes, as: UTF8.self)
    }

    public func log(event: LogEvent) {
        let line = self.line(event: event)
        Self.writing.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }

    /// The line `log` writes for `event`, newline included.
    func line(event: LogEvent) -> String {
        var all = metadata
        if let m = event.metadata { all.merge(m) { _, new in new } }
        let ts = Timestamp.string(Date())
        let line: String
        switch format {
        case .text:
            line = Self.textLine(ts: ts, level: event.level, message: "\(event.message)", metadata: all)
        case .json:
            var obj: [String: String] = ["ts": ts, "level": event.level.rawValue, "msg": "\(event.message)", "logger": label]
            for (k, v) in all { obj[k] = "\(v)" }
            line = Self.jsonLine(obj)
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
