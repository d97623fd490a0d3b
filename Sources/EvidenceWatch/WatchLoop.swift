import Glibc
import Logging

/// The blocking watch loop. Confined to its own thread: nothing here is shared.
///
/// Paths are keyed by their exact bytes (`[UInt8]`), never by `String` equality: Swift
/// compares strings by canonical equivalence, so "café" spelled NFC and NFD — two different
/// files on Linux — would otherwise collide.
final class WatchLoop {
    struct Rule {
        var spec: WatchSpec
        var root: [UInt8]
        var filter: NameFilter
        var settleNs: UInt64
        /// The longest a file's window grows to (`WatchSpec.settleMax`); `settleNs` when it never grows.
        var settleMaxNs: UInt64
        var tickNs: UInt64
        var pollNs: UInt64?
        var nextPoll: UInt64?
        var rootWD: Int32?
        var rootRetryAt: UInt64?
        /// Announcements of a full scan cut short because the root went away; made by the scan
        /// after it is back (so the initial scan is announced even when the root vanished during it).
        var carriedCauses: [RescanCause] = []
    }

    /// A watched directory. One inode has one watch descriptor; several rules may see it
    /// (overlapping roots), each under its own spelling of the path.
    struct Dir {
        var device: UInt64
        var inode: UInt64
        var paths: [Int: [UInt8]]  // rule index -> directory path
    }

    struct Key: Hashable {
        var rule: Int
        var path: [UInt8]
    }

    struct Candidate {
        var path: String
        var identity: FileIdentity
        var lastChange: UInt64
        var seq: UInt64
        /// Stability window of this candidate; 0 = no timer, completed by IN_CLOSE_WRITE /
        /// IN_MOVED_TO or a scan (settle-0 rules).
        var settleNs: UInt64
        var tickNs: UInt64
    }

    /// A directory waiting to be watched and listed.
    struct PendingDir {
        var rule: Int
        var path: [UInt8]
        /// Levels below the rule's root (the root is 0).
        var depth: Int
        /// nil: part of a subtree that appeared while running; else the generation of the
        /// rule's full scan it belongs to.
        var fullScan: UInt64?
    }

    /// A directory being listed: its names are looked at a few per turn.
    struct Listing {
        var dir: PendingDir
        var names: [[UInt8]]
        var next = 0
    }

    /// A full scan of one rule's tree in progress (start-up, overflow, poll, root back), and the
    /// bookkeeping to forget, once it is complete, what is no longer there.
    struct FullScan {
        var generation: UInt64
        var pending: [PendingDir]
        /// `.rescanned` events to send when it completes (none for a routine poll).
        var causes: [RescanCause]
        /// The initial scan: running out of inotify watches stops the watcher (a setup error).
        var initial: Bool
        var seen: Set<Key> = []
        var visited: Set<Int32> = []
        var failed: [[UInt8]] = []
    }

    /// What `addWatch` did.
    enum WatchOutcome {
        case watched(Int32)
        /// Not watched, and reported as rejected (watch limit, path too long): not listed either.
        case refused
        /// Not watched (vanished, permission, …): listing it may still work or fail on its own.
        case notWatched
    }

    enum Observation: String {
        /// Found by the initial scan, an overflow or poll rescan.
        case scan
        /// Found by scanning a directory that appeared while running (it may still be written).
        case scanNew = "scan_new_directory"
        case create, modify, attrib, closeWrite = "close_write", movedTo = "moved_to"
    }

    var rules: [Rule]
    let logger: Logger
    let continuation: AsyncThrowingStream<WatchEvent, any Error>.Continuation
    let control: LoopControl

    var inotifyFD: Int32 = -1
    var dirs: [Int32: Dir] = [:]
    /// Files seen but not yet reported (settle > 0: waiting for the window; settle 0: waiting
    /// for IN_CLOSE_WRITE).
    var candidates: [Key: Candidate] = [:]
    /// Last identity reported per path; forgotten when the path goes away.
    var reported: [Key: FileIdentity] = [:]
    /// Paths reported as `.rejected`; forgotten when the path goes away.
    var rejected: Set<Key> = []
    /// Files that changed again after they were reported: the window they get now (doubled at
    /// each such change, up to the rule's `settleMaxNs`) and when the file was last reported (or
    /// the window set). A change more than `settleMaxNs` after that starts again from the rule's
    /// window.
    var lengthened: [Key: (settleNs: UInt64, at: UInt64)] = [:]
    var heap = DeadlineHeap<Key>()
    var seqCounter: UInt64 = 0
    var overflowPending = false

    // Scan work, done a slice per turn of the loop (`scanSliceNs`) between settle timers and
    // inotify reads: a burst of deep or huge folders delays their own scan, never the timers
    // of files beside them (issue 28: 40 chains 2,000 deep stopped every timer for 23 s).
    /// Directories of subtrees that appeared while running (LIFO: depth first, and a folder
    /// dropped now is looked at before the rest of an earlier burst).
    var subtreeScan: [PendingDir] = []
    /// Full scans in progress, by rule index (at most one per rule).
    var fullScans: [Int: FullScan] = [:]
    var fullScanGeneration: UInt64 = 0
    /// The directory being listed, if any.
    var listing: Listing?

