import EvidenceCatalog
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation

/// The part of a bundle that lets an auditor check the item's custody from the bundle alone:
/// the newest time-stamped checkpoint of the custody tree that covers the item's events, its
/// token, and one C2SP inclusion proof per covered event (at most ⌈log₂ n⌉ hashes each).
///
/// ```
/// custody/checkpoint            the custody tree at size S (C2SP tlog-checkpoint body)
/// custody/checkpoint.tsr        RFC 3161 token over SHA-256 of custody/checkpoint
/// custody/checkpoint-tsa.crt    the certificate that signed it (for -untrusted; not trusted)
/// custody/<seq>.tlog-proof      event <seq>'s inclusion proof (C2SP tlog-proof, index seq-1)
/// custody/check.py              python3, hashlib only: every event hash and proof recomputed
/// ```
public enum BundleCustody {
    public struct Anchored: Codable, Sendable, Equatable {
        /// The checkpoint's origin line, tree size and root (base64, as in the checkpoint).
        public var origin: String
        public var size: Int64
        public var root: String
        /// The anchor it comes from (`<seq>-<hash>.tsr` in the home's `anchors/`).
        public var anchor: String
        /// The token's time, as the token says.
        public var timeStamped: Date?
        /// Whether the token brought its signer's certificate (`custody/checkpoint-tsa.crt`).
        public var signerCertificate: Bool
    }

    struct Made {
        var anchored: Anchored
        var files: [(path: String, role: String, data: Data)]
    }

    /// The files for `events` (one item's, oldest first) from the newest anchor whose checkpoint
    /// covers the first of them; nil when no anchor with a checkpoint does yet. The checkpoint is
    /// checked against the log before it is used: a log that no longer has the tree an anchor
    /// stamped fails the bundle rather than ship proofs that cannot verify.
    static func make(home: EvidenceHome, events: [CustodyEvent]) throws -> Made? {
        guard let first = events.first, let head = try home.catalog.lastEvent() else { return nil }
        let candidates = ChainAnchors.list(home).reversed().filter { $0.seq <= head.seq && $0.seq >= first.seq }
        for anchor in candidates {
            guard let bytes = FileManager.default.contents(atPath: anchor.checkpointFile),
                  let checkpoint = try? Checkpoint.parse(bytes), Int64(checkpoint.size) == anchor.seq,
                  let token = FileManager.default.contents(atPath: anchor.file),
                  let stamped = try? TimestampVerifier.inspect(response: token, digest: SHA256Hasher.hash(bytes)) else { continue }
            let hashes = try home.catalog.eventHashes(through: anchor.seq)
            let hasher = MerkleHasher()
            var tree = MerkleTree()
            if let bad = ChainAnchors.forEachLeafOfWholeLog(hashes, { tree.append(eventHash: $0, hasher: hasher) }) {
                throw BundleError.io(home.catalog.location, "custody event #\(bad) is missing or damaged: run `evidence log verify`")
            }
            guard tree.count == checkpoint.size, tree.root(size: checkpoint.size, hasher: hasher) == checkpoint.root else {
                throw BundleError.io(anchor.checkpointFile, "the custody log no longer has the tree this anchor time-stamped: run `evidence log verify`")
            }
            var files: [(String, String, Data)] = [("custody/checkpoint", "custody-checkpoint", bytes),
                                                   ("custody/checkpoint.tsr", "custody-anchor", token)]
            let signer = TSACertificates.signerPEM(response: token)
            if let signer { files.append(("custody/checkpoint-tsa.crt", "custody-anchor-signer", signer)) }
            for e in events where e.seq <= anchor.seq {
                let proof = TlogProof(index: Int(e.seq - 1), hashes: tree.inclusionProof(index: Int(e.seq - 1), size: checkpoint.size, hasher: hasher),
                                      checkpoint: bytes)
                files.append(("custody/\(e.seq).tlog-proof", "custody-proof", proof.bytes))
            }
            files.append(("custody/check.py", "custody-script", Data(script.utf8)))
            return Made(anchored: Anchored(origin: checkpoint.origin, size: Int64(checkpoint.size),
                                           root: Data(checkpoint.root).base64EncodedString(), anchor: anchor.name,
                                           timeStamped: stamped.genTime, signerCertificate: signer != nil),
                        files: files)
        }
        return nil
    }

