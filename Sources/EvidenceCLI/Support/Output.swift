import EvidenceCore
import Foundation
import Glibc
import Synchronization

/// What a command run in-process wrote (`EvidenceCLI.run`), bound to the command's task: every
/// write of `Output` (and of the log handler) lands here instead of the process's stdout and
/// stderr. Commands running side by side in one test process each fill their own.
public final class OutputCapture: Sendable {
    @TaskLocal static var current: OutputCapture?

    private let buffers = Mutex<(output: Data, error: Data)>((Data(), Data()))

    public var standardOutput: String { String(decoding: buffers.withLock { $0.output }, as: UTF8.self) }
    public var standardError: String { String(decoding: buffers.withLock { $0.error }, as: UTF8.self) }

    func append(output data: Data) { buffers.withLock { $0.output.append(data) } }
    func append(error data: Data) { buffers.withLock { $0.error.append(data) } }
}

enum Output {
    /// Bytes for stdout: the process's, or the in-process run's capture.
    static func writeOutput(_ data: Data) {
        if let capture = OutputCapture.current { capture.append(output: data) } else { FileHandle.standardOutput.write(data) }
    }

    /// Bytes for stderr: the process's, or the in-process run's capture.
    static func writeError(_ data: Data) {
        if let capture = OutputCapture.current { capture.append(error: data) } else { FileHandle.standardError.write(data) }
    }

    static func json(_ value: some Encodable) {
        do {
            var data = try CanonicalJSON.encoder(pretty: true).encode(value)
            data.append(0x0A)
            writeOutput(data)
        } catch {
            err("cannot encode JSON: \(error)")
        }
    }

    /// Human output. Control characters other than our own line breaks and tabs are shown
    /// escaped, whoever built the string: a name or a bundle field holding ESC cannot clear the
    /// screen or draw a fake report. Data that could hold a newline is escaped where it is
    /// quoted (`TerminalText.escape`), so it cannot start a line of its own either.
    static func line(_ s: String = "") {
        writeOutput(Data((TerminalText.escapeKeepingLines(s) + "\n").utf8))
    }

    /// One line on stderr, prefixed so it is clear which program said it.
    static func err(_ s: String) {
        Progress.clearLine()
        writeError(Data(("evidence: " + TerminalText.escapeKeepingLines(s) + "\n").utf8))
    }

    static func bytes(_ n: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var v = Double(n)
        var i = 0
        while v >= 1000, i < units.count - 1 { v /= 1000; i += 1 }
        return i == 0 ? "\(n) B" : String(format: "%.1f %@", v, units[i])
    }

    static func date(_ d: Date?) -> String { d.map(Timestamp.string) ?? "-" }

    /// Left-aligned columns, two spaces apart.
    static func table(_ header: [String], _ rows: [[String]]) {
        // A cell is one line of data (a path, a reason, a server's answer): escaped whole, so a
        // newline in a file name cannot start a row of its own.
        let all = ([header] + rows).map { $0.map(TerminalText.escape) }
        var widths = [Int](repeating: 0, count: header.count)
        for r in all { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
        for r in all {
            let cells = r.enumerated().map { i, c in i == r.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
            line(cells.joined(separator: "  "))
        }
    }
}

/// A one-line progress bar on stderr, only when stderr is a terminal; at most 10 redraws/s.
final class Progress: Sendable {
    private let totalBytes: Int64
    private let totalFiles: Int
    private let enabled: Bool
    private let start = Date()
    private struct State {
        var lastDraw = 0.0
        var doneBytes: Int64 = 0
        var doneFiles = 0
    }
    private let state = Mutex(State())
    nonisolated(unsafe) static var drawn = false

    init(totalBytes: Int64, totalFiles: Int, quiet: Bool) {
        self.totalBytes = totalBytes
        self.totalFiles = totalFiles
        // Big or many: worth a bar. Never in pipes or logs.
        enabled = !quiet && isatty(2) == 1 && (totalBytes >= 64 << 20 || totalFiles >= 20)
    }

    func update(fileBytes: Int64, name: String) {
        state.withLock { s in draw(&s, bytes: s.doneBytes + fileBytes, name: name) }
    }

    func finishFile(size: Int64) {
        state.withLock { s in
            s.doneBytes += size
            s.doneFiles += 1
            draw(&s, bytes: s.doneBytes, name: "", force: s.doneFiles == totalFiles)
        }
    }

    /// With the state held: one redraw at a time, in order.
    private func draw(_ s: inout State, bytes: Int64, name: String, force: Bool = false) {
        guard enabled else { return }
        let now = Date().timeIntervalSince1970
        guard force || now - s.lastDraw >= 0.1 else { return }
        s.lastDraw = now
        let doneFiles = s.doneFiles
        let frac = totalBytes > 0 ? min(1, Double(bytes) / Double(totalBytes)) : Double(doneFiles) / Double(max(1, totalFiles))
        let width = 24
        let filled = Int(frac * Double(width))
        let elapsed = max(0.001, Date().timeIntervalSince(start))
        let rate = Double(bytes) / elapsed
        var text = "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "]"
        text += String(format: " %3d%%  %d/%d files  %@/%@  %@/s", Int(frac * 100), doneFiles, totalFiles,
                       Output.bytes(bytes), Output.bytes(totalBytes), Output.bytes(Int64(rate)))
        if !name.isEmpty { text += "  " + TerminalText.escape(String(name.suffix(30))) }
        Output.writeError(Data(("\r\u{1B}[K" + text).utf8))
        Progress.drawn = true
    }

    static func clearLine() {
        if drawn {
            Output.writeError(Data("\r\u{1B}[K".utf8))
            drawn = false
        }
    }
}