    static let minTickNs: UInt64 = 10_000_000
    static let maxTickNs: UInt64 = 250_000_000
    static let rootRetryNs: UInt64 = 2_000_000_000
    /// Longest stretch of scan work between two looks at the timers and inotify. One unit of
    /// work is one directory watched and opened or one entry `lstat`ed, so a turn overruns this
    /// by one such call at most (slow, for a path thousands of levels deep, but not seconds).
    static let scanSliceNs: UInt64 = 20_000_000
    /// Settle-0 rules: a file found in a directory that just appeared was perhaps closed before
    /// the watch existed (no IN_CLOSE_WRITE will come) or is still being written (it will).
    /// It is reported on IN_CLOSE_WRITE, or after staying unchanged this long.
    static let newDirectoryGraceNs: UInt64 = 500_000_000

    init(
        specs: [WatchSpec], ignores: [String], logger: Logger,
        continuation: AsyncThrowingStream<WatchEvent, any Error>.Continuation, control: LoopControl
    ) {
        self.logger = logger
        self.continuation = continuation
        self.control = control
        self.rules = specs.map { spec in
            var root = Array(spec.root.utf8)
            while root.count > 1, root.last == 0x2F { root.removeLast() }
            let settleNs = seconds(toNanos: spec.settle)
            let tick = min(max(settleNs / 4, Self.minTickNs), Self.maxTickNs)
            let pollNs = spec.pollInterval.map { max(seconds(toNanos: $0), 100_000_000) }
            return Rule(
                spec: spec, root: root,
                filter: NameFilter(include: spec.include, ignore: ignores + spec.exclude),
                settleNs: settleNs, settleMaxNs: max(settleNs, spec.settleMax.map(seconds(toNanos:)) ?? settleNs),
                tickNs: tick, pollNs: pollNs)
        }
    }

    // MARK: - Run

    func run() {
        defer {
            if inotifyFD >= 0 { close(inotifyFD) }
        }
        do {
            try setup()
        } catch {
            logger.error("watcher setup failed: \(error)")
            continuation.finish(throwing: error)
            return
        }
        do {
            try mainLoop()
            continuation.finish()
        } catch {
            logger.error("watcher stopped: \(error)")
            continuation.finish(throwing: error)
        }
    }

    func setup() throws(WatchError) {
        for r in rules {
            guard r.spec.root.hasPrefix("/") else {
                throw .rootNotAbsolute(rule: r.spec.rule, path: r.spec.root)
            }
            switch statPath(r.root) {
            case .failed(let e) where r.spec.waitForRoot && (e == ENOENT || e == ENOTDIR):
                continue   // waited for below
            case .failed(let e):
                throw .rootUnavailable(rule: r.spec.rule, path: r.spec.root, errno: e)
            case .ok(let st):
                guard st.kind == .directory else {
                    throw .rootNotDirectory(rule: r.spec.rule, path: r.spec.root)
                }
            }
        }
        inotifyFD = inotify_init1(IN.initNonBlock | IN.initCloexec)
        guard inotifyFD >= 0 else { throw .inotifyUnavailable(errno: errno) }

        // The roots are watched now (an unusable root is a setup error); what lies below them
        // is scanned by the main loop, a slice per turn, and `.rescanned(.initialScan)` is sent
        // when a rule's tree is complete.
        for i in rules.indices {
            if rules[i].spec.waitForRoot, case .failed = statPath(rules[i].root) {
                rules[i].rootRetryAt = monotonicNanos() + Self.rootRetryNs
                rules[i].carriedCauses = [.initialScan]
                logger.warning("watch root does not exist (yet); watching it once it appears",
                               metadata: ["rule": "\(rules[i].spec.rule)", "path": "\(rules[i].spec.root)"])
                continue
            }
            guard case .watched = try addWatch(rule: i, path: rules[i].root, isRoot: true, setup: true) else {
                throw .watchFailed(path: rules[i].spec.root, errno: ENOENT)
            }
            if let p = rules[i].pollNs { rules[i].nextPoll = monotonicNanos() + p }
            startFullScan(rule: i, causes: [.initialScan], initial: true)
        }
    }

    func mainLoop() throws(WatchError) {
        let bufferSize = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        var fds = [
            pollfd(fd: inotifyFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: control.wakeFD, events: Int16(POLLIN), revents: 0),
        ]
        while !control.stopRequested {
            let now = monotonicNanos()
            processDue(now: now)
            processPolls(now: now)
            retryLostRoots(now: now)
            if control.stopRequested { break }
            let scanning = try scanSlice(until: monotonicNanos() + Self.scanSliceNs)

            fds[0].revents = 0
            fds[1].revents = 0
            let n = poll(&fds, 2, scanning ? 0 : pollTimeoutMillis())
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                throw .systemCall(name: "poll", errno: e)
            }
            if fds[1].revents != 0 { control.drainWake() }
            if control.stopRequested { break }
            if control.takeOverflowRequest() {
                handleOverflow(.overflow(injected: true))
            }
            if fds[0].revents != 0 {
                try readEvents(buffer: buffer, size: bufferSize)
            }
            if overflowPending {
                overflowPending = false
                handleOverflow(.overflow(injected: false))
            }
        }
        logger.debug("watch loop stopped")
    }

    func pollTimeoutMillis() -> Int32 {
        var due = heap.nextDue
        for r in rules {
            if let p = r.nextPoll { due = min(due ?? p, p) }
            if let t = r.rootRetryAt { due = min(due ?? t, t) }
        }
        guard let due else { return -1 }
        let now = monotonicNanos()
        if due <= now { return 0 }
        let ms = (due - now + 999_999) / 1_000_000
        return Int32(min(ms, UInt64(Int32.max)))
    }

}