    /// The bundle's custody proofs, checked from the bundle alone: the checkpoint is the one the
    /// manifest names, its token verifies against `trust` over the checkpoint's SHA-256, and every
    /// event up to its size has a proof that leads from the event's leaf to its root. A bundle of
    /// the current format without a checkpoint passes with a note that nothing vouches for its events.
    static func verify(dir: String, manifest m: BundleManifest, events: [CustodyEvent], listed: [[UInt8]: String],
                       trust: TSATrust, at: Date?) -> (checks: [BundleVerifier.Check], notes: [String]) {
        func read(_ rel: String) -> Data? {
            listed[Array(rel.utf8)] == nil ? nil : BundleFiles.readRegular(dir + "/" + rel)
        }
        guard let c = m.custodyCheckpoint else {
            let stray = listed.keys.filter { $0.starts(with: Array("custody/".utf8)) }
            if !stray.isEmpty {
                return ([.init(check: "custody proofs", ok: false, detail: "custody/ holds files but the manifest names no checkpoint")], [])
            }
            // Not a failure (a home without [custody] anchors nothing), but never silent.
            return ([], m.format == BundleManifest.formatName
                    ? ["no time-stamped checkpoint of the custody log covers these custody events: their hashes recompute, but nothing "
                       + "outside the bundle vouches for them (the home has no [custody] anchor_tsa, or the proofs were removed)"] : [])
        }
        var notes: [String] = []
        var checks: [BundleVerifier.Check] = []
        guard let bytes = read("custody/checkpoint") else {
            return ([.init(check: "custody checkpoint", ok: false, detail: "custody/checkpoint missing")], notes)
        }
        let checkpoint: Checkpoint
        do { checkpoint = try Checkpoint.parse(bytes) } catch {
            return ([.init(check: "custody checkpoint", ok: false, detail: "custody/checkpoint: \(error)")], notes)
        }
        let root64 = Data(checkpoint.root).base64EncodedString()
        // Bytes, not Unicode equivalence: an NFD twin of the origin is another log's name.
        guard Array(checkpoint.origin.utf8) == Array(c.origin.utf8), Int64(checkpoint.size) == c.size, root64 == c.root else {
            return ([.init(check: "custody checkpoint", ok: false, detail: "custody/checkpoint (\(BundleVerifier.shown(checkpoint.origin)), "
                          + "\(checkpoint.size), \(root64)) is not the one the manifest names (\(BundleVerifier.shown(c.origin)), \(c.size), "
                          + "\(BundleVerifier.shown(c.root)))")], notes)
        }
        // What VERIFY.md says of the anchor must be what the files say: its name, time and signer.
        let anchorName = String(format: "%012lld", Int64(checkpoint.size)) + "-"
        if !(c.anchor.hasPrefix(anchorName) && c.anchor.hasSuffix(".tsr") && c.anchor.utf8.count == anchorName.utf8.count + 68
             && SHA256Digest(hex: String(c.anchor.dropFirst(anchorName.count).dropLast(4))) != nil) {
            return ([.init(check: "custody checkpoint", ok: false,
                           detail: "the manifest's anchor \(BundleVerifier.shown(c.anchor)) is not the name of an anchor of event #\(checkpoint.size)")], notes)
        }
        if c.signerCertificate != (listed[Array("custody/checkpoint-tsa.crt".utf8)] != nil) {
            return ([.init(check: "custody checkpoint", ok: false,
                           detail: "the manifest says custody/checkpoint-tsa.crt is \(c.signerCertificate ? "" : "not ")there; it is "
                               + (c.signerCertificate ? "not" : ""))], notes)
        }
        // The token: over exactly these bytes, and signed by a TSA the auditor trusts.
        let imprint = SHA256Hasher.hash(bytes)
        if let token = read("custody/checkpoint.tsr") {
            let claimed = try? TimestampVerifier.inspect(response: token, digest: imprint)
            if let claimed, c.timeStamped.map({ abs($0.timeIntervalSince(claimed.genTime)) > 0.001 }) ?? true {
                checks.append(.init(check: "custody checkpoint time-stamped", ok: false,
                                    detail: "the manifest says \(c.timeStamped.map(Timestamp.string) ?? "no time"), the token "
                                        + "\(Timestamp.string(claimed.genTime)): VERIFY.md states a time the token does not"))
            }
            if trust.isEmpty {
                let claim = claimed.map { "it claims \(Timestamp.string($0.genTime)), but " } ?? ""
                checks.append(.init(check: "custody checkpoint time-stamped", ok: false,
                                    detail: "not verified: no trust anchor from outside the bundle; \(claim)\(BundleVerifier.noAnchorAdvice)",
                                    unproven: true))
            } else {
                do {
                    let t = try TimestampVerifier.verify(response: token, digest: imprint, trust: trust, at: at)
                    checks.append(.init(check: "custody checkpoint time-stamped", ok: true,
                                        detail: "custody/checkpoint.tsr: events #1…#\(checkpoint.size) of \(BundleVerifier.shown(checkpoint.origin)) "
                                            + "at \(Timestamp.string(t.genTime)), serial \(t.serial), verified against \(trust.summary)"))
                } catch {
                    checks.append(.init(check: "custody checkpoint time-stamped", ok: false, detail: "custody/checkpoint.tsr: not verified: \(error.message)"))
                }
            }
        } else {
            checks.append(.init(check: "custody checkpoint time-stamped", ok: false, detail: "custody/checkpoint.tsr missing"))
        }
        // Each event up to the checkpoint's size: its proof, from its own leaf to the root.
        let hasher = MerkleHasher()
        var bad: [String] = []
        var covered = 0
        for e in events where e.seq <= Int64(checkpoint.size) {
            guard e.seq >= 1 else { bad.append("event #\(e.seq) has no place in a log (events are numbered from 1)"); continue }
            let rel = "custody/\(e.seq).tlog-proof"
            guard let data = read(rel) else { bad.append("\(rel) missing"); continue }
            do throws(Checkpoint.FormatError) {
                let proof = try TlogProof.parse(data)
                guard proof.index == Int(e.seq - 1) else { throw Checkpoint.FormatError("index \(proof.index), not \(e.seq - 1)") }
                guard proof.checkpoint == bytes else { throw Checkpoint.FormatError("its checkpoint is not custody/checkpoint") }
                guard let h = Hex.decode(e.hash), h.count == 32,
                      MerkleTree.verifyInclusion(index: proof.index, size: checkpoint.size, leaf: hasher.leaf(h), proof: proof.hashes,
                                                 root: checkpoint.root, hasher: hasher) else {
                    throw Checkpoint.FormatError("event #\(e.seq) is not in the checkpoint's tree (the proof does not lead to its root)")
                }
                covered += 1
            } catch {
                bad.append("\(rel): \(error)")
            }
        }
        let laterEvents = events.filter { $0.seq > Int64(checkpoint.size) }
        let later = laterEvents.count
        if later > 0 {
            // Honest after a portal download (its own access event comes after), but it is also
            // what an older checkpoint swapped in would show: say which events it leaves out.
            notes.append("custody events after the checkpoint (#\(checkpoint.size)) are not covered by it: "
                         + laterEvents.prefix(10).map { "#\($0.seq) \(BundleVerifier.shown($0.kind))" }.joined(separator: ", ")
                         + (later > 10 ? ", …" : ""))
        }
        if let script = read("custody/check.py"), script == Data(Self.script.utf8) {} else {
            bad.append("custody/check.py is missing or not the script this software writes: do not run it")
        }
        checks.append(.init(check: "custody events in the checkpoint", ok: bad.isEmpty,
                            detail: bad.isEmpty ? "\(covered) event(s) proven in the tree of \(checkpoint.size) (RFC 9162 inclusion proofs)"
                                + (later > 0 ? "; \(later) newer event(s) after the checkpoint, not covered" : "")
                                : bad.map(BundleVerifier.shown).joined(separator: "; ")))
        return (checks, notes)
    }

