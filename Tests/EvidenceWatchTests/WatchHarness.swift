import EvidenceWatch
import Foundation
import Glibc
import Logging
import Synchronization
import Testing
import EvidenceTesting

/// Everything the watcher emitted, with arrival times.
final class EventLog: Sendable {
    struct Entry: Sendable {
        var event: WatchEvent
        var at: ContinuousClock.Instant
    }

    private let state = Mutex<(entries: [Entry], error: String?, finished: Bool)>(([], nil, false))
    /// Files `WatchHarness.drain` wrote: left out of `settled`.
    private let markers = Mutex(Set<String>())

    func append(_ e: WatchEvent) { state.withLock { $0.entries.append(Entry(event: e, at: .now)) } }
    func fail(_ error: any Error) { state.withLock { $0.error = "\(error)"; $0.finished = true } }
    func finish() { state.withLock { $0.finished = true } }

    var entries: [Entry] { state.withLock { $0.entries } }
    var error: String? { state.withLock { $0.error } }
    var finished: Bool { state.withLock { $0.finished } }

    /// The files reported settled, but for `WatchHarness.drain`'s markers.
    var settled: [SettledFile] {
        let markers = self.markers.withLock { $0 }
        return entries.compactMap { if case .settled(let f) = $0.event, !markers.contains(f.path) { return f } else { return nil } }
    }

    func addMarker(_ path: String) { _ = markers.withLock { $0.insert(path) } }

    /// How often the file at `path` was reported settled, a marker included.
    func reports(of path: String) -> Int {
        entries.count { if case .settled(let f) = $0.event { f.path == path } else { false } }
    }

    var rejected: [(path: String, reason: String)] {
        entries.compactMap {
            if case .rejected(_, let path, let reason) = $0.event { return (path, reason) } else { return nil }
        }
    }

    var rescans: [(rule: String, cause: RescanCause)] {
        entries.compactMap {
            if case .rescanned(let rule, let cause) = $0.event { return (rule, cause) } else { return nil }
        }
    }

    /// Settled events whose path ends with "/" + name, compared byte for byte (String `==`
    /// would equate NFC and NFD spellings, which are different files on Linux).
    func settled(named name: String) -> [SettledFile] {
        let tail = Array(("/" + name).utf8)
        return settled.filter { Array($0.path.utf8).suffix(tail.count).elementsEqual(tail) }
    }

    func settledCount(_ name: String) -> Int { settled(named: name).count }
}

/// The watch loop's log messages (without their metadata): what it did that no event tells,
/// such as a full scan completed. With EVIDENCE_WATCH_TEST_LOG set, every message down to debug
/// is also printed.
final class LoopLog: Sendable {
    private let messages = Mutex<[String]>([])

    /// Messages that start with `prefix`.
    func count(_ prefix: String) -> Int { messages.withLock { $0.count { $0.hasPrefix(prefix) } } }

    /// Keeps messages from `level` up (debug lines cost time in trees of thousands of folders).
    func logger(level: Logger.Level) -> Logger {
        let echo = ProcessInfo.processInfo.environment["EVIDENCE_WATCH_TEST_LOG"] != nil
        var l = Logger(label: "evidence.watch.test") { label in
            Handler(log: self, echo: echo ? StreamLogHandler.standardError(label: label) : nil)
        }
        l.logLevel = echo ? .debug : level
        return l
    }

    private struct Handler: LogHandler {
        let log: LoopLog
        var echo: StreamLogHandler?
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.messages.withLock { $0.append("\(event.message)") }
            echo?.log(event: event)
        }
    }
}

/// A running watcher over temp folders; `stop()` cancels the consumer and waits for it.
struct WatchHarness {
    let watcher: Watcher
    let log: EventLog
    let loopLog: LoopLog
    let task: Task<Void, Never>

    /// A logger for a watcher a test runs itself (kept, printed with EVIDENCE_WATCH_TEST_LOG).
    static var logger: Logger { LoopLog().logger(level: .notice) }

