import EvidenceProcess
import EvidenceWatch
import Foundation
import Glibc
import Testing
import EvidenceTesting

/// Issue 28 point 6: a burst of very deep folder chains must not hold back the settle timers
/// of files beside it, and folders deeper than the rule's `maxDepth` are reported, not skipped.
/// Serialized: the bursts hold tens of thousands of inotify watches of the user's budget.
@Suite("Watcher: deep folder bursts (real inotify, temp folders)", .serialized, .timeLimit(.minutes(2)))
struct DeepTreeTests {

    @Test("40 chains × 2,000 folders dropped at once: a file beside them settles within its window; beyond max_depth 64 each chain is reported")
    func burstOfDeepChains() async throws {
        let tmp = TempDir("deep", inMemory: true)
        let root = tmp.sub("drop")
        let staging = tmp.sub("staging")
        makeDir(root)
        makeDir(staging)
        defer {
            removeChains(in: root, count: 40)
            removeChains(in: staging, count: 40)
            tmp.cleanup()
        }
        await onOwnThread { makeChains(in: staging, count: 40, depth: 2000) }
        // c0 is level 1: a file in the folder at level 64 is taken, one at level 65 is not.
        writeFile(staging + "/c0" + levels(63) + "/f", bytes: 10)
        writeFile(staging + "/c0" + levels(64) + "/f", bytes: 10)
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: root, recursive: true, settle: 1)])
        let written = dropChains(from: staging, to: root, count: 40, thenWrite: root + "/clip.mp4")
        let deepest = root + "/c0" + levels(63) + "/f"
        let done = await waitUntil(timeout: 30) {
            h.log.settledCount("clip.mp4") == 1 && h.log.rejected.count >= 40
                && h.log.settled.contains { $0.path == deepest }
        }
        await h.stop()
        #expect(done)
        let at = h.log.entries.first { if case .settled(let f) = $0.event { f.path == root + "/clip.mp4" } else { false } }?.at
        let delay = try #require(at) - written
        #expect(delay < .seconds(3), "clip.mp4 settled \(delay) after it was written (settle 1 s)")
        reportDelay(delay, #function)

        let expected = Set((0..<40).map { root + "/c\($0)" + levels(64) })
        let rejected = h.log.rejected
        #expect(Set(rejected.map(\.path)) == expected)
        #expect(rejected.count == 40, "each too-deep folder is reported once")
        for r in rejected {
            #expect(r.reason.contains("folder deeper than max_depth = 64 below rule r's folder \(root)"), "\(r.reason)")
        }
        #expect(h.log.settled.allSatisfy { !$0.path.hasPrefix(root + "/c0" + levels(64) + "/") },
                "nothing beyond max_depth is taken")
    }

    @Test("a huge new subtree is scanned in slices: 20 chains × 2,000 with max_depth 2048 do not delay a file beside them")
    func scanYieldsToSettleTimers() async throws {
        let tmp = TempDir("deep", inMemory: true)
        let root = tmp.sub("drop")
        let staging = tmp.sub("staging")
        makeDir(root)
        makeDir(staging)
        defer {
            removeChains(in: root, count: 20)
            removeChains(in: staging, count: 20)
            tmp.cleanup()
        }
        await onOwnThread { makeChains(in: staging, count: 20, depth: 2000) }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: root, recursive: true, settle: 1, maxDepth: 2048)])
        let written = dropChains(from: staging, to: root, count: 20, thenWrite: root + "/clip.mp4")
        let settled = await waitUntil(timeout: 30) { h.log.settledCount("clip.mp4") == 1 }
        // Stopping must not wait for the rest of the scan either.
        let stopAsked = ContinuousClock.now
        await h.stop()
        #expect(ContinuousClock.now - stopAsked < .seconds(2))
        #expect(settled)
        let at = h.log.entries.first { if case .settled = $0.event { true } else { false } }?.at
        let delay = try #require(at) - written
        #expect(delay < .seconds(3), "clip.mp4 settled \(delay) after it was written (settle 1 s)")
        reportDelay(delay, #function)
        #expect(h.log.rejected.isEmpty, "within max_depth nothing is refused: \(h.log.rejected.prefix(3))")
    }

    @Test("a folder beyond max_depth is reported with the reason, whether found by the start-up scan or created while watching",
          arguments: [true, false])
    func folderBeyondMaxDepth(beforeStart: Bool) async throws {
        let tmp = TempDir("deep", inMemory: true)
        defer { tmp.cleanup() }
        let make = {
            makeDir(tmp.sub("a"))
            makeDir(tmp.sub("a/b"))
            makeDir(tmp.sub("a/b/c"))
            writeFile(tmp.sub("a/b/in.mp4"), bytes: 10)
            writeFile(tmp.sub("a/b/c/out.mp4"), bytes: 10)
        }
        if beforeStart { make() }
        let h = try await WatchHarness.start([WatchSpec(rule: "cam", root: tmp.path, recursive: true, settle: 0.2, maxDepth: 2)])
        if !beforeStart { make() }
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("in.mp4") == 1 && h.log.rejected.count == 1 })
        await h.stop()
        #expect(h.log.settledCount("out.mp4") == 0)
        let r = try #require(h.log.rejected.first)
        #expect(r.path == tmp.sub("a/b/c"))
        #expect(r.reason == "folder deeper than max_depth = 2 below rule cam's folder \(tmp.path); "
                + "not descended: nothing in it is taken (raise max_depth in the rule file, or move it up)")
    }

    @Test("a file written while a full rescan is still under way is reported once, not forgotten when the rescan completes")
    func eventsDuringAFullRescanCountAsSeen() async throws {
        let tmp = TempDir("deep", inMemory: true)
        let root = tmp.sub("drop")
        makeDir(root)
        defer {
            removeChains(in: root, count: 3)
            tmp.cleanup()
        }
        await onOwnThread { makeChains(in: root, count: 3, depth: 1500) }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: root, recursive: true, settle: 0.2, maxDepth: 2048)])
        // The rescan lists the root, then descends into one chain: once a chain's top folder
        // is opened, the root's listing is behind it, and the rest of the scan takes seconds.
        let chainOpened = try DirectoryOpenWatch((0..<3).map { root + "/c\($0)" })
        h.watcher.injectOverflow()
        #expect(await onOwnThread { chainOpened.wait(seconds: 10) })
        writeFile(root + "/late.mp4", bytes: 10)
        #expect(await waitUntil(timeout: 30) {
            h.log.rescans.filter { $0.cause == .overflow(injected: true) }.count == 1 && h.log.settledCount("late.mp4") == 1
        })
        // A second rescan finds it again: it must know it was reported.
        h.watcher.injectOverflow()
        #expect(await waitUntil(timeout: 30) { h.log.rescans.filter { $0.cause == .overflow(injected: true) }.count == 2 })
        await h.stop()
        #expect(h.log.settledCount("late.mp4") == 1)
    }
}

