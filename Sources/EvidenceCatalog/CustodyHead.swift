import EvidenceBlocking
import EvidenceCore
import EvidenceStore
import Foundation
import Synchronization

/// The custody log's head anchor outside the database: the last event's seq and hash in a
/// file (`custody.head` in the home). Truncating the log's tail inside the database no longer
/// matches it. Refreshed at most every `interval` seconds after events are appended (and on
/// `flush()`): a crash can leave it a few events behind the log, which verification accepts,
/// but never ahead of it. Shared by both catalogs.
final class CustodyHead: Sendable {
    let path: String
    let interval: Double
    /// Reads the log's newest (seq, hash) from the database.
    private let latest: @Sendable () throws(CatalogError) -> (Int64, String)?
    private let state = Mutex(State())

    private struct State {
        var dirty = false
        var scheduled = false
        var lastWrite = Date.distantPast
    }

    init(path: String, interval: Double = 0.2, latest: @escaping @Sendable () throws(CatalogError) -> (Int64, String)?) {
        self.path = path; self.interval = interval; self.latest = latest
    }

    /// After a commit that appended events: write now, or schedule a write within `interval`.
    /// Never throws: the commit it follows stands, and its writer must not be told otherwise (a
    /// worker whose completion also claimed its next job would lose that job). A write that fails
    /// leaves the anchor due, written again at the next commit or `flush()`, whose caller sees why.
    func noteAppended() {
        enum Action { case writeNow, schedule, nothing }
        let action: Action = state.withLock { h in
            h.dirty = true
            if h.scheduled { return .nothing }
            if -h.lastWrite.timeIntervalSinceNow >= interval { return .writeNow }
            h.scheduled = true
            return .schedule
        }
        switch action {
        case .writeNow: try? flush()
        case .schedule:
            // The wait suspends a task; the write (an fsync) runs on the blocking pool, never
            // on libdispatch's global queues, which are only as wide as the CPU count.
            Task { [weak self, interval] in
                try? await Task.sleep(for: .seconds(interval))
                BlockingPool.shared.submit { [weak self] in
                    self?.state.withLock { $0.scheduled = false }
                    try? self?.flush()
                }
            }
        case .nothing: break
        }
    }

    /// Writes the anchor now if events were appended since it was last written.
    func flush() throws(CatalogError) {
        let dirty = state.withLock { h -> Bool in
            let d = h.dirty
            h.dirty = false
            h.lastWrite = Date()
            return d
        }
        guard dirty else { return }
        do {
            guard let (seq, hash) = try latest() else { return }
            try AtomicFile.write(Data("\(seq) \(hash)\n".utf8), to: path, mode: 0o644)
        } catch {
            // Still due: the next commit or flush writes it again.
            state.withLock { $0.dirty = true }
            if let e = error as? CatalogError { throw e }
            throw .database(path: path, detail: "cannot write custody head anchor: \(error)")
        }
    }

    func read() -> (seq: Int64, hash: String)? {
        Self.read(path)
    }

    static func read(_ path: String) -> (seq: Int64, hash: String)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard parts.count == 2, let seq = Int64(parts[0]) else { return nil }
        return (seq, String(parts[1]))
    }
}

/// The custody chain's check, the same for both catalogs: sequence, links, hashes, and the
/// head anchor (`headPath`; nil for an in-memory catalog, which has none).
enum ChainCheck {
    static func verify(events: [CustodyEvent], headPath: String?) -> ChainReport {
        var problems: [ChainReport.Problem] = []
        var prev = CustodyEvent.genesis
        var expectedSeq: Int64 = 1
        let hasher = MerkleHasher()   // one context for every event: a million are re-hashed here
        for e in events {
            if e.seq != expectedSeq {
                problems.append(.init(seq: e.seq, detail: e.seq > expectedSeq
                    ? "events #\(expectedSeq)…#\(e.seq - 1) are missing" : "sequence out of order"))
            }
            if e.prevHash != prev {
                problems.append(.init(seq: e.seq, detail: "previous-hash link broken (event removed, inserted or reordered before it)"))
            }
            let recomputed = Hex.encode(hasher.sha256(e.prevHash + "\n" + e.canonicalBody))
            if recomputed != e.hash {
                problems.append(.init(seq: e.seq, detail: "content does not match its hash (event edited)"))
            }
            prev = e.hash
            expectedSeq = e.seq + 1
        }
        if let headPath {
            if let head = CustodyHead.read(headPath) {
                if let at = events.first(where: { $0.seq == head.seq }) {
                    if at.hash != head.hash {
                        problems.append(.init(seq: head.seq, detail: "differs from the head anchor in \(headPath)"))
                    }
                } else {
                    problems.append(.init(seq: head.seq, detail: "missing: the head anchor records \(head.seq) events but the log ends at #\(events.last?.seq ?? 0) (tail removed)"))
                }
            } else if let last = events.last {
                problems.append(.init(seq: last.seq, detail: "head anchor \(headPath) is missing"))
            }
        }
        return ChainReport(events: events.count, headHash: events.last?.hash ?? CustodyEvent.genesis, problems: problems)
    }

    /// The next event after `last` (nil: the log is empty), hashed into the chain.
    static func next(after last: (seq: Int64, hash: String)?, itemID: Int64?, kind: CustodyEventKind, actor: String,
                     details: [String: String]) throws -> CustodyEvent {
        let seq = (last?.seq ?? 0) + 1
        let prev = last?.hash ?? CustodyEvent.genesis
        let detailsJSON = String(decoding: try CanonicalJSON.encode(details), as: UTF8.self)
        var event = CustodyEvent(seq: seq, itemID: itemID, at: Timestamp.string(Date()), kind: kind.rawValue, actor: actor,
                                 details: detailsJSON, prevHash: prev, hash: "")
        event.hash = SHA256Hasher.hash(CustodyEvent.chainInput(prevHash: prev, body: event.canonicalBody)).hex
        return event
    }
}
