import Glibc
import Logging

/// The inotify watches: added before a folder is listed, moved with renames, dropped with their folders. Split from WatchLoop.swift by its sections;
/// all of it runs on the loop's one thread.
extension WatchLoop {
    /// Adds (or refreshes) the watch of a directory for a rule. Throws when `setup` (a root at
    /// start), or when the inotify watch limit is reached during the rule's initial scan (the
    /// service must not run half blind from the start); later, a folder that cannot be watched
    /// for lack of watches is reported as rejected, naming the sysctl to raise.
    func addWatch(rule: Int, path: [UInt8], isRoot: Bool, setup: Bool = false) throws(WatchError) -> WatchOutcome {
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
    func relocate(rule: Int, from old: [UInt8], to new: [UInt8]) {
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
    func verifyWatchedDirectory(_ wd: Int32) {
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
    func detach(rule: Int, below path: [UInt8]) {
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
    func watchRemovedByKernel(_ wd: Int32) {
        guard let d = dirs.removeValue(forKey: wd) else { return }
        for (rule, path) in d.paths {
            logger.debug("watch removed", metadata: ["path": "\(display(path))"])
            if rules[rule].rootWD == wd { rootLost(rule) }
        }
    }

    func rootLost(_ rule: Int) {
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

    func retryLostRoots(now: UInt64) {
        for i in rules.indices {
            guard let at = rules[i].rootRetryAt, at <= now else { continue }
            if case .ok(let st) = statPath(rules[i].root), st.kind == .directory {
                _ = try? addWatch(rule: i, path: rules[i].root, isRoot: true)
            }
            if rules[i].rootWD != nil {
                rules[i].rootRetryAt = nil
                logger.notice("watch root is back", metadata: ["rule": "\(rules[i].spec.rule)", "path": "\(rules[i].spec.root)"])
                // A root missing from the start carries only its initial scan: it did not reappear.
                let carried = rules[i].carriedCauses
                let causes = carried == [.initialScan] ? carried : carried.filter { $0 != .rootReappeared } + [.rootReappeared]
                rules[i].carriedCauses = []
                startFullScan(rule: i, causes: causes, initial: false)
            } else {
                rules[i].rootRetryAt = now + Self.rootRetryNs
            }
        }
    }
}