    /// `custody/check.py`: the same for every bundle (nothing of the item is in it).
    static let script = #"""
    #!/usr/bin/env python3
    # Usage (in the bundle's folder): python3 custody/check.py
    # Recomputes each custody event's hash from custody.jsonl and checks its inclusion proof
    # (custody/<seq>.tlog-proof, C2SP tlog-proof) against custody/checkpoint, the custody log's
    # Merkle tree (RFC 9162 §2.1) at the size an RFC 3161 token time-stamped. Uses only the
    # standard library. Then verify that token over custody/checkpoint with `openssl ts -verify`.
    import base64, hashlib, json, sys

    def sha256(data): return hashlib.sha256(data).digest()

    with open("custody/checkpoint", "rb") as f:
        checkpoint = f.read()
    lines = checkpoint.decode("utf-8").split("\n")
    def canonical(text):
        return text.isascii() and text.isdigit() and str(int(text)) == text
    if len(lines) != 4 or lines[3] != "" or not canonical(lines[1]):
        sys.exit("custody/checkpoint is not a checkpoint (origin, size, base64 root)")
    origin, size, root = lines[0], int(lines[1]), base64.b64decode(lines[2], validate=True)
    if len(root) != 32:
        sys.exit("custody/checkpoint: the root is not 32 bytes")

