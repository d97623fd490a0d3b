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

    func append(_ e: WatchEvent) { state.withLock { $0.entries.append(Entry(event: e, at: .now)) } }
    func fail(_ error: any Error) { state.withLock { $0.error = "\(error)"; $0.finished = true } }
    func finish() { state.withLock { $0.finished = true } }

    var entries: [Entry] { state.withLock { $0.entries } }
    var error: String? { state.withLock { $0.error } }
    var finished: Bool { state.withLock { $0.finished } }

    var settled: [SettledFile] {
        entries.compactMap { if case .settled(let f) = $0.event { return f } else { return nil } }
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

/// A running watcher over temp folders; `stop()` cancels the consumer and waits for it.
struct WatchHarness {
    let watcher: Watcher
    let log: EventLog
    let task: Task<Void, Never>

    static var logger: Logger {
        if ProcessInfo.processInfo.environment["EVIDENCE_WATCH_TEST_LOG"] != nil {
            var l = Logger(label: "evidence.watch.test", factory: { StreamLogHandler.standardError(label: $0) })
            l.logLevel = .debug
            return l
        }
        return Logger(label: "evidence.watch.test", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// Starts watching and waits (bounded) for every rule's initial scan.
    static func start(_ specs: [WatchSpec], defaultIgnores: [String] = Watcher.defaultIgnores) async throws -> WatchHarness {
        let watcher = Watcher(specs: specs, logger: logger, defaultIgnores: defaultIgnores)
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
        let h = WatchHarness(watcher: watcher, log: log, task: task)
        let ready = await waitUntil(timeout: 10) {
            log.error != nil || log.rescans.filter { $0.cause == .initialScan }.count >= specs.count
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
}

enum HarnessError: Error, CustomStringConvertible {
    case failed(String)
    var description: String {
        switch self { case .failed(let s): return s }
    }
}


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
