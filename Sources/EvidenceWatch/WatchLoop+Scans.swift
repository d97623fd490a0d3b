import Glibc
import Logging

/// Full and subtree scans, done in slices between the settle timers (`scanSliceNs`). Split from WatchLoop.swift by its sections;
/// all of it runs on the loop's one thread.
extension WatchLoop {
    /// Starts a full scan of the rule's tree, or starts the one in progress over (events may
    /// have been lost after it listed a folder); `causes` are announced when it completes.
    func startFullScan(rule: Int, causes: [RescanCause], initial: Bool) {
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
    func scanSlice(until deadline: UInt64) throws(WatchError) -> Bool {
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
    func nextPendingDirectory() -> PendingDir? {
        if let d = subtreeScan.popLast() { return d }
        for rule in fullScans.keys.sorted() {
            if let d = fullScans[rule]!.pending.popLast() { return d }
            completeFullScan(rule: rule)
        }
        return nil
    }

    /// Watches a pending directory and reads its names (looked at by the next scan steps).
    func watchAndList(_ dir: PendingDir) throws(WatchError) {
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
    func scanEntry(_ name: [UInt8], in dir: PendingDir) {
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
    func completeFullScan(rule: Int) {
        guard let scan = fullScans.removeValue(forKey: rule) else { return }
        let seen = scan.seen, visited = scan.visited, failed = scan.failed
        func stale(_ k: Key) -> Bool {
            k.rule == rule && !seen.contains(k) && !failed.contains(where: { isSameOrBelow(k.path, $0) })
        }
        for k in reported.keys where stale(k) { reported[k] = nil }
        for k in lengthened.keys where stale(k) { lengthened[k] = nil }
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

    func handleOverflow(_ cause: RescanCause) {
        logger.warning("\(cause): events may have been lost; rescanning all roots (raise fs.inotify.max_queued_events if this repeats)")
        for i in rules.indices where rules[i].rootWD != nil {
            startFullScan(rule: i, causes: [cause], initial: false)
        }
    }

    func processPolls(now: UInt64) {
        for i in rules.indices {
            guard let due = rules[i].nextPoll, due <= now, let interval = rules[i].pollNs else { continue }
            rules[i].nextPoll = now + interval
            // A full scan in progress already looks at everything; a poll on top would restart it.
            guard rules[i].rootWD != nil, fullScans[i] == nil else { continue }
            logger.debug("poll rescan", metadata: ["rule": "\(rules[i].spec.rule)"])
            startFullScan(rule: i, causes: [], initial: false)
        }
    }
}
