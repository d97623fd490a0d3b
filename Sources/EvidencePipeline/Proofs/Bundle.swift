import EvidenceCatalog
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation
import Glibc

/// The auditor's bundle of one item: everything needed to check it offline with standard
/// tools (`sha256sum -c`, `openssl ts -verify`), and `manifest.json` for `evidence verify DIR`.
///
/// ```
/// original/<file name>            the evidence file, byte for byte
/// proofs/<notary>.json            confirmed QED report (the receipt)
/// proofs/<notary>.tsr             RFC 3161 token
/// proofs/<notary>.ers             RFC 4998 evidence record (a batching TSA), with, made from it:
/// proofs/<notary>.tst             its time-stamp token (ContentInfo, for `openssl ts -verify -token_in`)
/// proofs/<notary>.root.py         a short python3 script: the root the token is over, from the file
/// proofs/<notary>-tsa.crt         the certificate that signed the token (for `-untrusted`; not trusted)
/// proofs/<notary>-ca.pem          a copy of the TSA's CA (when configured), for comparing its
///                                 fingerprint with the TSA's published one; never a trust anchor
/// certificates/<origin>.pdf       evidence.pdf (ours) and each notary's
/// custody.jsonl                   the item's custody events, one JSON object a line
/// custody/                        the newest anchored checkpoint covering them, its token and
///                                 each event's inclusion proof (`BundleCustody`)
/// manifest.json  VERIFY.md  SHA256SUMS (covers every other file)
/// ```
public struct BundleManifest: Codable, Sendable {
    public struct ItemInfo: Codable, Sendable {
        public var id: Int64
        public var sha256: String
        public var size: Int64
        public var fileName: String
        public var state: String
        public var dateTaken: Date?
        public var media: String?
        /// The other digests recorded at ingest (`md5`, `sha1`, `sha512` → hex), each with its
        /// `MD5SUMS`/`SHA1SUMS`/`SHA512SUMS` in the bundle; nil when none was asked for.
        public var digests: [String: String]?
    }
    public struct FileEntry: Codable, Sendable {
        public var path: String
        public var role: String
        public var sha256: String
        public var size: Int64
    }
    public var format: String
    public var item: ItemInfo
    public var proofs: [Proof]
    public var certificates: [String]
    public var custodyHead: String?
    /// The time-stamped checkpoint of the custody log that `custody/` proves the events in
    /// (format 3); nil when no anchor covered them yet.
    public var custodyCheckpoint: BundleCustody.Anchored?
    public var files: [FileEntry]
    public var generatedAt: Date

    /// `/2`: VERIFY.md is exactly `BundleWriter.verifyText` of the manifest, and `verify` compares
    /// it byte for byte. `/1` bundles (earlier versions) are still read; their VERIFY.md, whose
    /// wording changed since, is not vouched for (the verifier says so and not to follow it).
    /// `/3`: RFC 4998 records (`proofs/N.ers` and the files made from it) and `custody/`.
    public static let formatName = "evidence-bundle/3"
    public static let earlierFormats: Set<String> = ["evidence-bundle/1", "evidence-bundle/2"]
}

public enum BundleError: Error, CustomStringConvertible {
    case exists(String)
    case io(String, String)

    public var description: String {
        switch self {
        case .exists(let p): return "\(p): already exists and is not empty; choose a new folder"
        case .io(let p, let d): return "\(p): \(d)"
        }
    }
}

public enum BundleWriter {
    /// Whether the original is copied into `original/`, or left for the caller to stream from
    /// the store (the portal's `.tar`: no copy of a large original in `tmp/`). The manifest and
    /// `SHA256SUMS` list it either way, with the item's SHA-256 and size.
    public enum Original: Sendable { case copied, streamedByCaller }