/// With EVIDENCE_WATCH_LATENCY set (as `latency` in WatcherTests), prints the measured delay.
func reportDelay(_ delay: Duration, _ test: String) {
    if ProcessInfo.processInfo.environment["EVIDENCE_WATCH_LATENCY"] != nil {
        FileHandle.standardError.write(Data("\(test): file beside the burst settled \(delay) after it was written (settle 1 s)\n".utf8))
    }
}

// MARK: - Deep chains, made and removed without ever passing a long path to the kernel

/// "/d" repeated `n` times: the path of level `n + 1` below a chain's top folder.
func levels(_ n: Int) -> String { String(repeating: "/d", count: n) }

/// Makes `count` chains `c0`, `c1`, … in `parent`, each `depth` folders deep (`cN/d/d/…/d`),
/// with `mkdirat`/`openat` relative to the previous level, so no path argument grows with depth.
func makeChains(in parent: String, count: Int, depth: Int) {
    let top = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    precondition(top >= 0, "open \(parent): \(errno)")
    defer { close(top) }
    for c in 0..<count {
        precondition(mkdirat(top, "c\(c)", 0o755) == 0, "mkdir c\(c): \(errno)")
        var fd = openat(top, "c\(c)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        precondition(fd >= 0)
        for _ in 1..<depth {
            precondition(mkdirat(fd, "d", 0o755) == 0, "mkdirat: \(errno)")
            let next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            precondition(next >= 0, "openat: \(errno)")
            close(fd)
            fd = next
        }
        close(fd)
    }
}

/// Moves the chains from `staging` into `root` one right after the other (the drop), then
/// writes a small file `file`; returns when that file was closed.
func dropChains(from staging: String, to root: String, count: Int, thenWrite file: String) -> ContinuousClock.Instant {
    for c in 0..<count {
        precondition(Glibc.rename(staging + "/c\(c)", root + "/c\(c)") == 0, "rename c\(c): \(errno)")
    }
    writeFile(file, bytes: 1000)
    return .now
}

/// Removes chains made by `makeChains` with `rm -rf`, which descends with `openat`/`unlinkat`
/// (fts), so no path passes PATH_MAX. Moving each level up to remove it one by one took about
/// 17 ms a level here (a rename of a folder holding a deep tree), minutes for 40 chains.
func removeChains(in parent: String, count: Int) {
    let chains = (0..<count).map { parent + "/c\($0)" }
    let result = try? ChildProcess.run("/bin/rm", ["-rf", "--"] + chains, timeout: 120)
    if case .exited(0)? = result?.termination { return }
    Issue.record("rm -rf of the chains in \(parent) failed: \(result?.output ?? "not started")")
}

/// The test's own inotify watch for IN_OPEN of some folders: tells when the watcher opens one
/// to list it (a signal of how far a scan got, without sleeping).
final class DirectoryOpenWatch: Sendable {
    private let fd: Int32

    init(_ paths: [String]) throws {
        fd = inotify_init1(0o2000000)  // IN_CLOEXEC
        guard fd >= 0 else { throw HarnessError.failed("inotify_init1: \(errno)") }
        for path in paths where inotify_add_watch(fd, path, 0x20 /* IN_OPEN */) < 0 {
            throw HarnessError.failed("inotify_add_watch \(path): \(errno)")
        }
    }

    deinit { close(fd) }

    /// Whether the folder was opened within `seconds`.
    func wait(seconds: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, Int32(seconds * 1000)) == 1
    }
}
