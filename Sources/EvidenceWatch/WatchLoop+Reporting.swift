import Glibc
import Logging

/// What the loop announces, and the bounds on what it remembers. Split from WatchLoop.swift by its sections;
/// all of it runs on the loop's one thread.
extension WatchLoop {
    func report(rule: Int, key: Key, path: String, identity: FileIdentity) {
        if reported[key] == identity { return }
        reported[key] = identity
        if lengthened[key] != nil { lengthened[key]!.at = monotonicNanos() }   // its next change counts from now
        logger.debug("settled", metadata: ["rule": "\(rules[rule].spec.rule)", "path": "\(path)", "size": "\(identity.size)"])
        continuation.yield(.settled(SettledFile(rule: rules[rule].spec.rule, path: path, identity: identity)))
    }

    func reject(_ key: Key, displayPath: String, reason: String) {
        fullScans[key.rule]?.seen.insert(key)
        guard rejected.insert(key).inserted else { return }
        logger.info("not taken: \(reason)", metadata: ["rule": "\(rules[key.rule].spec.rule)", "path": "\(displayPath)"])
        continuation.yield(.rejected(rule: rules[key.rule].spec.rule, path: displayPath, reason: reason))
    }

    func forget(_ key: Key) {
        candidates[key] = nil
        reported[key] = nil
        lengthened[key] = nil
        rejected.remove(key)
    }

    func forget(rule: Int, below prefix: [UInt8]) {
        for k in reported.keys where k.rule == rule && isSameOrBelow(k.path, prefix) { reported[k] = nil }
        for k in lengthened.keys where k.rule == rule && isSameOrBelow(k.path, prefix) { lengthened[k] = nil }
        for k in candidates.keys where k.rule == rule && isSameOrBelow(k.path, prefix) { candidates[k] = nil }
        for k in rejected where k.rule == rule && isSameOrBelow(k.path, prefix) { rejected.remove(k) }
    }

    func forgetAll(rule: Int) {
        for k in reported.keys where k.rule == rule { reported[k] = nil }
        for k in lengthened.keys where k.rule == rule { lengthened[k] = nil }
        for k in candidates.keys where k.rule == rule { candidates[k] = nil }
        for k in rejected where k.rule == rule { rejected.remove(k) }
    }

    /// Path for messages: exact when valid UTF-8, invalid bytes shown as U+FFFD otherwise.
    func display(_ path: [UInt8]) -> String {
        String(decoding: path, as: UTF8.self)
    }
}