    /// Writes the bundle into a temporary sibling folder, fsyncs every file, then renames it onto
    /// `dir` (which must not exist, or be empty). `tsaCAFiles` maps notary names to their CA files.
    @discardableResult
    public static func write(home: EvidenceHome, item: Item, to dir: String,
                             tsaCAFiles: [String: String], original: Original = .copied) throws -> BundleManifest {
        let fm = FileManager.default
        let (target, parent, temp) = try WorkFolder.beside(dir)
        for sub in ["/original", "/proofs", "/certificates"] {
            try fm.createDirectory(atPath: temp + sub, withIntermediateDirectories: false)
        }
        var keep = false
        defer { if !keep { try? fm.removeItem(atPath: temp) } }

        let sources = try home.catalog.sources(itemID: item.id)
        let proofs = try home.catalog.proofs(itemID: item.id)
        let certificates = try home.catalog.certificates(itemID: item.id)
        let events = try home.catalog.events(itemID: item.id)
        // A bundle never silently omits a proof the custody log records.
        if let problem = RecordedProofs.missing(events: events, proofs: proofs).first {
            throw BundleError.io(home.path, problem)
        }
        let fileName = BundleNames.safe(sources.first?.name ?? item.sha256.hex)
        var files: [BundleManifest.FileEntry] = []

        func add(_ rel: String, role: String, data: Data) throws {
            try AtomicFile.write(data, to: temp + "/" + rel, mode: 0o600)
            files.append(.init(path: rel, role: role, sha256: SHA256Hasher.hash(data).hex, size: Int64(data.count)))
        }

        // The original, streamed from the store (constant memory), checked against its hash.
        let originalRel = "original/" + fileName
        switch original {
        case .copied:
            let copied = try home.store.copyObject(item.sha256, to: temp + "/" + originalRel)
            guard copied.digest == item.sha256 else {
                throw BundleError.io(home.store.location(of: item.sha256), "store object hashes to \(copied.digest.hex), not \(item.sha256.hex): run `evidence fsck`")
            }
            files.append(.init(path: originalRel, role: "original", sha256: item.sha256.hex, size: copied.size))
        case .streamedByCaller:
            // The caller re-hashes it while streaming and fails the transfer on a mismatch.
            guard let size = try home.store.objectSize(item.sha256), size == item.size else {
                throw BundleError.io(home.store.location(of: item.sha256), "store object is missing or not \(item.size) bytes: run `evidence fsck`")
            }
            files.append(.init(path: originalRel, role: "original", sha256: item.sha256.hex, size: size))
        }

        // The other digests recorded at ingest, from the same read as the SHA-256 the store checks
        // the original against: one `<tool> -c` file each (NSRL and forensic tools use them).
        let digests = DigestAlgorithm.recorded(in: events)
        for a in DigestAlgorithm.extras {
            guard let hex = digests[a] else { continue }
            try add(a.sumsFile, role: "digest-sums", data: Data("\(hex)  \(originalRel)\n".utf8))
        }

        var tsaCertificates: [String: TSACertificateCopies] = [:]
        for p in proofs where p.state == .confirmed {
            guard let receipt = p.receipt else { continue }
            let name = BundleNames.safe(p.notary)
            let data = try home.store.read(receipt)
            if p.kind.isTimestamp {
                if p.kind == .rfc4998 {
                    try add("proofs/\(name).ers", role: "rfc4998-record", data: data)
                    for (rel, extra) in recordFiles(p, record: data, fileName: fileName).sorted(by: { $0.key < $1.key }) {
                        try add(rel, role: rel.hasSuffix(".tst") ? "rfc3161-token" : "rfc4998-root-script", data: extra)
                    }
                } else {
                    try add("proofs/\(name).tsr", role: "rfc3161-token", data: data)
                }
                var copies = TSACertificateCopies()
                if p.kind == .rfc4998 {
                    let sha512 = EvidenceRecordRenewal.hasSHA512Chain(data) ? try ItemDigests.sha512(of: item, store: home.store) : nil
                    (copies.stampTimes, copies.hashRenewedAt) = recordTimes(data, digest: item.sha256.hex, sha512: sha512)
                }
                if let signer = ProofCheck.signerResponse(p, receipt: data).flatMap(TSACertificates.signerPEM(response:)) {
                    try add("proofs/\(name)-tsa.crt", role: "rfc3161-signer", data: signer)
                    copies.signer = TSACertificates.infos(pem: signer).first
                }
                if let ca = tsaCAFiles[p.notary] {
                    let pem = try Data(contentsOf: URL(fileURLWithPath: ca))
                    try add("proofs/\(name)-ca.pem", role: "rfc3161-ca", data: pem)
                    copies.ca = TSACertificates.infos(pem: pem)
                }
                tsaCertificates[p.notary] = copies
            } else if p.kind == .opentimestamps {
                try add("proofs/\(name).ots", role: "opentimestamps-proof", data: data)
            } else {
                try add("proofs/\(name).json", role: "qed-report", data: data)
            }
        }
        for c in certificates {
            try add("certificates/\(BundleNames.safe(c.origin)).pdf", role: "certificate", data: try home.store.read(c.sha256))
        }
        let custody = try events.map { String(decoding: try CanonicalJSON.encode($0), as: UTF8.self) }.joined(separator: "\n") + "\n"
        try add("custody.jsonl", role: "custody", data: Data(custody.utf8))
        let anchored = try BundleCustody.make(home: home, events: events)
        if let anchored {
            try fm.createDirectory(atPath: temp + "/custody", withIntermediateDirectories: false)
            for f in anchored.files { try add(f.path, role: f.role, data: f.data) }
        }

        let manifest = BundleManifest(
            format: BundleManifest.formatName,
            item: .init(id: item.id, sha256: item.sha256.hex, size: item.size, fileName: fileName, state: item.state.rawValue,
                        dateTaken: item.dateTaken, media: item.media?.summary,
                        digests: digests.isEmpty ? nil : Dictionary(uniqueKeysWithValues: digests.map { ($0.key.rawValue, $0.value) })),
            proofs: proofs, certificates: certificates.map(\.origin), custodyHead: events.last?.hash,
            custodyCheckpoint: anchored?.anchored, files: files, generatedAt: Date())
        try add("manifest.json", role: "manifest", data: try CanonicalJSON.encoder(pretty: true).encode(manifest))
        try add("VERIFY.md", role: "instructions", data: Data(verifyText(manifest, tsaCertificates: tsaCertificates).utf8))
        let sums = files.sorted { $0.path < $1.path }.map { "\($0.sha256)  \($0.path)\n" }.joined()
        try AtomicFile.write(Data(sums.utf8), to: temp + "/SHA256SUMS", mode: 0o600)
        for sub in ["/original", "/proofs", "/certificates", "/custody", ""] { fsyncDirectory(temp + sub) }
        guard rename(temp, target) == 0 else {
            throw BundleError.io(target, "rename from \(temp) failed: \(String(cString: strerror(errno)))")
        }
        fsyncDirectory(parent.isEmpty ? "." : parent)
        keep = true
        return manifest
    }

