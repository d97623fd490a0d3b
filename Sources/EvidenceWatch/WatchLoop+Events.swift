import Glibc
import Logging

/// The inotify events read each turn of the loop, and what each one changes. Split from WatchLoop.swift by its sections;
/// all of it runs on the loop's one thread.
extension WatchLoop {
    func readEvents(buffer: UnsafeMutableRawPointer, size: Int) throws(WatchError) {
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

    func handleEvent(wd: Int32, mask: UInt32, name: [UInt8]) {
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

    func newSubdirectory(rule: Int, path: [UInt8], name: [UInt8]) {
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
    func tooDeep(rule: Int, path: [UInt8]) {
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
    func depthBelowRoot(_ path: [UInt8], rule: Int) -> Int {
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
}
