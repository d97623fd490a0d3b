import EvidenceCatalog
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Dispatch
import Foundation

/// RFC 3161 time-stamps of the custody chain's head, kept as `anchors/<seq>-<hash>.tsr`.
///
/// The chain detects any edit inside it, and `custody.head` detects a cut-off tail — unless
/// whoever cut it also rewrote `custody.head`, which sits on the same disk. A token signed by
/// a TSA over the head's hash cannot be made afterwards: once event #seq is anchored, removing
/// or rewriting it (or anything before it) shows in `log verify` and `fsck`. What was appended
/// after the newest anchor is only as safe as the disk until the next one.
public enum ChainAnchors {
    public struct Anchor: Sendable, Codable, Equatable {
        public var seq: Int64
        /// The anchored event's hash: the token's message imprint.
        public var hash: String
        public var file: String
        /// The TSA's signed time (set when the token was read).
        public var genTime: Date?

        /// `<seq>-<hash>.tsr`: the file's name, the same in `anchors/` and in every copy.
        public var name: String { (file as NSString).lastPathComponent }
        /// `<seq>-<hash>.ers` beside it: the anchor's token as the first time-stamp of an RFC 4998
        /// evidence record, renewed before the TSA's certificate expires (`RecordRenewal`).
        public var recordFile: String { String(file.dropLast(4)) + ".ers" }
        /// `<seq>-<hash>.checkpoint` beside it: the custody tree of the first seq events (a C2SP
        /// checkpoint), whose SHA-256 the token is over. Anchors made before checkpoints have none;
        /// their token is over the event's hash itself.
        public var checkpointFile: String { String(file.dropLast(4)) + ".checkpoint" }
        /// The checkpoint's text, when the anchor has one (set when it was read).
        public var checkpoint: String?

        /// What the token must be over, and the checkpoint bytes when there is one. A checkpoint
        /// removed from beside its token, or added beside an older anchor's, changes the imprint
        /// and the token no longer verifies.
        public func imprint() -> (digest: SHA256Digest, checkpoint: Data?)? {
            if let data = FileManager.default.contents(atPath: checkpointFile) {
                return (SHA256Hasher.hash(data), data)
            }
            return SHA256Digest(hex: hash).map { ($0, nil) }
        }

        /// The files of this anchor that exist, the checkpoint first (what a copy must carry).
        public var files: [String] {
            [checkpointFile, file].filter { FileManager.default.fileExists(atPath: $0) }
        }

        /// The renewed record to read: `<seq>-<hash>.ers` beside the token, or in a folder of
        /// copies (where each renewal is its own file, never replaced) the newest
        /// `<seq>-<hash>.r<N>.ers`, N its number of archive time-stamps.
        public var readableRecordFile: String {
            if FileManager.default.fileExists(atPath: recordFile) { return recordFile }
            let dir = (file as NSString).deletingLastPathComponent
            let base = String(name.dropLast(4)) + ".r"
            let versions = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).compactMap { n -> (Int, String)? in
                guard n.hasPrefix(base), n.hasSuffix(".ers"), let k = Int(n.dropFirst(base.count).dropLast(4)), k > 0 else { return nil }
                return (k, dir + "/" + n)
            }
            return versions.max { $0.0 < $1.0 }?.1 ?? recordFile
        }

        /// What a copy of this anchor holds, as (local file, name in the copies' folder): the
        /// checkpoint, the token, and the renewed record, if any, named for its number of
        /// archive time-stamps (a renewal adds a file; a copy is never replaced).
        public var copies: [(local: String, remote: String)] {
            var out = files.map { ($0, ($0 as NSString).lastPathComponent) }
            let version = recordVersion
            if version > 0 { out.append((recordFile, String(name.dropLast(4)) + ".r\(version).ers")) }
            return out
        }