    def included(index, leaf, proof):
        # RFC 9162 §2.1.3.2
        if index < 0 or index >= size or any(len(p) != 32 for p in proof): return False
        fn, sn, r = index, size - 1, leaf
        for p in proof:
            if sn == 0: return False
            if fn & 1 or fn == sn:
                r = sha256(b"\x01" + p + r)
                if not fn & 1:
                    while fn and not fn & 1:
                        fn >>= 1; sn >>= 1
            else:
                r = sha256(b"\x01" + r + p)
            fn >>= 1; sn >>= 1
        return sn == 0 and r == root

    failed, covered, later = 0, 0, 0
    with open("custody.jsonl", "rb") as f:
        for n, line in enumerate(f, 1):
            e = json.loads(line)
            if type(e["seq"]) is not int or e["seq"] < 1:
                print("line %d: not an event of the log" % n); failed += 1; continue
            # The bytes an event's hash covers (UTF-8; details is the JSON text exactly as written).
            body = "evidence-custody-v1\n%d\n%s\n%s\n%s\n%s\n%s" % (
                e["seq"], e["at"], "-" if e.get("itemID") is None else str(e["itemID"]), e["kind"], e["actor"], e["details"])
            h = sha256((e["prevHash"] + "\n" + body).encode("utf-8"))
            if h.hex() != e["hash"]:
                print("event #%d: content hashes to %s, the event says %s" % (e["seq"], h.hex(), e["hash"])); failed += 1; continue
            if e["seq"] > size:
                later += 1; continue
            try:
                with open("custody/%d.tlog-proof" % e["seq"], "rb") as pf:
                    text = pf.read()
            except OSError:
                print("event #%d: custody/%d.tlog-proof is missing" % (e["seq"], e["seq"])); failed += 1; continue
            head, sep, rest = text.partition(b"\n\n")
            plines = head.decode("utf-8").split("\n")
            if plines and plines[1:2] and plines[1].startswith("extra "): del plines[1]
            ok = sep == b"\n\n" and rest == checkpoint and plines[0] == "c2sp.org/tlog-proof@v1" \
                and len(plines) >= 2 and plines[1] == "index %d" % (e["seq"] - 1)
            proof = [base64.b64decode(p, validate=True) for p in plines[2:]] if ok else []
            if not ok or not included(e["seq"] - 1, sha256(b"\x00" + h), proof):
                print("event #%d: not in the checkpoint's tree (its proof fails)" % e["seq"]); failed += 1; continue
            covered += 1
    print("checkpoint: %s, %d events, root %s" % (origin, size, root.hex()))
    print("%d event(s) recomputed and included, %d after the checkpoint (not covered), %d failed" % (covered, later, failed))
    print("checkpoint SHA-256 (the token's imprint): " + hashlib.sha256(checkpoint).hexdigest())
    sys.exit(1 if failed else 0)

    """#
}
