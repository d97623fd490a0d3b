import EvidenceWatch
import Foundation
import Glibc
import Testing
import EvidenceTesting

@Suite("Watcher (real inotify, temp folders)", .timeLimit(.minutes(1)))
struct WatcherTests {

    @Test("slow writer: chunks over ~3 s, settle 1 s → exactly one event, final size, after the last write")
    func slowWriter() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: 1)])
        let path = tmp.sub("clip.mp4")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        let log = h.log
        let (written, early, lastWrite) = await onOwnThread { () -> (Int, Int, ContinuousClock.Instant) in
            let chunk = [UInt8](repeating: 0x42, count: 4096)
            var written = 0, early = 0
            var last = ContinuousClock.now
            for _ in 0..<7 {
                written += write(fd, chunk, chunk.count)
                last = .now
                usleep(500_000)   // the scenario: a writer pausing for less than the 1 s settle window
                if log.settledCount("clip.mp4") != 0 { early += 1 }
            }
            close(fd)  // IN_CLOSE_WRITE alone changes nothing: the window runs from the last write
            return (written, early, last)
        }
        #expect(written == 7 * 4096)
        #expect(early == 0, "reported while still being written")
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("clip.mp4") >= 1 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        let events = h.log.settled(named: "clip.mp4")
        #expect(events.count == 1)
        #expect(events.first?.identity.size == Int64(7 * 4096))
        #expect(events.first?.rule == "r")
        #expect(events.first?.path == path)
        if let at = h.log.entries.first(where: { if case .settled = $0.event { true } else { false } })?.at {
            // the settle window restarts with the last write: not reported before ~1 s after it
            #expect(at - lastWrite >= .milliseconds(950))
        }
    }

    @Test("temp name + rename into place → one event for the final name, none for .part",
          arguments: [0.0, 0.3])
    func renameIntoPlace(settle: Double) async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: settle)])
        let part = tmp.sub("x.mp4.part")
        let fd = open(part, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        let chunk = [UInt8](repeating: 1, count: 10_000)
        for _ in 0..<5 {
            _ = write(fd, chunk, chunk.count)
            await pause(0.05)   // the scenario: the temp file is written over a while
        }
        close(fd)
        rename(part, tmp.sub("x.mp4"))
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("x.mp4") >= 1 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        #expect(h.log.settledCount("x.mp4") == 1)
        #expect(h.log.settled(named: "x.mp4").first?.identity.size == 50_000)
        #expect(h.log.settledCount("x.mp4.part") == 0)
        #expect(h.log.settled.count == 1)
        #expect(h.log.rejected.isEmpty)
    }

    @Test("burst of 1,000 files with settle 0 → all reported exactly once")
    func burst() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "burst", root: tmp.path, settle: 0)])
        for i in 0..<1000 {
            writeFile(tmp.sub("f\(i).dat"), bytes: i % 97)
        }
        let all = await waitUntil(timeout: 30) { h.log.settled.count >= 1000 }
        #expect(all, "only \(h.log.settled.count) of 1000 reported")
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        let settled = h.log.settled
        #expect(settled.count == 1000)
        #expect(Set(settled.map(\.path)).count == 1000)
        for f in settled {
            let i = Int(f.path.split(separator: "/").last!.dropFirst().dropLast(4))!
            #expect(f.identity.size == Int64(i % 97), "\(f.path) reported with a partial size")
        }
    }

    @Test("files present before start are reported (catch-up), also in subfolders")
    func catchUp() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        writeFile(tmp.sub("a.mp4"), bytes: 10)
        makeDir(tmp.sub("day1"))
        writeFile(tmp.sub("day1/b.mp4"), bytes: 20)
        writeFile(tmp.sub(".hidden.mp4"), bytes: 5)
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, recursive: true, settle: 0.2)])
        #expect(await waitUntil(timeout: 5) { h.log.settled.count >= 2 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        #expect(h.log.settledCount("a.mp4") == 1)
        #expect(h.log.settledCount("day1/b.mp4") == 1)
        #expect(h.log.settled(named: "day1/b.mp4").first?.identity.size == 20)
        #expect(h.log.settled.count == 2, "dotfile must be ignored")
    }

    @Test("new subfolder with files written at once inside it", arguments: [true, false])
    func newSubdirectory(recursive: Bool) async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, recursive: recursive, settle: 0.2)])
        makeDir(tmp.sub("cam"))
        for i in 0..<20 { writeFile(tmp.sub("cam/c\(i).jpg"), bytes: 100 + i) }
        makeDir(tmp.sub("cam/deep"))
        writeFile(tmp.sub("cam/deep/d.jpg"), bytes: 7)
        // a folder moved in from elsewhere (IN_MOVED_TO|IN_ISDIR)
        let outside = TempDir()
        defer { outside.cleanup() }
        makeDir(outside.sub("moved"))
        writeFile(outside.sub("moved/m.jpg"), bytes: 9)
        rename(outside.sub("moved"), tmp.sub("moved"))
        writeFile(tmp.sub("sentinel.jpg"), bytes: 1)

        #expect(await waitUntil(timeout: 5) { h.log.settledCount("sentinel.jpg") == 1 })
        if recursive {
            #expect(await waitUntil(timeout: 5) { h.log.settled.count >= 23 })
        }
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        let inSub = h.log.settled.filter { $0.path.contains("/cam/") || $0.path.contains("/moved/") }
        if recursive {
            #expect(inSub.count == 22)
            #expect(Set(inSub.map(\.path)).count == 22)
            for i in 0..<20 {
                #expect(h.log.settled(named: "cam/c\(i).jpg").first?.identity.size == Int64(100 + i))
            }
            #expect(h.log.settledCount("cam/deep/d.jpg") == 1)
            #expect(h.log.settledCount("moved/m.jpg") == 1)
        } else {
            #expect(inSub.isEmpty)
        }
        #expect(h.log.settled.count == (recursive ? 23 : 1))
    }

    @Test("settle 0: files in a new subfolder are reported once, complete, even if still open when found")
    func newSubdirectorySettleZero() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, recursive: true, settle: 0)])
        for round in 0..<5 {
            let dir = tmp.sub("d\(round)")
            makeDir(dir)
            writeFile(dir + "/closed.bin", bytes: 10)  // likely closed before the watch exists
            let fd = open(dir + "/open.bin", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(fd >= 0)
            await onOwnThread {
                let chunk = [UInt8](repeating: 7, count: 1000)
                for _ in 0..<3 {
                    _ = write(fd, chunk, chunk.count)
                    usleep(100_000)   // the scenario: still being written when the new folder is listed
                }
                close(fd)
            }
        }
        #expect(await waitUntil(timeout: 5) { h.log.settled.count >= 10 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        #expect(h.log.settled.count == 10)
        for round in 0..<5 {
            #expect(h.log.settled(named: "d\(round)/closed.bin").map(\.identity.size) == [10])
            #expect(h.log.settled(named: "d\(round)/open.bin").map(\.identity.size) == [3000])
        }
    }

    @Test("overflow rescan: nothing reported twice, a file without a completing event is found")
    func overflowRescan() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let outside = TempDir()
        defer { outside.cleanup() }
        writeFile(tmp.sub("before.mp4"), bytes: 3)
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, recursive: true, settle: 0)])
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("before.mp4") == 1 })
        makeDir(tmp.sub("sub"))
        writeFile(tmp.sub("sub/during.mp4"), bytes: 4)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("sub/during.mp4") == 1 })
        // A hard link only produces IN_CREATE (no IN_CLOSE_WRITE): with settle 0 nothing
        // completes it — the rescan must.
        writeFile(outside.sub("src.mp4"), bytes: 5)
        #expect(link(outside.sub("src.mp4"), tmp.sub("linked.mp4")) == 0)
        h.watcher.injectOverflow()
        #expect(await waitUntil(timeout: 5) { h.log.rescans.contains { $0.cause == .overflow(injected: true) } })
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("linked.mp4") == 1 })
        h.watcher.injectOverflow()
        #expect(await waitUntil(timeout: 5) { h.log.rescans.filter { $0.cause == .overflow(injected: true) }.count == 2 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        #expect(h.log.settledCount("before.mp4") == 1)
        #expect(h.log.settledCount("sub/during.mp4") == 1)
        #expect(h.log.settledCount("linked.mp4") == 1)
        #expect(h.log.settled.count == 3)
    }

    @Test("settle 0: a hard link made while watching is settled at once under its new name (no IN_CLOSE_WRITE comes for it)")
    func hardLinkSettleZero() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: 0)])
        writeFile(tmp.sub("first.mp4"), bytes: 100)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("first.mp4") == 1 })
        #expect(link(tmp.sub("first.mp4"), tmp.sub("second.mp4")) == 0)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("second.mp4") == 1 })
        await h.stop()
        #expect(h.log.settled.count == 2)
    }

    @Test("symlinks and FIFOs are rejected once, never settled, never block the watcher")
    func specialFiles() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let outside = TempDir()
        defer { outside.cleanup() }
        writeFile(outside.sub("target.mp4"), bytes: 10)
        makeDir(outside.sub("dir"))
        writeFile(outside.sub("dir/inner.mp4"), bytes: 10)
        #expect(mkfifo(tmp.sub("early.fifo"), 0o644) == 0)  // present at start: found by the scan

        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, recursive: true, settle: 0.1)])
        #expect(symlink(outside.sub("target.mp4"), tmp.sub("link.mp4")) == 0)
        #expect(symlink(outside.sub("dir"), tmp.sub("linkdir")) == 0)
        #expect(mkfifo(tmp.sub("pipe.mp4"), 0o644) == 0)
        writeFile(tmp.sub("after.mp4"), bytes: 11)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("after.mp4") == 1 && h.log.rejected.count >= 4 })
        // touching them again and a rescan must not repeat the rejections
        _ = chmod(tmp.sub("pipe.mp4"), 0o600)
        h.watcher.injectOverflow()
        #expect(await waitUntil(timeout: 5) { !h.log.rescans.filter { $0.cause == .overflow(injected: true) }.isEmpty })
        #expect(await h.drain(in: tmp.path))
        await h.stop()

        let rejected = h.log.rejected
        func reasons(_ name: String) -> [String] { rejected.filter { $0.path == tmp.sub(name) }.map(\.reason) }
        #expect(reasons("link.mp4") == ["symbolic link (not followed)"])
        #expect(reasons("linkdir") == ["symbolic link (not followed)"])
        #expect(reasons("pipe.mp4").count == 1)
        #expect(reasons("pipe.mp4").first?.contains("FIFO") == true)
        #expect(reasons("early.fifo").count == 1)
        #expect(rejected.count == 4)
        #expect(h.log.settled.map(\.path) == [tmp.sub("after.mp4")])
    }

    @Test("include/exclude globs; default ignores (dotfiles, .part, .tmp, ~) also skip folders")
    func globs() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let spec = WatchSpec(rule: "g", root: tmp.path, include: ["*.mp4", "*.wav"], exclude: ["skip*"],
                             recursive: true, settle: 0)
        let h = try await WatchHarness.start([spec])
        for name in ["a.mp4", "b.txt", "skip1.mp4", ".hidden.mp4", "c.wav", "d.mp4.part", "e.tmp",
                     "f.mp4~", ".~lock.mp4", "g.crdownload", "noext"] {
            writeFile(tmp.sub(name), bytes: 1)
        }
        makeDir(tmp.sub(".cache"))
        writeFile(tmp.sub(".cache/in-hidden.mp4"), bytes: 1)
        makeDir(tmp.sub("skipdir"))
        writeFile(tmp.sub("skipdir/in-excluded.mp4"), bytes: 1)
        writeFile(tmp.sub("z.mp4"), bytes: 1)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("z.mp4") == 1 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        let names = Set(h.log.settled.map { String($0.path.split(separator: "/").last!) })
        #expect(names == ["a.mp4", "c.wav", "z.mp4"])
        #expect(h.log.settled.count == 3)
        #expect(h.log.rejected.isEmpty)
    }

    @Test("a writer pausing longer than settle: each change after a report doubles the file's window, up to settle_max")
    func windowGrowsAfterReport() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: 0.3, settleMax: 1)])
        let path = tmp.sub("upload.mov")
        writeFile(path, bytes: 1000)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("upload.mov") == 1 })
        // Paused 0.45 s between appends: longer than the 0.3 s window, shorter than the doubled 0.6 s.
        let log = h.log
        let (lastWrite, early) = await onOwnThread { () -> (ContinuousClock.Instant, Int) in
            var last = ContinuousClock.now, early = 0
            for _ in 0..<4 {
                let fd = open(path, O_WRONLY | O_APPEND)
                _ = write(fd, [UInt8](repeating: 0x41, count: 1000), 1000)
                close(fd)
                last = .now
                usleep(450_000)
                if log.settledCount("upload.mov") != 1 { early += 1 }
            }
            return (last, early)
        }
        #expect(early == 0, "reported again while the writer still paused shorter than the doubled window")
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("upload.mov") == 2 })
        let second = h.log.entries.filter { if case .settled = $0.event { true } else { false } }.last?.at
        #expect(second.map { $0 - lastWrite >= .milliseconds(580) } == true, "the window after a report is twice settle")
        #expect(h.loopLog.count("changed after it was taken") >= 1)

        // Changed again: the window doubles once more but stops at settle_max (1 s, not 1.2 s).
        let fd = open(path, O_WRONLY | O_APPEND)
        _ = write(fd, [UInt8](repeating: 0x42, count: 1000), 1000)
        close(fd)
        let third = ContinuousClock.now
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("upload.mov") == 3 })
        let at = h.log.entries.filter { if case .settled = $0.event { true } else { false } }.last?.at
        #expect(at.map { $0 - third >= .milliseconds(950) } == true)
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        #expect(h.log.settled(named: "upload.mov").map(\.identity.size) == [1000, 5000, 6000])
    }

    @Test("replaced with new content → reported again; touched with identical identity → not")
    func replaceAndTouch() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: 0.2)])
        let path = tmp.sub("f.mp4")
        writeFile(path, bytes: 100)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("f.mp4") == 1 })

        // touch with the very same times: IN_ATTRIB, identity unchanged
        var st = stat()
        #expect(lstat(path, &st) == 0)
        var times = [st.st_atim, st.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        _ = chmod(path, 0o600)
        #expect(await h.drain(in: tmp.path))
        #expect(h.log.settledCount("f.mp4") == 1)

        // replaced by rename (new inode, new size)
        writeFile(tmp.sub("f.mp4.part"), bytes: 200)
        rename(tmp.sub("f.mp4.part"), path)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("f.mp4") == 2 })

        // rewritten in place with other content
        writeFile(path, bytes: 300)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("f.mp4") == 3 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        let events = h.log.settled(named: "f.mp4")
        #expect(events.map(\.identity.size) == [100, 200, 300])
        #expect(events[0].identity.inode != events[1].identity.inode)
        #expect(Set(events.map(\.identity)).count == 3)
    }

    @Test("deleted before settling → dropped silently")
    func vanished() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: 1)])
        // On a thread of its own: a 0.1 s pause on the cooperative pool once lasted past the 1 s settle.
        let gone = tmp.sub("gone.mp4")
        let unlinked = await onOwnThread { () -> Int32 in
            writeFile(gone, bytes: 10)
            usleep(100_000)   // the scenario: removed well inside its 1 s settle window
            return unlink(gone)
        }
        #expect(unlinked == 0)
        writeFile(tmp.sub("kept.mp4"), bytes: 10)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("kept.mp4") == 1 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        #expect(h.log.settledCount("gone.mp4") == 0)
        #expect(h.log.settled.count == 1)
        #expect(h.log.rejected.isEmpty)
    }

    @Test("non-UTF-8 name → rejected with its bytes; NFC and NFD spellings are two files")
    func fileNameEncodings() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: 0)])
        // "bad\xFF.mp4" created from raw bytes
        var raw = Array(tmp.path.utf8) + Array("/bad".utf8) + [0xFF] + Array(".mp4".utf8) + [0]
        let fd = raw.withUnsafeMutableBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) {
                open($0, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            }
        }
        try #require(fd >= 0)
        _ = write(fd, "x", 1)
        close(fd)
        let nfc = "caf\u{E9}.mp4"
        let nfd = "cafe\u{301}.mp4"
        writeFile(tmp.sub(nfc), bytes: 1)
        writeFile(tmp.sub(nfd), bytes: 2)
        #expect(await waitUntil(timeout: 5) { h.log.settled.count >= 2 && !h.log.rejected.isEmpty })
        #expect(await h.drain(in: tmp.path))
        await h.stop()

        #expect(h.log.rejected.count == 1)
        let r = h.log.rejected.first
        #expect(r?.reason == "file name is not valid UTF-8 (bytes: 626164ff2e6d7034)")
        #expect(r?.path.hasPrefix(tmp.path + "/bad") == true)
        let settled = h.log.settled
        #expect(settled.count == 2)
        let byteNames = Set(settled.map { Array($0.path.utf8) })
        #expect(byteNames == [Array(tmp.sub(nfc).utf8), Array(tmp.sub(nfd).utf8)])
        // the reported paths open the right files
        for f in settled {
            var st = stat()
            #expect(lstat(f.path, &st) == 0)
            #expect(Int64(st.st_size) == f.identity.size)
        }
    }

    @Test("pollInterval rescans find files inotify did not complete")
    func pollRescan() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let outside = TempDir()
        defer { outside.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "p", root: tmp.path, settle: 0, pollInterval: 0.3)], logLevel: .debug)
        writeFile(outside.sub("src.wav"), bytes: 8)
        #expect(link(outside.sub("src.wav"), tmp.sub("l.wav")) == 0)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("l.wav") == 1 })
        // Two more full scans completed: the one that found it, then at least one whole poll
        // after the report; neither reports it again.
        let scans = h.loopLog.count("full scan done")
        #expect(await waitUntil(timeout: 30) { h.loopLog.count("full scan done") >= scans + 2 })
        await h.stop()
        #expect(h.log.settledCount("l.wav") == 1)
        #expect(h.log.rescans.allSatisfy { $0.cause == .initialScan })
    }

    @Test("several rules on one folder each get their events")
    func overlappingRules() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        makeDir(tmp.sub("sub"))
        let h = try await WatchHarness.start([
            WatchSpec(rule: "video", root: tmp.path, include: ["*.mp4"], recursive: true, settle: 0),
            WatchSpec(rule: "all", root: tmp.path, recursive: false, settle: 0.1),
        ])
        writeFile(tmp.sub("a.mp4"), bytes: 1)
        writeFile(tmp.sub("b.wav"), bytes: 1)
        writeFile(tmp.sub("sub/c.mp4"), bytes: 1)
        #expect(await waitUntil(timeout: 5) { h.log.settled.count >= 4 })
        #expect(await h.drain(in: tmp.path, reports: 2))   // both rules take the marker
        await h.stop()
        let pairs = Set(h.log.settled.map { "\($0.rule):\($0.path.dropFirst(tmp.path.count + 1))" })
        #expect(pairs == ["video:a.mp4", "video:sub/c.mp4", "all:a.mp4", "all:b.wav"])
        #expect(h.log.settled.count == 4)
    }

    @Test("a watched subfolder renamed inside the tree keeps being watched under its new name")
    func directoryRename() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        makeDir(tmp.sub("cam"))
        makeDir(tmp.sub("cam/inner"))
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, recursive: true, settle: 0)])
        writeFile(tmp.sub("cam/inner/a.jpg"), bytes: 1)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("cam/inner/a.jpg") == 1 })
        rename(tmp.sub("cam"), tmp.sub("cam2"))
        // the existing file is found again under its new path
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("cam2/inner/a.jpg") == 1 })
        writeFile(tmp.sub("cam2/inner/b.jpg"), bytes: 2)
        writeFile(tmp.sub("cam2/c.jpg"), bytes: 3)
        #expect(await waitUntil(timeout: 5) { h.log.settled.count >= 4 })
        #expect(await h.drain(in: tmp.path))
        await h.stop()
        let rel = h.log.settled.map { String($0.path.dropFirst(tmp.path.count + 1)) }
        #expect(rel.sorted() == ["cam/inner/a.jpg", "cam2/c.jpg", "cam2/inner/a.jpg", "cam2/inner/b.jpg"])
    }

    @Test("root deleted and recreated → watched again, new files reported")
    func rootReappears() async throws {
        let parent = TempDir()
        defer { parent.cleanup() }
        let root = parent.sub("drop")
        makeDir(root)
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: root, settle: 0)])
        writeFile(root + "/one.mp4", bytes: 1)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("one.mp4") == 1 })
        try FileManager.default.removeItem(atPath: root)
        // Made again once the watcher has seen it go: the scenario is a root that comes back.
        #expect(await waitUntil(timeout: 30) { h.loopLog.count("watch root is gone") >= 1 })
        makeDir(root)
        writeFile(root + "/two.mp4", bytes: 2)
        #expect(await waitUntil(timeout: 8) { h.log.rescans.contains { $0.cause == .rootReappeared } })
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("two.mp4") == 1 })
        writeFile(root + "/three.mp4", bytes: 3)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("three.mp4") == 1 })
        await h.stop()
        #expect(h.log.settled.count == 3)
    }

    @Test("a root waited for (waitForRoot): the other rules run; it is watched, scanned and announced once it appears")
    func missingRootWaitedFor() async throws {
        let parent = TempDir()
        defer { parent.cleanup() }
        let present = parent.sub("present"), dock = parent.sub("dock")
        makeDir(present)
        var waiting = WatchSpec(rule: "dock", root: dock, settle: 0)
        waiting.waitForRoot = true
        let h = try await WatchHarness.start([WatchSpec(rule: "present", root: present, settle: 0), waiting], scans: 1)
        #expect(h.loopLog.count("watch root does not exist (yet)") == 1)
        writeFile(present + "/a.mp4", bytes: 1)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("a.mp4") == 1 }, "the other rule runs meanwhile")
        #expect(!h.log.rescans.contains { $0.rule == "dock" })
        // The dock is mounted with a file already on it, then another is written.
        let staging = parent.sub("staging")
        makeDir(staging)
        writeFile(staging + "/old.mp4", bytes: 2)
        #expect(rename(staging, dock) == 0)
        #expect(await waitUntil(timeout: 10) { h.log.rescans.contains { $0.rule == "dock" && $0.cause == .initialScan } })
        #expect(!h.log.rescans.contains { $0.rule == "dock" && $0.cause == .rootReappeared }, "it was never there before")
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("old.mp4") == 1 })
        writeFile(dock + "/new.mp4", bytes: 3)
        #expect(await waitUntil(timeout: 5) { h.log.settledCount("new.mp4") == 1 })
        await h.stop()
        #expect(h.log.error == nil)
    }

    @Test("cancelling the consumer stops the loop and releases its inotify watch")
    func stopsOnCancel() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        var st = stat()
        #expect(lstat(tmp.path, &st) == 0)
        let inoField = "ino:" + String(UInt64(st.st_ino), radix: 16) + " "
        /// Is some inotify descriptor of this process watching the temp folder?
        func watched() -> Bool {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fdinfo")) ?? []
            return fds.contains { fd in
                guard let info = try? String(contentsOfFile: "/proc/self/fdinfo/" + fd, encoding: .utf8) else { return false }
                return info.split(separator: "\n").contains { $0.hasPrefix("inotify ") && $0.contains(inoField) }
            }
        }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: 0)])
        #expect(watched())
        await h.stop()
        #expect(await waitUntil(timeout: 5) { !watched() })
        #expect(h.log.error == nil)
    }

    @Test("setup errors: missing root, root that is a file, relative root")
    func setupErrors() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        writeFile(tmp.sub("file"), bytes: 1)
        let cases: [(WatchSpec, String)] = [
            (WatchSpec(rule: "m", root: tmp.sub("missing")), "No such file or directory"),
            (WatchSpec(rule: "f", root: tmp.sub("file")), "is not a directory"),
            (WatchSpec(rule: "rel", root: "relative/dir"), "not an absolute path"),
        ]
        for (spec, text) in cases {
            let watcher = Watcher(specs: [spec], logger: WatchHarness.logger)
            var thrown: (any Error)?
            do {
                for try await _ in watcher.events() {}
            } catch {
                thrown = error
            }
            let e = try #require(thrown as? WatchError)
            #expect(e.description.contains(spec.root))
            #expect(e.description.contains(text), "\(e)")
        }
    }

    @Test("detection latency close → event with settle 0")
    func latency() async throws {
        let tmp = TempDir()
        defer { tmp.cleanup() }
        let h = try await WatchHarness.start([WatchSpec(rule: "r", root: tmp.path, settle: 0)])
        var samples: [Duration] = []
        for i in 0..<30 {
            writeFile(tmp.sub("l\(i).bin"), bytes: 4096)
            let closed = ContinuousClock.now
            #expect(await waitUntil(timeout: 2) { h.log.settled.count == i + 1 })
            if let at = h.log.entries.last?.at { samples.append(at - closed) }
        }
        await h.stop()
        samples.sort()
        try #require(samples.count == 30)
        let median = samples[15]
        if ProcessInfo.processInfo.environment["EVIDENCE_WATCH_LATENCY"] != nil {
            FileHandle.standardError.write(Data("detection latency (close → event, settle 0): median \(median), p90 \(samples[27]), max \(samples[29])\n".utf8))
        }
        #expect(median < .milliseconds(200), "median \(median)")
    }
}