        /// The number of archive time-stamps of this anchor's renewed record (0: not renewed).
        public var recordVersion: Int {
            guard let data = FileManager.default.contents(atPath: recordFile), let record = try? EvidenceRecord(der: [UInt8](data)) else { return 0 }
            return record.chains.reduce(0) { $0 + $1.count }
        }
    }

    public static func directory(_ home: EvidenceHome) -> String { home.path + "/anchors" }

    /// The anchors on disk, oldest first (names that are not `<seq>-<64 hex>.tsr` are ignored).
    public static func list(_ home: EvidenceHome) -> [Anchor] { list(directory: directory(home)) }

    /// The anchors in `dir`, oldest first.
    public static func list(directory dir: String) -> [Anchor] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.compactMap { name -> Anchor? in
            guard name.hasSuffix(".tsr") else { return nil }
            let parts = name.dropLast(4).split(separator: "-")
            guard parts.count == 2, let seq = Int64(parts[0]), parts[1].count == 64,
                  SHA256Digest(hex: String(parts[1])) != nil else { return nil }
            return Anchor(seq: seq, hash: String(parts[1]), file: dir + "/" + name)
        }.sorted { $0.seq < $1.seq }
    }

    /// The newest anchor the log reaches (its seq at most the head's), by name: what `log anchor`
    /// and `evidence run` copy to `anchor_archive`. A file named beyond the head (planted, or left
    /// by a cut log) is never taken for it.
    public static func newest(_ home: EvidenceHome) -> Anchor? {
        guard let head = (try? home.catalog.lastEvent()) ?? nil else { return nil }
        return list(home).last { $0.seq <= head.seq }
    }

    /// What `evidence status` and `/metrics` show of the anchors.
    public struct Summary: Sendable, Codable, Equatable {
        public var count: Int
        /// The custody event the newest anchor covers; nil without anchors.
        public var newestSeq: Int64?
        /// Seconds since the newest anchor was written (its file, saved as the TSA answered).
        public var newestAgeSeconds: Double?
        /// Custody events after the newest anchor: not yet covered by a time-stamp.
        public var eventsSinceNewest: Int64
    }

    /// The anchors in `dir` against a custody log whose newest event is `headSeq`. A file named
    /// beyond the head (planted, or left by a cut log) is not the newest anchor: only one the log
    /// reaches counts. `headIsRecord`: the newest event is the `anchored` record of the newest
    /// anchor, so it needs no anchor of its own.
    public static func summary(directory dir: String, headSeq: Int64, headIsRecord: Bool = false, now: Date = Date()) -> Summary {
        let all = list(directory: dir)
        guard let newest = all.last(where: { $0.seq <= headSeq }) else {
            return Summary(count: all.count, eventsSinceNewest: max(0, headSeq))
        }
        let written = (try? FileManager.default.attributesOfItem(atPath: newest.file))?[.modificationDate] as? Date
        let record: Int64 = headIsRecord && headSeq == newest.seq + 1 ? 1 : 0
        return Summary(count: all.count, newestSeq: newest.seq, newestAgeSeconds: written.map { max(0, now.timeIntervalSince($0)) },
                       eventsSinceNewest: max(0, headSeq - newest.seq - record))
    }

    /// Whether `event` is the `anchored` record of an anchor over the event just before it.
    public static func isRecordOfPrevious(_ event: CustodyEvent) -> Bool {
        guard event.is(.anchored) else { return false }
        let d = CustodyCrossCheck.details(event)
        return d["hash"] == event.prevHash && d["seq"] == String(event.seq - 1)
    }

    public enum AnchorError: Error, CustomStringConvertible {
        case notary(NotaryError)
        case catalog(CatalogError)
        case write(String)
        public var description: String {
            switch self {
            case .notary(let e): return "cannot time-stamp the custody head: \(e.message)"
            case .catalog(let e): return "\(e)"
            case .write(let s): return "cannot save the anchor: \(s)"
            }
        }
    }

    /// Time-stamps the current head unless the newest anchor already covers it; returns the
    /// new anchor, or nil when there was nothing new. The token is verified before it is kept
    /// (imprint, nonce, and signature when the notary has a `ca_file`).
    public static func anchor(_ home: EvidenceHome, tsa: TSAClient, origin: String? = nil) async throws(AnchorError) -> Anchor? {
        let head: CustodyEvent?
        do { head = try home.catalog.lastEvent() } catch { throw .catalog(error) }
        guard let head, SHA256Digest(hex: head.hash) != nil else { return nil }
        // Already anchored only by a token for this very head that verifies: a file planted with
        // a far-future sequence number (or a forged one for the head) must not stop anchoring.
        // The head may also be the record of the anchor over the event before it.
        func verifies(seq: Int64, hash: String) -> Bool {
            guard let current = list(home).last(where: { $0.seq == seq && $0.hash == hash }), let imprint = current.imprint(),
                  let data = FileManager.default.contents(atPath: current.file) else { return false }
            return (try? TimestampVerifier.verify(response: data, digest: imprint.digest, trust: tsa.trust)) != nil
        }
        if verifies(seq: head.seq, hash: head.hash) { return nil }
        if isRecordOfPrevious(head), verifies(seq: head.seq - 1, hash: head.prevHash) { return nil }
        // The checkpoint of the log up to the head: the token is over its bytes.
        let checkpoint = try Self.checkpoint(home, through: head, origin: origin)
        let bytes = checkpoint.bytes
        let token: TimestampToken
        do { token = try await tsa.timestamp(SHA256Hasher.hash(bytes)).token } catch { throw .notary(error) }
        let dir = directory(home)
        let base = dir + "/" + String(format: "%012lld", head.seq) + "-" + head.hash
        let path = base + ".tsr"
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            // The checkpoint first: a token without it would not verify, one without a token is ignored.
            try AtomicFile.write(bytes, to: base + ".checkpoint", mode: 0o444)
            try AtomicFile.write(token.response, to: path, mode: 0o444)
        } catch {
            throw .write("\(error)")
        }
        let anchor = Anchor(seq: head.seq, hash: head.hash, file: path, genTime: token.genTime, checkpoint: checkpoint.text)
        // Recorded in the log itself, so the next anchor covers the fact that this one exists.
        var details = ["anchor": anchor.name, "seq": String(head.seq), "hash": head.hash]
        details["gen_time"] = Timestamp.string(token.genTime)
        details["checkpoint"] = SHA256Hasher.hash(bytes).hex
        details["root"] = Data(checkpoint.root).base64EncodedString()
        do { try home.catalog.appendEvent(itemID: nil, kind: .anchored, details: details) } catch { throw .catalog(error) }
        return anchor
    }

    /// The checkpoint of the custody tree through `head` (every event up to it, with no gap).
    static func checkpoint(_ home: EvidenceHome, through head: CustodyEvent, origin: String?) throws(AnchorError) -> Checkpoint {
        let hashes: [(seq: Int64, hash: String)]
        do { hashes = try home.catalog.eventHashes(through: head.seq) } catch { throw .catalog(error) }
        var tree = MerkleTree.Accumulator()
        let hasher = MerkleHasher()
        if let bad = forEachLeafOfWholeLog(hashes, { tree.append(eventHash: $0, hasher: hasher) }) {
            throw .write("the custody log is not whole (event #\(bad) is missing or damaged): not anchored; run `evidence log verify`")
        }
        guard Int64(tree.count) == head.seq else {
            throw .write("the custody log has \(tree.count) events up to #\(head.seq): not anchored; run `evidence log verify`")
        }
        return Checkpoint(origin: origin ?? defaultOrigin(firstEventHash: hashes.first?.hash ?? head.hash),
                          size: tree.count, root: tree.root(hasher: hasher))
    }

    /// Feeds `body` each event's 32-byte hash, in order, for a tree that must be the log's own:
    /// events #1, #2, … without a gap, every hash 64 hex digits. Returns the first seq where that
    /// fails (nil: all fed). What an anchor stamps and a bundle proves from.
    static func forEachLeafOfWholeLog(_ hashes: [(seq: Int64, hash: String)], _ body: ([UInt8]) -> Void) -> Int64? {
        for (i, h) in hashes.enumerated() {
            guard h.seq == Int64(i + 1), let d = Hex.decode(h.hash), d.count == 32 else { return Int64(i + 1) }
            body(d)
        }
        return nil
    }

    /// An event's hash as the tree's input when the log is only being checked: a hash that is not
    /// 64 hex digits stands as zeros, keeping every later leaf in its place (the chain check names it).
    public static func leafInput(_ hash: String) -> [UInt8] {
        Hex.decode(hash).flatMap { $0.count == 32 ? $0 : nil } ?? [UInt8](repeating: 0, count: 32)
    }

    /// The checkpoints' origin line when `[custody] origin` does not name the log: unique to this
    /// log, from its first event's hash (the same on every node of one catalog).
    public static func defaultOrigin(firstEventHash: String) -> String {
        "evidence-custody/" + firstEventHash.prefix(32)
    }

    public struct Check: Sendable, Codable {
        public var anchors: Int
        public var newest: Anchor?
        /// Whether the tokens' signatures were checked against a CA (the `[custody]` TSA's `ca_file`).
        public var signaturesChecked: Bool
        public var problems: [ChainReport.Problem]
    }

    /// Every anchor against the chain: its token must carry the anchored hash (and verify
    /// against `trust` when given; nil checks the imprint only and says so in `signaturesChecked`),
    /// and event #seq must still exist with that hash.
    /// `more` are folders of copies (`evidence-anchors/` fetched from the `anchor_archive`
    /// account): their anchors count as well, so deleting `anchors/` here hides nothing.
    ///
    /// Each anchor made is recorded by an `anchored` event; an anchor so recorded that is not
    /// here (nor among the copies), or no longer verifies, is a gap in the sequence.
    /// The newest anchor is the newest that verifies and whose event the log has: a file named
    /// beyond the head counts for nothing (and is reported when it does not verify).
    ///
    /// With `every` (the `[custody] anchor_every` of a set-up that anchors), anchors are expected:
    /// none that verifies while the log has events, or a newest one older than `every` plus a
    /// margin with events after it, is a problem too (anchors deleted, or anchoring stopped).
    /// `at`: the tokens' certificates are checked as of that date (`log verify --at`). An anchor
    /// whose own token no longer verifies (its TSA certificate expired) still counts when its
    /// renewed evidence record (`<seq>-<hash>.ers`, first time-stamp the same token) verifies.
    public static func check(_ home: EvidenceHome, events: [CustodyEvent], trust: TSATrust?, more: [String] = [],
                             every: Double? = nil, now: Date = Date(), at: Date? = nil) -> Check {
        var seen = Set<String>()
        let anchors = ([directory(home)] + more).flatMap { list(directory: $0) }
            .filter { seen.insert($0.name).inserted }
            .sorted { $0.seq < $1.seq }
        // The hash the log has at a seq: found by binary search in the events, sorted by seq (a
        // dictionary of a million copied events cost more than the rest of this check).
        func hashAt(_ seq: Int64) -> String? {
            var lo = 0, hi = events.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if events[mid].seq < seq { lo = mid + 1 } else { hi = mid }
            }
            return lo < events.count && events[lo].seq == seq ? events[lo].hash : nil
        }
        var problems: [ChainReport.Problem] = []
        var newest: Anchor?
        var verified = Set<String>()
        // The custody tree (RFC 9162) over the events as they are: each checkpoint's root must be
        // the tree's at its size, and consecutive checkpoints must be consistent (§2.1.4).
        let hasher = MerkleHasher()
        var tree = MerkleTree()
        if anchors.contains(where: { FileManager.default.fileExists(atPath: $0.checkpointFile) }) {
            for e in events { tree.append(eventHash: leafInput(e.hash), hasher: hasher) }
        }
        var previousCheckpoint: Checkpoint?
        for var a in anchors {
            let name = a.name
            guard let data = FileManager.default.contents(atPath: a.file), let imprint = a.imprint() else {
                problems.append(.init(seq: a.seq, detail: "anchor \(name) cannot be read"))
                continue
            }
            let digest = imprint.digest
            var checkpoint: Checkpoint?
            if let bytes = imprint.checkpoint {
                do throws(Checkpoint.FormatError) {
                    let c = try Checkpoint.parse(bytes)
                    guard Int64(c.size) == a.seq else {
                        throw Checkpoint.FormatError("its tree size \(c.size) is not the anchor's event #\(a.seq)")
                    }
                    checkpoint = c
                    a.checkpoint = c.text
                } catch {
                    problems.append(.init(seq: a.seq, detail: "anchor \(name): \((a.checkpointFile as NSString).lastPathComponent): \(error)"))
                    continue
                }
            }
            do {
                let token: TimestampToken
                if let trust {
                    token = try TimestampVerifier.verify(response: data, digest: digest, trust: trust, at: at)
                } else {
                    token = try TimestampVerifier.inspect(response: data, digest: digest)
                }
                a.genTime = token.genTime
            } catch {
                guard let trust, let record = FileManager.default.contents(atPath: a.readableRecordFile) else {
                    problems.append(.init(seq: a.seq, detail: "anchor \(name) does not verify: \(error.message)"))
                    continue
                }
                do throws(TimestampError) {
                    let parsed = try EvidenceRecord(der: [UInt8](record))
                    guard parsed.chains.first?.first?.token == (try EvidenceRecord.token(ofResponse: data)) else {
                        throw TimestampError(.malformedResponse, "its first time-stamp is not the anchor's token")
                    }
                    a.genTime = try EvidenceRecordVerifier.verify(record: record, digest: digest, trust: trust, at: at).tokens[0].genTime
                } catch let renewed {
                    problems.append(.init(seq: a.seq, detail: "anchor \(name) does not verify: \(error.message); nor does its renewal "
                                          + "\((a.readableRecordFile as NSString).lastPathComponent): \(renewed.message)"))
                    continue
                }
            }
            let stamped = a.genTime.map { " (time-stamped \(Timestamp.string($0)))" } ?? ""
            var treeAgrees = true
            if let logged = hashAt(a.seq) {
                if logged != a.hash {
                    problems.append(.init(seq: a.seq, detail: "differs from anchor \(name)\(stamped): the event or one before it was rewritten"))
                }
            } else {
                problems.append(.init(seq: a.seq, detail: "missing, but anchor \(name)\(stamped) proves the log had it: the log was cut or rewritten"))
            }
            if let checkpoint {
                if checkpoint.size <= tree.count, tree.root(size: checkpoint.size, hasher: hasher) == checkpoint.root {
                    // Append-only between anchors, shown as an auditor holding only the checkpoints would.
                    if let old = previousCheckpoint, old.size > 0, old.size <= checkpoint.size {
                        let proof = tree.consistencyProof(old: old.size, new: checkpoint.size, hasher: hasher)
                        if !MerkleTree.verifyConsistency(old: old.size, new: checkpoint.size, oldRoot: old.root, newRoot: checkpoint.root,
                                                         proof: proof, hasher: hasher) {
                            problems.append(.init(seq: a.seq, detail: "the checkpoint of anchor \(name) is not consistent with the one "
                                                  + "of #\(old.size) (RFC 9162 §2.1.4): the log was rewritten between them"))
                        }
                    }
                    previousCheckpoint = checkpoint
                } else {
                    treeAgrees = false
                    problems.append(.init(seq: a.seq, detail: "the custody tree of events #1…#\(checkpoint.size) is not the root that anchor "
                                          + "\(name)\(stamped) time-stamped: an event up to #\(checkpoint.size) was edited, removed or inserted"))
                }
            }
            if hashAt(a.seq) == a.hash, treeAgrees { newest = a; verified.insert(a.name) }
        }
        // Every anchor the log records having made must still be here (or among the copies): one
        // deleted from between others is a gap in the sequence, whatever is left around it.
        for e in events where e.is(.anchored) {
            guard let name = CustodyCrossCheck.details(e)["anchor"], !verified.contains(name) else { continue }
            let present = anchors.contains { $0.name == name }
            problems.append(.init(seq: e.seq, detail: "records anchor \(name), which "
                                  + (present ? "does not verify against the log" : "is missing from anchors/")
                                  + ": a gap in the anchor sequence (anchors were deleted or replaced)"))
        }
        if let every, let lastEvent = events.last {
            // The record of the newest anchor needs no anchor of its own.
            let last = newest.map { n in isRecordOfPrevious(lastEvent) && lastEvent.seq == n.seq + 1 } == true
                ? events[events.count - 2] : lastEvent
            let margin = max(600, every / 2)
            if newest == nil {
                problems.append(.init(seq: last.seq, detail: "no anchor verifies although [custody] is configured: the anchors were "
                                      + "deleted or never made (evidence run anchors the head; `evidence log anchor` does it now)"))
            } else if let newest, let stamped = newest.genTime, last.seq > newest.seq,
                      now.timeIntervalSince(stamped) > every + margin {
                problems.append(.init(seq: newest.seq, detail: "the newest anchor covers event #\(newest.seq) and was time-stamped "
                                      + "\(Timestamp.string(stamped)), more than anchor_every plus \(Int(margin)) s ago; the "
                                      + "\(last.seq - newest.seq) event(s) since are not covered: anchoring stopped "
                                      + "(`evidence log anchor` covers them now)"))
            }
        }
        return Check(anchors: anchors.count, newest: newest, signaturesChecked: trust != nil, problems: problems)
    }
}

