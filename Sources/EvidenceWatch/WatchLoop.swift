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

    private var rules: [Rule]
    private let logger: Logger
    private let continuation: AsyncThrowingStream<WatchEvent, any Error>.Continuation
    private let control: LoopControl

    private var inotifyFD: Int32 = -1
    private var dirs: [Int32: Dir] = [:]
    /// Files seen but not yet reported (settle > 0: waiting for the window; settle 0: waiting
    /// for IN_CLOSE_WRITE).
    private var candidates: [Key: Candidate] = [:]
    /// Last identity reported per path; forgotten when the path goes away.
    private var reported: [Key: FileIdentity] = [:]
    /// Paths reported as `.rejected`; forgotten when the path goes away.
    private var rejected: Set<Key> = []
    private var heap = DeadlineHeap<Key>()
    private var seqCounter: UInt64 = 0
    private var overflowPending = false

    // Scan work, done a slice per turn of the loop (`scanSliceNs`) between settle timers and
    // inotify reads: a burst of deep or huge folders delays their own scan, never the timers
    // of files beside them (issue 28: 40 chains 2,000 deep stopped every timer for 23 s).
    /// Directories of subtrees that appeared while running (LIFO: depth first, and a folder
    /// dropped now is looked at before the rest of an earlier burst).
    private var subtreeScan: [PendingDir] = []
    /// Full scans in progress, by rule index (at most one per rule).
    private var fullScans: [Int: FullScan] = [:]
    private var fullScanGeneration: UInt64 = 0
    /// The directory being listed, if any.
    private var listing: Listing?

    private static let minTickNs: UInt64 = 10_000_000
    private static let maxTickNs: UInt64 = 250_000_000
    private static let rootRetryNs: UInt64 = 2_000_000_000
    /// Longest stretch of scan work between two looks at the timers and inotify. One unit of
    /// work is one directory watched and opened or one entry `lstat`ed, so a turn overruns this
    /// by one such call at most (slow, for a path thousands of levels deep, but not seconds).
    static let scanSliceNs: UInt64 = 20_000_000
    /// Settle-0 rules: a file found in a directory that just appeared was perhaps closed before
    /// the watch existed (no IN_CLOSE_WRITE will come) or is still being written (it will).
    /// It is reported on IN_CLOSE_WRITE, or after staying unchanged this long.
    private static let newDirectoryGraceNs: UInt64 = 500_000_000

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
                settleNs: settleNs, tickNs: tick, pollNs: pollNs)
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

    private func setup() throws(WatchError) {
        for r in rules {
            guard r.spec.root.hasPrefix("/") else {
                throw .rootNotAbsolute(rule: r.spec.rule, path: r.spec.root)
            }
            switch statPath(r.root) {
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
            guard case .watched = try addWatch(rule: i, path: rules[i].root, isRoot: true, setup: true) else {
                throw .watchFailed(path: rules[i].spec.root, errno: ENOENT)
            }
            if let p = rules[i].pollNs { rules[i].nextPoll = monotonicNanos() + p }
            startFullScan(rule: i, causes: [.initialScan], initial: true)
        }
    }

    private func mainLoop() throws(WatchError) {
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

    private func pollTimeoutMillis() -> Int32 {
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

    // MARK: - inotify events

    private func readEvents(buffer: UnsafeMutableRawPointer, size: Int) throws(WatchError) {
        // Bounded number of reads per wake-up so timers still run during an event storm.
        for _ in 0..<32 {
            let n = read(inotifyFD, buffer, size)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                if e == EAGAIN || e == EWOULDBLOCK { return }
                throw .systemCall(name: "read(inotify)", errno: e)
            }
            if n == 0 { return }
            var off = 0
            while off + 16 <= n {
                let wd = buffer.load(fromByteOffset: off, as: Int32.self)
                let mask = buffer.load(fromByteOffset: off + 4, as: UInt32.self)
                let len = Int(buffer.load(fromByteOffset: off + 12, as: UInt32.self))
                var name: [UInt8] = []
                if len > 0 {
                    let raw = UnsafeRawBufferPointer(start: buffer + off + 16, count: min(len, n - off - 16))
                    let end = raw.firstIndex(of: 0) ?? raw.count
                    name = Array(raw[0..<end])
                }
                handleEvent(wd: wd, mask: mask, name: name)
                off += 16 + len
            }
        }
    }

    private func handleEvent(wd: Int32, mask: UInt32, name: [UInt8]) {
        if mask & IN.queueOverflow != 0 {
            overflowPending = true
            return
        }
        guard let dir = dirs[wd] else { return }  // stale descriptor
        if mask & IN.ignored != 0 {
            watchRemovedByKernel(wd)
            return
        }
        if mask & (IN.deleteSelf | IN.moveSelf | IN.unmount) != 0 {
            verifyWatchedDirectory(wd)
            return
        }
        guard !name.isEmpty else { return }

        if mask & IN.isDir != 0 {
            for (rule, dirPath) in dir.paths {
                let sub = joinPath(dirPath, name)
                if mask & (IN.delete | IN.movedFrom) != 0 {
                    forget(rule: rule, below: sub)
                } else if mask & (IN.create | IN.movedTo) != 0 {
                    newSubdirectory(rule: rule, path: sub, name: name)
                }
            }
            return
        }

        if mask & (IN.delete | IN.movedFrom) != 0 {
            for (rule, dirPath) in dir.paths {
                let key = Key(rule: rule, path: joinPath(dirPath, name))
                if candidates[key] != nil || reported[key] != nil || rejected.contains(key) {
                    logger.debug("gone", metadata: ["rule": "\(rules[rule].spec.rule)", "path": "\(display(key.path))"])
                }
                forget(key)
            }
            return
        }
        let kind: Observation
        if mask & IN.closeWrite != 0 {
            kind = .closeWrite
        } else if mask & IN.movedTo != 0 {
            kind = .movedTo
        } else if mask & IN.create != 0 {
            kind = .create
        } else if mask & IN.modify != 0 {
            kind = .modify
        } else if mask & IN.attrib != 0 {
            kind = .attrib
        } else {
            return
        }
        if dir.paths.count == 1, let (rule, dirPath) = dir.paths.first {
            observe(dir: dirPath, name: name, kind: kind, rules: [rule], stat: nil)
        } else {
            var groups: [[UInt8]: [Int]] = [:]
            for (rule, dirPath) in dir.paths { groups[dirPath, default: []].append(rule) }
            for (dirPath, ruleIDs) in groups {
                observe(dir: dirPath, name: name, kind: kind, rules: ruleIDs.sorted(), stat: nil)
            }
        }
    }

    private func newSubdirectory(rule: Int, path: [UInt8], name: [UInt8]) {
        let r = rules[rule]
        guard r.spec.recursive else { return }
        guard r.filter.acceptsDirectory(name) else {
            logger.debug("directory ignored by pattern", metadata: ["rule": "\(r.spec.rule)", "path": "\(display(path))"])
            return
        }
        guard String(validating: path, as: UTF8.self) != nil else {
            reject(Key(rule: rule, path: path), displayPath: display(path),
                   reason: "directory name is not valid UTF-8 (bytes: \(hexString(name))); not descended")
            return
        }
        let depth = depthBelowRoot(path, rule: rule)
        guard depth <= r.spec.maxDepth else {
            tooDeep(rule: rule, path: path)
            return
        }
        logger.debug("new directory", metadata: ["rule": "\(r.spec.rule)", "path": "\(display(path))"])
        // Watched and listed by the scan work of the next turns. Files may land before the
        // watch exists: the listing, made after the watch is added, finds them.
        subtreeScan.append(PendingDir(rule: rule, path: path, depth: depth, fullScan: nil))
    }

    /// A folder beyond the rule's `maxDepth`: not watched, not descended, reported once (and
    /// again if it goes away and comes back).
    private func tooDeep(rule: Int, path: [UInt8]) {
        let key = Key(rule: rule, path: path)
        guard !rejected.contains(key) else { return }
        // A watched folder moved deeper in the tree keeps no watches beyond the limit.
        detach(rule: rule, below: path)
        let spec = rules[rule].spec
        reject(key, displayPath: display(path),
               reason: "folder deeper than max_depth = \(spec.maxDepth) below rule \(spec.rule)'s folder \(spec.root); "
                   + "not descended: nothing in it is taken (raise max_depth in the rule file, or move it up)")
    }

    /// Levels of `path` below the rule's root: 0 for the root, 1 for a folder in it.
    private func depthBelowRoot(_ path: [UInt8], rule: Int) -> Int {
        let root = rules[rule].root
        guard path.count > root.count else { return 0 }
        var depth = 0
        var afterSlash = true
        for b in path[root.count...] {
            if b == 0x2F {
                afterSlash = true
            } else if afterSlash {
                depth += 1
                afterSlash = false
            }
        }
        return depth
    }

    // MARK: - Watches

    /// Adds (or refreshes) the watch of a directory for a rule. Throws when `setup` (a root at
    /// start), or when the inotify watch limit is reached during the rule's initial scan (the
    /// service must not run half blind from the start); later, a folder that cannot be watched
    /// for lack of watches is reported as rejected, naming the sysctl to raise.
    private func addWatch(rule: Int, path: [UInt8], isRoot: Bool, setup: Bool = false) throws(WatchError) -> WatchOutcome {
        var mask = IN.directoryMask
        if !isRoot { mask |= IN.dontFollow }
        let wd = withCPath(path) { inotify_add_watch(inotifyFD, $0, mask) }
        if wd < 0 {
            let e = errno
            let p = display(path)
            let spec = rules[rule].spec
            if e == ENOSPC {
                let limit = WatchError.watchLimitReached(path: p)
                if setup || fullScans[rule]?.initial == true { throw limit }
                logger.error("\(limit); nothing in it is taken until a rescan (SIGUSR1) after the limit is raised",
                             metadata: ["rule": "\(spec.rule)", "watches": "\(dirs.count)"])
                if !isRoot {
                    reject(Key(rule: rule, path: path), displayPath: p,
                           reason: "folder not watched: inotify watch limit reached (\(dirs.count) watches in this process); "
                               + "nothing in it is taken: raise fs.inotify.max_user_watches, then rescan (SIGUSR1)")
                }
                return .refused
            }
            if e == ENAMETOOLONG && !isRoot {
                reject(Key(rule: rule, path: path), displayPath: p,
                       reason: "folder path longer than the system allows (\(path.count) bytes, PATH_MAX \(PATH_MAX)); "
                           + "not watched, nothing in it is taken")
                return .refused
            }
            if e == ENOENT || e == ENOTDIR {
                if setup { throw .watchFailed(path: p, errno: e) }
                logger.debug("directory vanished before it could be watched", metadata: ["path": "\(p)"])
                return .notWatched
            }
            if setup { throw .watchFailed(path: p, errno: e) }
            logger.warning("\(WatchError.watchFailed(path: p, errno: e))", metadata: ["rule": "\(spec.rule)"])
            return .notWatched
        }
        // Refused before (watch limit), watched now: a later refusal is news again.
        rejected.remove(Key(rule: rule, path: path))
        fullScans[rule]?.visited.insert(wd)
        var device: UInt64 = 0, inode: UInt64 = 0
        if case .ok(let st) = (isRoot ? statPath(path) : lstatPath(path)) {
            device = st.identity.device
            inode = st.identity.inode
        }
        if var d = dirs[wd] {
            if let old = d.paths[rule], old != path {
                relocate(rule: rule, from: old, to: path)
                d = dirs[wd]!
            }
            d.paths[rule] = path
            d.device = device
            d.inode = inode
            dirs[wd] = d
        } else {
            dirs[wd] = Dir(device: device, inode: inode, paths: [rule: path])
        }
        if isRoot { rules[rule].rootWD = wd }
        return .watched(wd)
    }

    /// A watched directory was renamed within the tree: rewrite the paths of it and of its
    /// watched subdirectories; what was known under the old name is forgotten (the scan of the
    /// new name finds the files again).
    private func relocate(rule: Int, from old: [UInt8], to new: [UInt8]) {
        logger.debug("directory moved", metadata: ["from": "\(display(old))", "to": "\(display(new))"])
        for (wd, var d) in dirs {
            guard let p = d.paths[rule], isSameOrBelow(p, old) else { continue }
            d.paths[rule] = new + p[old.count...]
            dirs[wd] = d
        }
        forget(rule: rule, below: old)
    }

    /// IN_DELETE_SELF / IN_MOVE_SELF / IN_UNMOUNT: keep the watch only where the path still
    /// names the same directory (a rename inside the tree was already followed).
    private func verifyWatchedDirectory(_ wd: Int32) {
        guard let d = dirs[wd] else { return }
        for (rule, path) in d.paths {
            let isRoot = rules[rule].rootWD == wd
            if case .ok(let st) = (isRoot ? statPath(path) : lstatPath(path)),
               st.kind == .directory, st.identity.device == d.device, st.identity.inode == d.inode {
                continue
            }
            logger.debug("watched directory gone or moved away", metadata: ["path": "\(display(path))"])
            detach(rule: rule, below: path)
            if isRoot { rootLost(rule) }
        }
    }

    /// Stops watching `path` and everything below it for `rule`.
    private func detach(rule: Int, below path: [UInt8]) {
        for (wd, var d) in dirs {
            guard let p = d.paths[rule], isSameOrBelow(p, path) else { continue }
            d.paths[rule] = nil
            if d.paths.isEmpty {
                dirs[wd] = nil
                inotify_rm_watch(inotifyFD, wd)
            } else {
                dirs[wd] = d
            }
        }
        forget(rule: rule, below: path)
    }

    /// IN_IGNORED: the kernel dropped the watch (directory deleted, unmounted, or removed).
    private func watchRemovedByKernel(_ wd: Int32) {
        guard let d = dirs.removeValue(forKey: wd) else { return }
        for (rule, path) in d.paths {
            logger.debug("watch removed", metadata: ["path": "\(display(path))"])
            if rules[rule].rootWD == wd { rootLost(rule) }
        }
    }

    private func rootLost(_ rule: Int) {
        guard rules[rule].rootWD != nil else { return }
        rules[rule].rootWD = nil
        rules[rule].rootRetryAt = monotonicNanos() + Self.rootRetryNs
        // Scan work under the lost root is void; what its full scan had to announce is
        // announced by the scan made when the root is back.
        if let scan = fullScans.removeValue(forKey: rule) {
            for c in scan.causes where !rules[rule].carriedCauses.contains(c) { rules[rule].carriedCauses.append(c) }
        }
        subtreeScan.removeAll { $0.rule == rule }
        if listing?.dir.rule == rule { listing = nil }
        detach(rule: rule, below: rules[rule].root)
        forgetAll(rule: rule)
        logger.warning(
            "watch root is gone (deleted, moved or unmounted); watching again when it reappears",
            metadata: ["rule": "\(rules[rule].spec.rule)", "path": "\(rules[rule].spec.root)"])
    }

    private func retryLostRoots(now: UInt64) {
        for i in rules.indices {
            guard let at = rules[i].rootRetryAt, at <= now else { continue }
            if case .ok(let st) = statPath(rules[i].root), st.kind == .directory {
                _ = try? addWatch(rule: i, path: rules[i].root, isRoot: true)
            }
            if rules[i].rootWD != nil {
                rules[i].rootRetryAt = nil
                logger.notice("watch root is back", metadata: ["rule": "\(rules[i].spec.rule)", "path": "\(rules[i].spec.root)"])
                let causes = rules[i].carriedCauses.filter { $0 != .rootReappeared } + [.rootReappeared]
                rules[i].carriedCauses = []
                startFullScan(rule: i, causes: causes, initial: false)
            } else {
                rules[i].rootRetryAt = now + Self.rootRetryNs
            }
        }
    }

    // MARK: - Scans

    /// Starts a full scan of the rule's tree, or starts the one in progress over (events may
    /// have been lost after it listed a folder); `causes` are announced when it completes.
    private func startFullScan(rule: Int, causes: [RescanCause], initial: Bool) {
        var all = fullScans[rule]?.causes ?? []
        for c in causes where !all.contains(c) { all.append(c) }
        if let l = listing, l.dir.rule == rule, l.dir.fullScan != nil { listing = nil }
        fullScanGeneration += 1
        fullScans[rule] = FullScan(
            generation: fullScanGeneration,
            pending: [PendingDir(rule: rule, path: rules[rule].root, depth: 0, fullScan: fullScanGeneration)],
            causes: all, initial: initial || fullScans[rule]?.initial == true)
    }

    /// Does queued scan work until `deadline`; returns whether some is left. Every directory is
    /// watched before it is listed, so a file created in it after the listing is seen by
    /// inotify, and one created before is in the listing: nothing falls in between.
    private func scanSlice(until deadline: UInt64) throws(WatchError) -> Bool {
        repeat {
            if let l = listing {
                if l.next < l.names.count {
                    listing!.next += 1
                    scanEntry(l.names[l.next], in: l.dir)
                } else {
                    listing = nil
                }
            } else if let dir = nextPendingDirectory() {
                try watchAndList(dir)
            } else {
                return false
            }
        } while monotonicNanos() < deadline
        return true
    }

    /// The next directory to scan: new subtrees first (a folder dropped now is looked at
    /// before the rest of a full scan), then the full scans. A full scan with nothing left
    /// completes here.
    private func nextPendingDirectory() -> PendingDir? {
        if let d = subtreeScan.popLast() { return d }
        for rule in fullScans.keys.sorted() {
            if let d = fullScans[rule]!.pending.popLast() { return d }
            completeFullScan(rule: rule)
        }
        return nil
    }

    /// Watches a pending directory and reads its names (looked at by the next scan steps).
    private func watchAndList(_ dir: PendingDir) throws(WatchError) {
        let r = rules[dir.rule]
        if let g = dir.fullScan, fullScans[dir.rule]?.generation != g { return }  // started over
        let isRoot = dir.depth == 0
        switch try addWatch(rule: dir.rule, path: dir.path, isRoot: isRoot) {
        case .watched:
            break
        case .notWatched where !isRoot:
            break  // listing it may still work; if not, the failure is logged below
        case .refused where !isRoot:
            return  // reported as rejected; not listed
        case .notWatched, .refused:
            // The root cannot be watched under the scan (gone, moved, unmounted): it is lost
            // until it is back, and the scan made then announces what this one had to.
            if dir.fullScan != nil, let scan = fullScans.removeValue(forKey: dir.rule) {
                for c in scan.causes where !rules[dir.rule].carriedCauses.contains(c) {
                    rules[dir.rule].carriedCauses.append(c)
                }
            }
            rootLost(dir.rule)
            return
        }
        switch readDirectory(dir.path) {
        case .success(let names):
            listing = Listing(dir: dir, names: names)
        case .failure(let e):
            if dir.fullScan != nil { fullScans[dir.rule]?.failed.append(dir.path) }
            if e.code == ENOENT || e.code == ENOTDIR {
                logger.debug("directory vanished during scan", metadata: ["path": "\(display(dir.path))"])
            } else {
                logger.warning("cannot read directory: \(errnoText(e.code))",
                               metadata: ["rule": "\(r.spec.rule)", "path": "\(display(dir.path))"])
            }
        }
    }

    /// One name of a directory being listed: a file is observed, a subdirectory queued (or
    /// reported, when it is beyond `maxDepth` or its name is not UTF-8).
    private func scanEntry(_ name: [UInt8], in dir: PendingDir) {
        let rule = dir.rule
        let r = rules[rule]
        let path = joinPath(dir.path, name)
        if dir.fullScan != nil { fullScans[rule]?.seen.insert(Key(rule: rule, path: path)) }
        let st = lstatPath(path)
        guard case .ok(let s) = st, s.kind == .directory else {
            observe(dir: dir.path, name: name, kind: dir.fullScan == nil ? .scanNew : .scan, rules: [rule], stat: st)
            return
        }
        guard r.spec.recursive else { return }
        guard r.filter.acceptsDirectory(name) else {
            logger.debug("directory ignored by pattern", metadata: ["rule": "\(r.spec.rule)", "path": "\(display(path))"])
            return
        }
        guard String(validating: path, as: UTF8.self) != nil else {
            reject(Key(rule: rule, path: path), displayPath: display(path),
                   reason: "directory name is not valid UTF-8 (bytes: \(hexString(name))); not descended")
            return
        }
        guard dir.depth < r.spec.maxDepth else {
            tooDeep(rule: rule, path: path)
            return
        }
        let sub = PendingDir(rule: rule, path: path, depth: dir.depth + 1, fullScan: dir.fullScan)
        if let g = dir.fullScan {
            if fullScans[rule]?.generation == g { fullScans[rule]!.pending.append(sub) }
        } else {
            subtreeScan.append(sub)
        }
    }

    /// A full scan is complete: forget what is no longer there and unwatch directories that
    /// disappeared unnoticed (events lost to an overflow, silent mounts), then announce it.
    /// What events brought in while it ran counts as seen (`consider`, `reject`, `addWatch`).
    private func completeFullScan(rule: Int) {
        guard let scan = fullScans.removeValue(forKey: rule) else { return }
        let seen = scan.seen, visited = scan.visited, failed = scan.failed
        func stale(_ k: Key) -> Bool {
            k.rule == rule && !seen.contains(k) && !failed.contains(where: { isSameOrBelow(k.path, $0) })
        }
        for k in reported.keys where stale(k) { reported[k] = nil }
        for k in candidates.keys where stale(k) { candidates[k] = nil }
        for k in rejected where stale(k) { rejected.remove(k) }
        for (wd, var d) in dirs where d.paths[rule] != nil && !visited.contains(wd) {
            d.paths[rule] = nil
            if d.paths.isEmpty {
                dirs[wd] = nil
                inotify_rm_watch(inotifyFD, wd)
            } else {
                dirs[wd] = d
            }
        }
        logger.debug(
            "full scan done",
            metadata: ["rule": "\(rules[rule].spec.rule)", "watches": "\(dirs.count)",
                       "candidates": "\(candidates.count)"])
        for cause in scan.causes {
            continuation.yield(.rescanned(rule: rules[rule].spec.rule, cause: cause))
        }
    }

    private func handleOverflow(_ cause: RescanCause) {
        logger.warning("\(cause): events may have been lost; rescanning all roots (raise fs.inotify.max_queued_events if this repeats)")
        for i in rules.indices where rules[i].rootWD != nil {
            startFullScan(rule: i, causes: [cause], initial: false)
        }
    }

    private func processPolls(now: UInt64) {
        for i in rules.indices {
            guard let due = rules[i].nextPoll, due <= now, let interval = rules[i].pollNs else { continue }
            rules[i].nextPoll = now + interval
            // A full scan in progress already looks at everything; a poll on top would restart it.
            guard rules[i].rootWD != nil, fullScans[i] == nil else { continue }
            logger.debug("poll rescan", metadata: ["rule": "\(rules[i].spec.rule)"])
            startFullScan(rule: i, causes: [], initial: false)
        }
    }

    // MARK: - Candidates

    /// Something happened to `dir/name` (or a scan found it), for these rules.
    private func observe(dir: [UInt8], name: [UInt8], kind: Observation, rules ruleIDs: [Int], stat given: StatResult?) {
        let accepted = ruleIDs.filter { rules[$0].filter.acceptsFile(name) }
        guard !accepted.isEmpty else { return }
        let pathBytes = joinPath(dir, name)

        // A write in progress on a known candidate: no need to stat, just restart its window.
        if kind == .modify, given == nil {
            let now = monotonicNanos()
            var allKnown = true
            for r in accepted {
                let key = Key(rule: r, path: pathBytes)
                if candidates[key] != nil { candidates[key]!.lastChange = now } else { allKnown = false }
            }
            if allKnown { return }
        }

        let st = given ?? lstatPath(pathBytes)
        let fileStat: FileStat
        switch st {
        case .failed(let e):
            for r in accepted {
                let key = Key(rule: r, path: pathBytes)
                if candidates[key] != nil {
                    logger.debug("vanished before settling", metadata: ["rule": "\(rules[r].spec.rule)", "path": "\(display(pathBytes))"])
                }
                forget(key)
            }
            if e != ENOENT && e != ENOTDIR {
                logger.warning("cannot stat: \(errnoText(e))", metadata: ["path": "\(display(pathBytes))"])
            }
            return
        case .ok(let s):
            fileStat = s
        }
        if fileStat.kind == .directory { return }  // directories are handled by the tree logic

        guard let path = String(validating: pathBytes, as: UTF8.self) else {
            for r in accepted {
                let key = Key(rule: r, path: pathBytes)
                candidates[key] = nil
                reported[key] = nil
                reject(key, displayPath: display(pathBytes),
                       reason: "file name is not valid UTF-8 (bytes: \(hexString(name)))")
            }
            return
        }
        guard fileStat.kind == .regular else {
            for r in accepted {
                let key = Key(rule: r, path: pathBytes)
                candidates[key] = nil
                reported[key] = nil
                reject(key, displayPath: path, reason: fileStat.kind.rejectionReason)
            }
            return
        }
        // `link(2)` gives an existing inode another name: IN_CREATE and nothing after it (no
        // IN_CLOSE_WRITE will come for this name). A settle-0 rule would wait for the next
        // rescan; treat the new name like a rename into the folder instead.
        let observed = kind == .create && fileStat.links > 1 ? Observation.movedTo : kind
        for r in accepted {
            consider(rule: r, key: Key(rule: r, path: pathBytes), path: path, identity: fileStat.identity, kind: observed)
        }
    }

    private func consider(rule: Int, key: Key, path: String, identity: FileIdentity, kind: Observation) {
        rejected.remove(key)  // it was something else before; now it is a regular file
        fullScans[rule]?.seen.insert(key)  // there now, even if a full scan listed its folder earlier
        let r = rules[rule]
        let now = monotonicNanos()
        let completes = kind == .closeWrite || kind == .movedTo || kind == .scan

        if var c = candidates[key] {
            if kind == .modify || c.identity != identity {
                c.identity = identity
                c.lastChange = now
            }
            if r.settleNs == 0 && completes {
                candidates[key] = nil
                report(rule: rule, key: key, path: path, identity: identity)
            } else {
                candidates[key] = c
            }
            return
        }
        if kind != .modify, reported[key] == identity {
            return  // unchanged since it was reported (touch with same times, chmod, rescan)
        }
        var settle = r.settleNs
        var tick = r.tickNs
        if settle == 0 {
            if completes || kind == .attrib {
                report(rule: rule, key: key, path: path, identity: identity)
                return
            }
            if kind != .scanNew {
                // Being written: report on IN_CLOSE_WRITE (or on the next scan).
                candidates[key] = Candidate(path: path, identity: identity, lastChange: now, seq: 0,
                                            settleNs: 0, tickNs: 0)
                return
            }
            settle = Self.newDirectoryGraceNs
            tick = settle / 4
        }
        seqCounter += 1
        candidates[key] = Candidate(path: path, identity: identity, lastChange: now, seq: seqCounter,
                                    settleNs: settle, tickNs: tick)
        // Files found by a scan are most likely complete: check them once the window is over.
        // Files with activity are checked every tick so a pause in writing is seen early.
        let first = kind == .scan ? settle : min(tick, settle)
        heap.push(.init(due: now + first, seq: seqCounter, payload: key))
        logger.debug("candidate", metadata: ["rule": "\(r.spec.rule)", "path": "\(path)", "event": "\(kind.rawValue)"])
    }

    /// Stability checks whose time has come.
    private func processDue(now: UInt64) {
        while let e = heap.popDue(now: now) {
            let key = e.payload
            guard var c = candidates[key], c.seq == e.seq else { continue }
            let r = rules[key.rule]
            guard c.settleNs > 0 else { continue }
            switch lstatPath(key.path) {
            case .failed(let err):
                candidates[key] = nil
                logger.debug("vanished before settling (\(errnoText(err)))", metadata: ["rule": "\(r.spec.rule)", "path": "\(c.path)"])
            case .ok(let st):
                guard st.kind == .regular else {
                    candidates[key] = nil
                    reported[key] = nil
                    if st.kind != .directory {
                        reject(key, displayPath: c.path, reason: st.kind.rejectionReason)
                    }
                    continue
                }
                if st.identity != c.identity {
                    c.identity = st.identity
                    c.lastChange = now
                }
                if now &- c.lastChange >= c.settleNs {
                    candidates[key] = nil
                    report(rule: key.rule, key: key, path: c.path, identity: c.identity)
                } else {
                    seqCounter += 1
                    c.seq = seqCounter
                    candidates[key] = c
                    let due = min(c.lastChange + c.settleNs, now + c.tickNs)
                    heap.push(.init(due: due, seq: seqCounter, payload: key))
                }
            }
        }
    }

    // MARK: - Reporting and memory

    private func report(rule: Int, key: Key, path: String, identity: FileIdentity) {
        if reported[key] == identity { return }
        reported[key] = identity
        logger.debug("settled", metadata: ["rule": "\(rules[rule].spec.rule)", "path": "\(path)", "size": "\(identity.size)"])
        continuation.yield(.settled(SettledFile(rule: rules[rule].spec.rule, path: path, identity: identity)))
    }

    private func reject(_ key: Key, displayPath: String, reason: String) {
        fullScans[key.rule]?.seen.insert(key)
        guard rejected.insert(key).inserted else { return }
        logger.info("not taken: \(reason)", metadata: ["rule": "\(rules[key.rule].spec.rule)", "path": "\(displayPath)"])
        continuation.yield(.rejected(rule: rules[key.rule].spec.rule, path: displayPath, reason: reason))
    }

    private func forget(_ key: Key) {
        candidates[key] = nil
        reported[key] = nil
        rejected.remove(key)
    }

    private func forget(rule: Int, below prefix: [UInt8]) {
        for k in reported.keys where k.rule == rule && isSameOrBelow(k.path, prefix) { reported[k] = nil }
        for k in candidates.keys where k.rule == rule && isSameOrBelow(k.path, prefix) { candidates[k] = nil }
        for k in rejected where k.rule == rule && isSameOrBelow(k.path, prefix) { rejected.remove(k) }
    }

    private func forgetAll(rule: Int) {
        for k in reported.keys where k.rule == rule { reported[k] = nil }
        for k in candidates.keys where k.rule == rule { candidates[k] = nil }
        for k in rejected where k.rule == rule { rejected.remove(k) }
    }

    /// Path for messages: exact when valid UTF-8, invalid bytes shown as U+FFFD otherwise.
    private func display(_ path: [UInt8]) -> String {
        String(decoding: path, as: UTF8.self)
    }
}
