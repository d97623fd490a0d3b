import Glibc
import Logging

/// Files seen and waiting to settle, and the check that reports them once they hold still. Split from WatchLoop.swift by its sections;
/// all of it runs on the loop's one thread.
extension WatchLoop {
    /// Something happened to `dir/name` (or a scan found it), for these rules.
    func observe(dir: [UInt8], name: [UInt8], kind: Observation, rules ruleIDs: [Int], stat given: StatResult?) {
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

    func consider(rule: Int, key: Key, path: String, identity: FileIdentity, kind: Observation) {
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
        if settle > 0, r.settleMaxNs > settle, reported[key] != nil {
            // Changed again after it was reported: its writer pauses longer than the window (a
            // slow upload, a camera writing in bursts). Wait twice as long this time, so one
            // recording does not become one item per pause.
            let last = lengthened[key].flatMap { now &- $0.at < r.settleMaxNs ? $0.settleNs : nil } ?? settle
            settle = min(last * 2, r.settleMaxNs)
            tick = min(max(settle / 4, Self.minTickNs), Self.maxTickNs)
            lengthened[key] = (settle, now)
            logger.notice("changed after it was taken: waiting \(settle / 1_000_000_000) s of quiet before taking it again",
                          metadata: ["rule": "\(r.spec.rule)", "path": "\(path)"])
        }
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
    func processDue(now: UInt64) {
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
}