extension EvidenceHome {
    /// The custody chain checked, with its time-stamped anchors checked against it, and the
    /// catalog's rows and the store's objects against the events in both directions
    /// (`CustodyCrossCheck`: every row has its event, every recorded row and object is still
    /// there as recorded); the anchors', rows' and objects' problems are part of the returned
    /// report. `trust` verifies the tokens' signatures (the `[custody]` TSA's `ca_file`); without
    /// it only their imprints are checked.
    public func verifyCustody(trust: TSATrust?, moreAnchors: [String] = [], anchorEvery: Double? = nil, at: Date? = nil) throws(CatalogError)
        -> (chain: ChainReport, anchors: ChainAnchors.Check) {
        let events = try catalog.allEvents()
        // Three independent reads of the same events, side by side (a million events take seconds
        // each): the chain's hashes, the anchors' tokens and tree, the catalog's rows.
        final class Results: @unchecked Sendable {   // each slot written by one iteration, read after all returned
            var chain: ChainReport?
            var anchors: ChainAnchors.Check?
            var rows: Result<[ChainReport.Problem], CatalogError>?
        }
        let out = Results()
        DispatchQueue.concurrentPerform(iterations: 3) { i in
            switch i {
            case 0: out.chain = catalog.verifyChain(events: events)
            case 1: out.anchors = ChainAnchors.check(self, events: events, trust: trust, more: moreAnchors, every: anchorEvery, at: at)
            default:
                out.rows = Result { () throws(CatalogError) -> [ChainReport.Problem] in
                    let rows = try custodyRows()
                    let log = CustodyCrossCheck.Log(events)
                    return CustodyCrossCheck.check(rows: rows, log: log,
                                                   objects: storedObjects(CustodyCrossCheck.expectedObjects(rows: rows, log: log)))
                }
            }
        }
        guard var chain = out.chain, let anchors = out.anchors, let rows = out.rows else { fatalError("concurrentPerform skipped an iteration") }
        chain.problems += anchors.problems
        chain.problems += try rows.get()
        return (chain, anchors)
    }

    /// Every row `CustodyCrossCheck` compares with the events.
    public func custodyRows() throws(CatalogError) -> CustodyCrossCheck.Rows {
        CustodyCrossCheck.Rows(items: try catalog.allItems(), sources: try catalog.allSources(), proofs: try catalog.allProofs(),
                               certificates: try catalog.allCertificates(), archived: try catalog.allArchivedFiles(),
                               links: try catalog.allSharedLinks())
    }

    /// What the store says of each expected object: its size, missing, or why it could not be asked.
    func storedObjects(_ expected: [CustodyCrossCheck.ExpectedObject]) -> [SHA256Digest: CustodyCrossCheck.StoredObject] {
        var out: [SHA256Digest: CustodyCrossCheck.StoredObject] = [:]
        for o in expected where out[o.digest] == nil {
            do {
                let size = try store.objectSize(o.digest)
                out[o.digest] = size.map { CustodyCrossCheck.StoredObject.present(size: $0) } ?? .missing
            } catch {
                out[o.digest] = .unreadable("\(error)")
            }
        }
        return out
    }
}