    /// The fingerprints of the certificates copied into a bundle for one TSA, for VERIFY.md.
    struct TSACertificateCopies {
        var signer: TSACertificates.Info?
        var ca: [TSACertificates.Info] = []
        /// An evidence record's time-stamp times, oldest first (empty for a per-item token).
        var stampTimes: [Date] = []
        /// When the record's first chain was hash-renewed (its newest time-stamp is checked as of then).
        var hashRenewedAt: Date?
    }

    /// VERIFY.md: written for an auditor who trusts nothing in the folder. Every check it lists
    /// works with standard tools, and the one anchor it needs, the TSA's CA, comes from the TSA.
    /// The files an evidence record brings for standard tools, made from the record alone:
    /// `proofs/<notary>.tst` (its first time-stamp's token), `proofs/<notary>.<k>.tst` for each
    /// renewal time-stamp k ≥ 2, and `proofs/<notary>.root.py` (file → the root time-stamp k is
    /// over). Nothing of the item (its file name above all) is written into the script.
    static func recordFiles(_ p: Proof, record: Data, fileName: String) -> [String: Data] {
        // The first chain (SHA-256): a hash-tree renewal's later chains are for RFC 4998 implementations.
        guard let parsed = try? EvidenceRecord(der: [UInt8](record)), let chain = parsed.chains.first,
              !chain.isEmpty else { return [:] }
        let n = BundleNames.safe(p.notary)
        let trees = chain.enumerated().map { k, stamp in
            "    # time-stamp \(k + 1)\n    [\n" + stamp.reducedTree.map { "        [" + $0.map { "\"\(Hex.encode($0))\"" }.joined(separator: ", ") + "]," }
                .joined(separator: "\n") + (stamp.reducedTree.isEmpty ? "" : "\n") + "    ],"
        }
        let script = """
        #!/usr/bin/env python3
        # Usage: python3 proofs/\(n).root.py FILE [K]
        # Prints (hex) the root that time-stamp K of proofs/\(n).ers is over, recomputed from FILE: the
        # original for K = 1 (proofs/\(n).tst), the previous time-stamp's token file for K >= 2 (a
        # renewal, RFC 4998 §5.2: proofs/\(n).K.tst is over proofs/\(n).tst or proofs/\(n).<K-1>.tst).
        # RFC 4998 §4.3: FILE's SHA-256 must be in the first list; each list is hashed to one node (one
        # value is itself, several are sorted, concatenated and hashed); each node is paired with the
        # one before it, the smaller first, and hashed. Uses only Python's hashlib.
        import hashlib, sys

        TREES = [
        \(trees.joined(separator: "\n"))
        ]

        def sha256(data): return hashlib.sha256(data).digest()
        def node(values): return values[0] if len(values) == 1 else sha256(b"".join(sorted(values)))

        if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and not sys.argv[2].isdigit()):
            sys.exit("usage: python3 proofs/\(n).root.py FILE [K]")
        k = int(sys.argv[2]) if len(sys.argv) == 3 else 1
        if not 1 <= k <= len(TREES):
            sys.exit("K must be 1 to " + str(len(TREES)))
        digest = hashlib.sha256()
        with open(sys.argv[1], "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        h = digest.digest()
        tree = [[bytes.fromhex(v) for v in values] for values in TREES[k - 1]]
        if tree and h not in tree[0]:
            sys.exit("the SHA-256 " + h.hex() + " of " + sys.argv[1] + " is not in the first list of time-stamp " + str(k))
        root = node(tree[0]) if tree else h
        for values in tree[1:]:
            root = sha256(b"".join(sorted([root, node(values)])))
        print(root.hex())

        """
        var files = ["proofs/\(n).root.py": Data(script.utf8)]
        for (k, stamp) in chain.enumerated() {
            files[k == 0 ? "proofs/\(n).tst" : "proofs/\(n).\(k + 1).tst"] = Data(stamp.token)
        }
        return files
    }

