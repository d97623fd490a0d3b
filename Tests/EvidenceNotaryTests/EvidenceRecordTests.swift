import EvidenceCore
import EvidenceNotary
import EvidenceProcess
import EvidenceSandbox
import Foundation
import Testing
import EvidenceTesting

@Suite("RFC 4998 evidence records: our hash tree and DER against Bouncy Castle", .ownThread)
struct EvidenceRecordTests {
    /// `count` files of random content, their digests, and one token over their tree's root.
    struct Batch {
        let files: [String]
        let digests: [SHA256Digest]
        let tree: HashTree
        let reply: Data
    }

    func batch(_ count: Int, in dir: String, tsa: TestTSA) throws -> Batch {
        var files: [String] = [], digests: [SHA256Digest] = []
        for i in 0..<count {
            let bytes = (0..<(100 + i)).map { _ in UInt8.random(in: 0...255) }
            let path = dir + "/file\(i)"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            files.append(path)
            digests.append(SHA256Digest(bytes: HashTree.sha256(bytes)))
        }
        let tree = HashTree(leaves: digests)
        let root = try #require(tree.root)
        let reply = try tsa.reply(to: try TimestampRequest.make(digest: root).der)
        return Batch(files: files, digests: digests, tree: tree, reply: reply)
    }

    @Test("every member of batches of 1 to 9 files has a record that we and Bouncy Castle verify")
    func membersVerify() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let trust = TSATrust(caFiles: [tsa.caCertificatePath])
            var pairs: [(record: String, data: String)] = []
            var roots: [SHA256Digest] = []
            for count in [1, 2, 3, 5, 9] {
                let folder = dir + "/b\(count)"
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                let b = try batch(count, in: folder, tsa: tsa)
                let root = try #require(b.tree.root)
                for (file, digest) in zip(b.files, b.digests) {
                    let made = try EvidenceRecordVerifier.make(response: b.reply, tree: b.tree, leaf: digest, trust: trust)
                    let path = tree(b.tree, leaf: digest).isEmpty ? "no tree" : "\(tree(b.tree, leaf: digest).count) lists"
                    let verified = try EvidenceRecordVerifier.verify(record: made.record, digest: digest, trust: trust)
                    #expect(verified.root == root, "\(count) files, \(path)")
                    // The path is at most ⌈log₂ n⌉ + 1 values.
                    let values = tree(b.tree, leaf: digest).reduce(0) { $0 + $1.count }
                    #expect(values <= Int(log2(Double(count)).rounded(.up)) + 1)
                    let record = file + ".ers"
                    try made.record.write(to: URL(fileURLWithPath: record))
                    pairs.append((record, file))
                    roots.append(root)
                }
            }
            let bc = try BouncyCastleERS.check(pairs, caFile: tsa.caCertificatePath)
            #expect(bc.succeeded, "Bouncy Castle: \(bc.output)")
            let lines = bc.output.split(separator: "\n")
            #expect(lines.count == pairs.count)
            for (line, (pair, root)) in zip(lines, zip(pairs, roots)) {
                #expect(line.hasPrefix("\(pair.record): verified") && line.contains("root \(root.hex)"), "\(line)")
            }
        }
    }

    func tree(_ tree: HashTree, leaf: SHA256Digest) -> [[[UInt8]]] { tree.path(for: leaf) ?? [] }

    @Test("a record moved to another file is refused by us and by Bouncy Castle")
    func movedRecord() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let trust = TSATrust(caFiles: [tsa.caCertificatePath])
            let b = try batch(4, in: dir, tsa: tsa)
            let made = try EvidenceRecordVerifier.make(response: b.reply, tree: b.tree, leaf: b.digests[0], trust: trust)
            // Another member of the same batch, its sibling in the tree included: its hash is in the
            // tree, but not in this record's first list.
            for other in b.digests.dropFirst() {
                #expect(throws: TimestampError.self) {
                    try EvidenceRecordVerifier.verify(record: made.record, digest: other, trust: trust)
                }
            }
            let record = dir + "/moved.ers"
            try made.record.write(to: URL(fileURLWithPath: record))
            let bc = try BouncyCastleERS.check(b.files.dropFirst().map { (record, $0) }, caFile: tsa.caCertificatePath)
            #expect(!bc.succeeded, "\(bc.output)")
            #expect(bc.output.split(separator: "\n").filter { $0.contains(": refused") }.count == 3, "\(bc.output)")
        }
    }

    @Test("a flipped bit in any byte of the reduced tree or the record's structure is refused")
    func flippedBits() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let trust = TSATrust(caFiles: [tsa.caCertificatePath])
            let b = try batch(6, in: dir, tsa: tsa)
            let leaf = b.digests[3]
            let made = try EvidenceRecordVerifier.make(response: b.reply, tree: b.tree, leaf: leaf, trust: trust)
            let bytes = [UInt8](made.record)
            let token = try EvidenceRecord.token(ofResponse: b.reply)
            // Every byte before the token: version, algorithms, tags, lengths and the tree's hashes.
            let tokenStart = try #require(bytes.firstRange(of: token)?.lowerBound)
            #expect(tokenStart > 6 * 32 / 2, "the record holds a tree")
            var refused = 0
            for i in 0..<tokenStart {
                var forged = bytes
                forged[i] ^= 0x01
                do {
                    _ = try EvidenceRecordVerifier.verify(record: Data(forged), digest: leaf, trust: trust)
                    Issue.record("a record with byte \(i) flipped verified")
                } catch { refused += 1 }
            }
            #expect(refused == tokenStart)
        }
    }

    @Test("a root time-stamped by a forger's TSA is refused by us and by Bouncy Castle")
    func forgersTSA() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let forger = try TestTSA(directory: dir + "/forger")
            let b = try batch(3, in: dir, tsa: forger)
            let forgersTrust = TSATrust(caFiles: [forger.caCertificatePath])
            let made = try EvidenceRecordVerifier.make(response: b.reply, tree: b.tree, leaf: b.digests[1], trust: forgersTrust)
            let error = #expect(throws: TimestampError.self) {
                try EvidenceRecordVerifier.verify(record: made.record, digest: b.digests[1], trust: TSATrust(caFiles: [tsa.caCertificatePath]))
            }
            #expect(error?.kind == .verificationFailed, "\(String(describing: error))")
            let record = dir + "/forged.ers"
            try made.record.write(to: URL(fileURLWithPath: record))
            let bc = try BouncyCastleERS.check(record: record, data: b.files[1], caFile: tsa.caCertificatePath)
            #expect(!bc.succeeded, "\(bc.output)")
        }
    }

    @Test("openssl ts -verify checks the token over the root the tree leads to")
    func opensslOnRoot() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let b = try batch(5, in: dir, tsa: tsa)
            let root = try #require(b.tree.root)
            let token = dir + "/batch.tst"
            try Data(try EvidenceRecord.token(ofResponse: b.reply)).write(to: URL(fileURLWithPath: token))
            let ok = try OpenSSLCLI.run(["ts", "-verify", "-digest", root.hex, "-token_in", "-in", token, "-CAfile", tsa.caCertificatePath])
            #expect(ok.succeeded && ok.output.contains("Verification: OK"), "\(ok.output)")
            let wrong = try OpenSSLCLI.run(["ts", "-verify", "-digest", b.digests[0].hex, "-token_in", "-in", token, "-CAfile", tsa.caCertificatePath])
            #expect(!wrong.succeeded)
        }
    }

    @Test("renewal (RFC 4998 §5.2): after the first TSA certificate expires an unrenewed record is refused and a renewed one verifies, with us and Bouncy Castle")
    func renewal() throws {
        try withTempDirectory { dir in
            let tsa = try TestTSA(directory: dir + "/tsa")
            let trust = TSATrust(caFiles: [tsa.caCertificatePath])
            try tsa.reissueSigningCertificate(days: 1)
            // A batch of three, and one per-item token (a .tsr from before batching).
            let b = try batch(3, in: dir, tsa: tsa)
            let made = try EvidenceRecordVerifier.makeAll(response: b.reply, tree: b.tree, trust: trust)
            let single = dir + "/single"
            let singleBytes = Data("a file stamped alone\n".utf8)
            try singleBytes.write(to: URL(fileURLWithPath: single))
            let singleDigest = SHA256Digest(bytes: HashTree.sha256([UInt8](singleBytes)))
            let tsr = try tsa.reply(to: try TimestampRequest.make(digest: singleDigest).der)
            var records = b.digests.map { made.records[$0]! } + [try EvidenceRecordRenewal.record(fromResponse: tsr)]
            let digests = b.digests + [singleDigest]
            let files = b.files + [single]
            let later = Date().addingTimeInterval(2 * 86_400)
            #expect(EvidenceRecordRenewal.expiry(of: records[0]).map { $0 < later } == true)

            // Two days on, the first certificate has expired: nothing verifies as of then.
            for (record, digest) in zip(records, digests) {
                _ = try EvidenceRecordVerifier.verify(record: record, digest: digest, trust: trust)
                let error = #expect(throws: TimestampError.self) {
                    try EvidenceRecordVerifier.verify(record: record, digest: digest, trust: trust, at: later)
                }
                #expect(error?.kind == .verificationFailed, "\(String(describing: error))")
            }
            func write(_ records: [Data], _ tag: String) throws -> [(record: String, data: String)] {
                try zip(records, files).enumerated().map { i, pair in
                    let path = dir + "/\(tag)\(i).ers"
                    try pair.0.write(to: URL(fileURLWithPath: path))
                    return (path, pair.1)
                }
            }
            let old = try BouncyCastleERS.check(try write(records, "old"), caFile: tsa.caCertificatePath, at: later)
            #expect(old.output.split(separator: "\n").filter { $0.contains(": refused") }.count == 4, "\(old.output)")

            // The TSA renews its certificate; the four records are renewed with one request.
            try tsa.reissueSigningCertificate(days: 3650)
            let leaves = try records.map { try EvidenceRecordRenewal.renewalGroup(of: $0).leaf }
            #expect(Set(leaves).count == 2, "the batch's members share a token, so a renewal leaf")
            let tree = HashTree(values: leaves, algorithm: .sha256)
            let reply = try tsa.reply(to: try TimestampRequest.make(digest: try #require(tree.root)).der)
            records = try EvidenceRecordRenewal.renew(records, response: reply, tree: tree, trust: trust, digests: digests)
            for (record, digest) in zip(records, digests) {
                let verified = try EvidenceRecordVerifier.verify(record: record, digest: digest, trust: trust, at: later)
                #expect(verified.tokens.count == 2)
                // Not as of a date before its newest time-stamp existed (its keys' past is not its proof).
                #expect(throws: TimestampError.self) {
                    try EvidenceRecordVerifier.verify(record: record, digest: digest, trust: trust, at: Date().addingTimeInterval(-3600))
                }
            }
            let renewed = try BouncyCastleERS.check(try write(records, "new"), caFile: tsa.caCertificatePath, at: later)
            #expect(renewed.succeeded, "\(renewed.output)")

            // A renewal whose time-stamp covers something else is refused by both.
            var forged = try EvidenceRecord(der: [UInt8](records[3]))
            let other = HashTree(leaves: [SHA256Digest(bytes: HashTree.sha256([1, 2, 3])), SHA256Digest(bytes: leaves[0])])
            let otherReply = try tsa.reply(to: try TimestampRequest.make(digest: try #require(other.root)).der)
            forged.chains[0][1] = .init(reducedTree: try #require(other.path(for: SHA256Digest(bytes: HashTree.sha256([1, 2, 3])))),
                                        token: try EvidenceRecord.token(ofResponse: otherReply))
            let forgedData = Data(forged.der())
            let error = #expect(throws: TimestampError.self) {
                try EvidenceRecordVerifier.verify(record: forgedData, digest: singleDigest, trust: trust)
            }
            #expect(error?.kind == .imprintMismatch, "\(String(describing: error))")
            let forgedPath = dir + "/forged-renewal.ers"
            try forgedData.write(to: URL(fileURLWithPath: forgedPath))
            let bc = try BouncyCastleERS.check(record: forgedPath, data: single, caFile: tsa.caCertificatePath)
            #expect(!bc.succeeded, "\(bc.output)")
        }
    }

    @Test("records that are not ours are refused with what was found")
    func strictParsing() throws {
        #expect(throws: TimestampError.self) { try EvidenceRecord(der: []) }
        #expect(throws: TimestampError.self) { try EvidenceRecord(der: [0x30, 0x03, 0x02, 0x01, 0x02]) }
        let record = EvidenceRecord(reducedTree: [[[UInt8](repeating: 1, count: 32)]], token: [0x30, 0x00])
        let der = record.der()
        #expect(try EvidenceRecord(der: der) == record)
        #expect(throws: TimestampError.self) { try EvidenceRecord(der: der + [0]) }
    }
}