    /// Starts watching and waits (bounded) for every rule's initial scan (or `scans` of them: a
    /// root waited for is scanned only once it appears). `loopLog` keeps the loop's messages
    /// from `logLevel` up.
    static func start(_ specs: [WatchSpec], defaultIgnores: [String] = Watcher.defaultIgnores,
                      logLevel: Logger.Level = .notice, scans: Int? = nil) async throws -> WatchHarness {
        let loopLog = LoopLog()
        let watcher = Watcher(specs: specs, logger: loopLog.logger(level: logLevel), defaultIgnores: defaultIgnores)
        let log = EventLog()
        let stream = watcher.events()
        let task = Task {
            do {
                for try await e in stream { log.append(e) }
                log.finish()
            } catch {
                log.fail(error)
            }
        }
        let h = WatchHarness(watcher: watcher, log: log, loopLog: loopLog, task: task)
        let ready = await waitUntil(timeout: 10) {
            log.error != nil || log.rescans.filter { $0.cause == .initialScan }.count >= (scans ?? specs.count)
        }
        if let e = log.error {
            await h.stop()
            throw HarnessError.failed(e)
        }
        guard ready else {
            await h.stop()
            throw HarnessError.failed("initial scan did not finish within 10 s")
        }
        return h
    }

    func stop() async {
        task.cancel()
        _ = await task.value
    }

    /// Waits until the watcher has done all that the test's actions so far can make it do, so
    /// that a report (or a rejection) not made by then is known not to come:
    /// 1. Two rescans, the second asked for once the first is announced complete. The loop
    ///    reads the inotify events queued before the first request at the latest in the turn
    ///    after the one that takes it, so before the second rescan completes; a full scan
    ///    completes only once every folder that appeared meanwhile is listed, and it completes
    ///    every file a settle-0 rule was still waiting for.
    /// 2. A marker file written in `dir`, reported by the `reports` rules that take it. Its
    ///    events are read after all queued before them, and settle windows close in the order
    ///    they end: a window runs from the last change the loop saw, so every window open
    ///    before the marker was written closes before the marker's.
    /// The marker is left out of `log.settled`. False if that did not happen within `timeout`.
    func drain(in dir: String, reports: Int = 1, timeout: Double = 30) async -> Bool {
        for _ in 0..<2 {
            let rescans = log.rescans.count { $0.cause == .overflow(injected: true) }
            watcher.injectOverflow()
            guard await waitUntil(timeout: timeout, { log.rescans.count { $0.cause == .overflow(injected: true) } > rescans })
            else { return false }
        }
        let marker = dir + "/drain-\(UUID().uuidString.prefix(8)).mp4"
        log.addMarker(marker)
        writeFile(marker, bytes: 1)
        return await waitUntil(timeout: timeout) { log.reports(of: marker) >= reports }
    }
}

enum HarnessError: Error, CustomStringConvertible {
    case failed(String)
    var description: String {
        switch self { case .failed(let s): return s }
    }
}


/// A writer's pause, where the pace is what the test shows; never a wait for the watcher
/// (`waitUntil`, `WatchHarness.drain`).
func pause(_ seconds: Double) async {
    try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
}

/// Runs `body` on a thread of its own and waits for it. A writer whose pauses are part of
/// what a test shows (a slow camera, a file still open) must not be a task on the cooperative
/// pool: with other tests holding its two threads, its 0.1 s pause once lasted past the
/// watcher's 0.5 s grace and the file was reported half written.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
        let thread = Thread { c.resume(returning: body()) }
        thread.start()
    }
}

typealias TempDir = TempDirectory

extension TempDirectory {
    func sub(_ name: String) -> String { file(name) }
    func cleanup() { remove() }
}

// MARK: - Raw file helpers (no Foundation atomic-write temp files in the watched folders)

func writeFile(_ path: String, bytes count: Int, fill: UInt8 = 0x61) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0, "open \(path): \(errno)")
    let data = [UInt8](repeating: fill, count: count)
    if count > 0 { precondition(write(fd, data, count) == count) }
    close(fd)
}

func makeDir(_ path: String) {
    precondition(mkdir(path, 0o755) == 0, "mkdir \(path): \(errno)")
}

func rename(_ from: String, _ to: String) {
    precondition(Glibc.rename(from, to) == 0, "rename: \(errno)")
}

func fileSize(_ path: String) -> Int64 {
    var st = stat()
    precondition(lstat(path, &st) == 0)
    return Int64(st.st_size)
}