    /// The generation times of an evidence record's first chain's time-stamps, oldest first (for
    /// VERIFY.md's `-attime`: each is checked as of the one that renewed it), and the time of the
    /// hash-tree renewal's first time-stamp after it, if any.
    static func recordTimes(_ record: Data, digest: String, sha512: [UInt8]? = nil) -> ([Date], Date?) {
        guard let d = SHA256Digest(hex: digest),
              let verified = try? EvidenceRecordVerifier.verify(record: record, digest: d, trust: nil, sha512: sha512) else { return ([], nil) }
        let first = verified.chainLengths.first ?? verified.tokens.count
        let times = verified.tokens.map(\.genTime)
        return (Array(times.prefix(first)), first < times.count ? times[first] : nil)
    }

    /// ⌈log₂ n⌉: the longest inclusion proof in a tree of n leaves.
    static func proofLength(_ n: Int) -> Int { n <= 1 ? 0 : Int.bitWidth - (n - 1).leadingZeroBitCount }

    static func verifyText(_ m: BundleManifest, tsaCertificates: [String: TSACertificateCopies]) -> String {
        var s = """
        # Verifying evidence item #\(m.item.id)

        File: `original/\(m.item.fileName)` — \(m.item.size) bytes
        SHA-256: `\(m.item.sha256)`

        Trust nothing in this folder by itself: anyone who can edit it can replace the file, recompute
        every hash below and put their own certificates in `proofs/`. What cannot be forged is a
        time-stamp signed by a time-stamping authority (TSA) whose certificate you obtained from the
        TSA itself. Run these in this folder; every one must succeed. No `evidence` software is needed.

        1. Every file is intact (the original, proofs, certificates, custody log, manifest):

               sha256sum -c SHA256SUMS

           This only shows that the files agree with each other; it proves nothing about who made them.

        2. The original's SHA-256 is the one notarized:

               sha256sum 'original/\(m.item.fileName)'     # must print \(m.item.sha256)


        """
        let others = DigestAlgorithm.extras.filter { m.item.digests?[$0.rawValue] != nil }
        if !others.isEmpty {
            s += """
               The other digests recorded when it was taken in (for NSRL and forensic tools), from the
               same read; each line must print `OK`:


            """
            for a in others {
                s += "           \(a.tool) -c \(a.sumsFile)      # \(a.label) \(m.item.digests?[a.rawValue] ?? "")\n"
            }
            s += "\n\n"
        }
        var step = 3
        for p in m.proofs {
            let n = BundleNames.safe(p.notary)
            guard p.state == .confirmed else {
                s += """
                \(step). \(p.notary) (\(p.kind)) is \(p.state.rawValue), not confirmed: this bundle does not prove it.


                """
                step += 1
                continue
            }
            if p.kind.isTimestamp {
                let copies = tsaCertificates[p.notary] ?? TSACertificateCopies()
                s += """
                \(step). \(p.kind == .rfc4998 ? "RFC 4998 evidence record (one RFC 3161 time-stamp over a batch's hash tree)" : "RFC 3161 time-stamp") by \(p.notary) (serial \(p.remoteID ?? "?"), time \(p.provenAt.map(Timestamp.string) ?? "?"),
                   TSA \(p.link ?? "?")):

                   a. Obtain the TSA's CA certificate from the TSA itself (its web site or its operator), NOT
                      from this folder, and save it as `tsa-ca-from-the-tsa.pem` outside the folder. Check
                      its fingerprint against the one the TSA publishes:

                          openssl x509 -in /path/to/tsa-ca-from-the-tsa.pem -noout -subject -fingerprint -sha256


                """
                if !copies.ca.isEmpty {
                    s += """
                          `proofs/\(n)-ca.pem` is the copy the operator configured; it is worth something only
                          if its fingerprint is the TSA's published one:

                    \(copies.ca.map { "          \($0.sha256)  \($0.subject)" }.joined(separator: "\n"))


                    """
                }
                if p.kind == .rfc4998 {
                    let times = copies.stampTimes
                    // Renewed: the first token is checked as of the time-stamp that renewed it (the
                    // hash-tree renewal's, for the newest of the first chain).
                    let firstAt = times.count > 1 ? " -attime \(Int(times[1].timeIntervalSince1970))"
                        : copies.hashRenewedAt.map { " -attime \(Int($0.timeIntervalSince1970))" } ?? ""
                    s += """
                       b. The token is over the root of the batch's hash tree (for a record without a tree, over
                          the file's own SHA-256). Recompute it from the file with the record's path
                          (`proofs/\(n).root.py` is a short script made from `proofs/\(n).ers`; read it, it uses
                          only Python's hashlib):

                              python3 proofs/\(n).root.py 'original/\(m.item.fileName)'

                          It prints the root (64 hex digits). It stops with a message if the file's
                          SHA-256 is not in the record.

                       c. Verify the token over that root against the CA (`proofs/\(n)-tsa.crt` is the
                          certificate that signed the token; it is checked against the CA, not trusted):

                              openssl ts -verify -digest "$(python3 proofs/\(n).root.py 'original/\(m.item.fileName)')" \\
                                  -token_in -in proofs/\(n).tst\(firstAt) \\
                                  -CAfile /path/to/tsa-ca-from-the-tsa.pem -untrusted proofs/\(n)-tsa.crt

                          It must print `Verification: OK`. Then read the time and the imprint:

                              openssl ts -reply -token_in -in proofs/\(n).tst -text

                          `proofs/\(n).ers` is the RFC 4998 EvidenceRecord (DER) itself: any RFC 4998
                          implementation (e.g. Bouncy Castle's `ERSEvidenceRecord`) checks it against the file.


                    """
                    if times.count > 1 {
                        s += """
                           d. The record was renewed (RFC 4998 §5.2) before a TSA certificate expired: each later
                              time-stamp is over the one before it, and each is checked as of the one that renewed
                              it (`-attime`, seconds since 1970), the newest as of now. Every line must print
                              `Verification: OK`:


                        """
                        for k in 2...times.count {
                            let previous = k == 2 ? "proofs/\(n).tst" : "proofs/\(n).\(k - 1).tst"
                            let at = k < times.count ? " -attime \(Int(times[k].timeIntervalSince1970))"
                                : copies.hashRenewedAt.map { " -attime \(Int($0.timeIntervalSince1970))" } ?? ""
                            s += """
                                      openssl ts -verify -digest "$(python3 proofs/\(n).root.py \(previous) \(k))" \\
                                          -token_in -in proofs/\(n).\(k).tst\(at) -CAfile /path/to/tsa-ca-from-the-tsa.pem

                            """
                        }
                        s += "\n"
                    }
                    if let renewedAt = copies.hashRenewedAt {
                        s += """
                           e. The record was hash-tree renewed to SHA-512 (RFC 4998 §5.2) on \(Timestamp.string(renewedAt)):
                              a later chain of time-stamps covers SHA-512(SHA-512(file) ‖ SHA-512(the chains before it)),
                              which keeps the proof when SHA-256 or the first TSA certificate no longer can. The
                              steps above check the first chain as of that date; the later chain is checked by an
                              RFC 4998 implementation (Bouncy Castle's `ERSEvidenceRecord.validatePresent` and
                              `validate` on `proofs/\(n).ers` with the original) or by `evidence verify`. The file's
                              SHA-512:

                                  sha512sum 'original/\(m.item.fileName)'


                        """
                    }
                } else {
                    s += """
                       b. Verify the token against that CA (`proofs/\(n)-tsa.crt` is the certificate that signed
                          the token, as the token itself carries it; it is checked against the CA, not trusted):

                              openssl ts -verify -data 'original/\(m.item.fileName)' -in proofs/\(n).tsr \\
                                  -CAfile /path/to/tsa-ca-from-the-tsa.pem -untrusted proofs/\(n)-tsa.crt

                          It must print `Verification: OK`. Then read the time and the imprint:

                              openssl ts -reply -in proofs/\(n).tsr -text


                    """
                }
                if let signer = copies.signer {
                    s += """
                          The token's signing certificate: \(signer.subject),
                          SHA-256 \(signer.sha256)


                    """
                }
            } else if p.kind == .opentimestamps {
                s += """
                \(step). OpenTimestamps proof by \(p.notary): `proofs/\(n).ots` leads from the file's SHA-256 through
                   the batch's hash tree and the calendars' commitments to the merkle root of Bitcoin block
                   \(p.blockHeight.map(String.init) ?? "?") (hash \(p.remoteID ?? "?"), time \(p.provenAt.map(Timestamp.string) ?? "?")).
                   The reference client (`pip install opentimestamps-client`) shows every step:

                       ots info proofs/\(n).ots

                   and checks it against your own Bitcoin node (bitcoind with its RPC), trusting no calendar:

                       ots verify -f 'original/\(m.item.fileName)' proofs/\(n).ots

                   Without a node: `ots info` ends with `# Bitcoin block merkle root HEX` under
                   `verify BitcoinBlockHeaderAttestation(\(p.blockHeight.map(String.init) ?? "?"))`; HEX must be that block's
                   merkle root as a block explorer you trust shows it.


                """
            } else {
                s += """
                \(step). QED report by \(p.notary): `proofs/\(n).json` is the operator's copy of the confirmed report;
                   its `hash` must be the SHA-256 above. The copy proves nothing by itself: look up transaction
                   \(p.txHash ?? "?") on \(p.network ?? "?") (block \(p.blockHeight.map(String.init) ?? "?")) at the
                   explorer, and check that it carries this hash:
                   \(p.link ?? "")

                       grep -o '"hash": *"[0-9a-f]\\{64\\}"' proofs/\(n).json | head -1


                """
            }
            step += 1
        }
        s += """
        \(step). Custody. `custody.jsonl` lists the item's custody events, one JSON object a line. Each
           event's `hash` is the SHA-256 (lowercase hex) of exactly these UTF-8 bytes, `\\n` a newline:

               prevHash \\n evidence-custody-v1 \\n seq \\n at \\n itemID \\n kind \\n actor \\n details

           each field as the event has it, joined by single newlines (no spaces): `prevHash` is the
           previous event's hash (64 zeros before event 1), `seq` in decimal, `itemID` in decimal or
           `-` for none, and `details` the JSON text of that field byte for byte. The events must name
           the SHA-256 above, the file's name and each proof's receipt (the SHA-256 of its file in
           `proofs/`). They are the operator's record; alone they do not prove time.

        """
        if let c = m.custodyCheckpoint {
            let covered = "events #1…#\(c.size)"
            let untrusted = c.signerCertificate ? " \\\n              -untrusted custody/checkpoint-tsa.crt" : ""
            s += """

               The whole custody log is a Merkle tree (RFC 9162 §2.1): leaf = SHA-256(0x00 ‖ the 32 bytes of
               an event's hash), node = SHA-256(0x01 ‖ left ‖ right). `custody/checkpoint` is that tree over
               \(covered) (a C2SP checkpoint: the log's name, the number of events, the base64 root),
               time-stamped \(c.timeStamped.map(Timestamp.string) ?? "?") by `custody/checkpoint.tsr`, an RFC 3161
               token over the checkpoint's SHA-256. Each `custody/<seq>.tlog-proof` (C2SP tlog-proof) proves
               that event <seq> is in that tree with at most \(Self.proofLength(Int(c.size))) hash(es). The log's name:

                   \(c.origin)

               a. Recompute every event's hash and inclusion proof (read it first: only Python's standard
                  library):

                      python3 custody/check.py

                  It must end with `0 failed`; events after the checkpoint (newer than its anchor) are listed
                  as not covered.

               b. Verify the checkpoint's token against the CA of the TSA that time-stamps the custody log,
                  obtained from that TSA itself, never from this folder:

                      openssl ts -verify -data custody/checkpoint -in custody/checkpoint.tsr \\
                          -CAfile /path/to/tsa-ca-from-the-tsa.pem\(untrusted)

                  It must print `Verification: OK`. Then the events up to #\(c.size) existed, in this order and
                  unchanged, when the token was signed.


            """
        } else {
            s += """

               No time-stamped checkpoint of the custody log covered these events when this bundle was
               written: their hashes recompute, but nothing outside the folder vouches for them.


            """
        }
        s += """
        `evidence verify . --trust /path/to/tsa-ca-from-the-tsa.pem` runs all of these checks at once
        and reports them point by point. Without `--trust` (or a config naming the TSA's `ca_file`)
        it does not report the bundle verified: a CA inside this folder is never trusted.

        """
        return s
    }
}

/// A fresh 0700 work folder beside a folder still to be written (`mkdtemp`: no one could have
/// prepared it; a symlink planted at a predictable name would have redirected the files
/// elsewhere). The target must not exist, or be an empty folder (removed here).
enum WorkFolder {
    static func beside(_ dir: String) throws -> (target: String, parent: String, temp: String) {
        let fm = FileManager.default
        let target = (dir as NSString).standardizingPath
        if let entries = try? fm.contentsOfDirectory(atPath: target) {
            guard entries.isEmpty else { throw BundleError.exists(target) }
            try fm.removeItem(atPath: target)
        }
        let parent = (target as NSString).deletingLastPathComponent
        try fm.createDirectory(atPath: parent.isEmpty ? "." : parent, withIntermediateDirectories: true)
        var template = Array((target + ".partial-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BundleError.io(target, "cannot create a work folder beside it: \(String(cString: strerror(errno)))")
        }
        return (target, parent, String(cString: made))
    }
}

func fsyncDirectory(_ path: String) {
    let fd = open(path, O_RDONLY | O_DIRECTORY)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    close(fd)
}
