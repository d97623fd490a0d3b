import EvidenceCore
@testable import EvidenceNotary
import Foundation
import Testing

/// The `.ots` format and its checks, on a proof built here from first principles: three files in
/// a batch tree, a calendar's nonce and commitment, a transaction, a block of two transactions
/// (Bitcoin's double SHA-256 merkle tree) and that block's header. The reference implementation
/// reads the files the pipeline writes in `OpenTimestampsCLITests`; here every byte is attacked.
@Suite("OpenTimestamps proofs")
struct OpenTimestampsTests {
    static func sha(_ b: [UInt8]) -> [UInt8] { HashTree.sha256(b) }
    static func dsha(_ b: [UInt8]) -> [UInt8] { sha(sha(b)) }

    struct Fixture {
        var files: [SHA256Digest: OTSFile] = [:]
        var header: BitcoinHeader
        var headers: [Int: BitcoinHeader] { [800_123: header] }
    }

    static func fixture() throws -> Fixture {
        let leaves = (0..<3).map { SHA256Digest(bytes: sha(Array("file \($0)".utf8))) }
        let tree = HashTree(leaves: leaves)
        let rootDigest = try #require(tree.root)
        let root = try #require(Hex.decode(rootDigest.hex))
        let nonce: [UInt8] = Array(repeating: 0x5a, count: 16)
        let commitment = sha(root + nonce)
        let prefix: [UInt8] = [1, 0, 0, 0, 0x6a, 0x20], suffix: [UInt8] = [0, 0, 0, 0]
        let txid = dsha(prefix + commitment + suffix)
        let coinbase = dsha(Array("coinbase".utf8))
        let merkleRoot = dsha(coinbase + txid)
        // A header whose hash meets its own (regtest) target.
        var header: [UInt8] = [0, 0, 0, 0x20] + Array(repeating: 0, count: 32) + merkleRoot + [0x10, 0x20, 0x30, 0x60] + [0xff, 0xff, 0x7f, 0x20]
        var nonceValue: UInt32 = 0
        while true {
            let candidate = header + (0..<4).map { UInt8((nonceValue >> (8 * UInt32($0))) & 0xff) }
            if dsha(candidate).last! <= 0x7f { header = candidate; break }
            nonceValue += 1
        }
        var block = OTSTimestamp(message: merkleRoot)
        block.attestations = [.bitcoin(height: 800_123)]
        let upgrade = try OTSTimestamp.chain(from: commitment, ops: [.prepend(prefix), .append(suffix), .sha256, .sha256, .prepend(coinbase), .sha256, .sha256],
                                             tail: block)
        var pending = OTSTimestamp(message: commitment)
        pending.attestations = [.pending(uri: "https://calendar.example/")]
        var fixture = Fixture(header: try BitcoinHeader(bytes: header))
        for leaf in leaves {
            let rootStamp = try OTSTimestamp.chain(from: root, ops: [.append(nonce), .sha256], tail: pending)
            let ops = try #require(OTSTimestamp.treeOps(leaf: leaf, in: tree))
            let leafBytes = try #require(Hex.decode(leaf.hex))
            let stamp = try OTSTimestamp.chain(from: leafBytes, ops: ops, tail: rootStamp)
            fixture.files[leaf] = OTSFile(timestamp: stamp.merging(upgrade, at: commitment, dropping: ["https://calendar.example/"]))
        }
        return fixture
    }

    @Test("each file's proof leads to the block's merkle root, round-trips byte for byte, and is refused for any other file")
    func verifies() throws {
        let f = try Self.fixture()
        #expect(f.header.meetsOwnTarget)
        for (digest, file) in f.files {
            let report = try OTSVerifier.check(file, digest: digest, headers: f.headers)
            #expect(report.attested.map(\.height) == [800_123] && report.pending.isEmpty && report.unchecked.isEmpty)
            #expect(try OTSFile(bytes: file.bytes) == file)
            for other in f.files.keys where other != digest {
                #expect(throws: OTSError.self) { try OTSVerifier.check(file, digest: other, headers: f.headers) }
            }
            // No header for the block: nothing attested, the height named as unchecked.
            let alone = try OTSVerifier.check(file, digest: digest, headers: [:])
            #expect(alone.attested.isEmpty && alone.unchecked == [800_123])
        }
    }

    @Test("a flipped bit in any byte of a proof is refused or attests nothing")
    func everyByteFlipped() throws {
        let f = try Self.fixture()
        let (digest, file) = try #require(f.files.first)
        let bytes = file.bytes
        for i in bytes.indices {
            for bit in [0, 7] {
                var bad = bytes
                bad[i] ^= UInt8(1 << bit)
                let verified: Bool
                do {
                    let report = try OTSVerifier.check(try OTSFile(bytes: bad), digest: digest, headers: f.headers)
                    verified = !report.attested.isEmpty && report.unchecked.isEmpty
                } catch {
                    verified = false
                }
                #expect(!verified, "byte \(i) bit \(bit) flipped still verifies")
            }
        }
    }

    @Test("a header source's header for another block, or one that misses its own target, is refused")
    func wrongHeader() throws {
        let f = try Self.fixture()
        let (digest, file) = try #require(f.files.first)
        var other = f.header.bytes
        other[40] ^= 1
        #expect(throws: OTSError.self) { try OTSVerifier.check(file, digest: digest, headers: [800_123: try BitcoinHeader(bytes: other)]) }
        var hard = f.header.bytes
        hard[72...75] = [0xff, 0xff, 0x00, 0x1d]  // mainnet's easiest target: this header's hash does not meet it
        #expect(!(try BitcoinHeader(bytes: hard)).meetsOwnTarget)
    }

    @Test("hostile input: truncation, trailing bytes, deep nesting, oversized fields, bad URIs are refused with a message")
    func hostile() throws {
        let f = try Self.fixture()
        let bytes = try #require(f.files.first?.value.bytes)
        for n in [0, 10, OTSFile.magic.count + 2, bytes.count - 1] {
            #expect(throws: OTSError.self) { try OTSFile(bytes: Array(bytes.prefix(n))) }
        }
        #expect(throws: OTSError.self) { try OTSFile(bytes: bytes + [0]) }
        let head = OTSFile.magic + [1, 0x08] + Array(repeating: 0, count: 32)
        // 300 nested sha256 operations: deeper than the format allows.
        #expect(throws: OTSError.self) { try OTSFile(bytes: head + Array(repeating: 0x08, count: 300) + [0x00] + OTSAttestation.bitcoinTag + [1, 1]) }
        // An append of 5000 bytes.
        #expect(throws: OTSError.self) { try OTSFile(bytes: head + [0xf0, 0x88, 0x27] + Array(repeating: 1, count: 5000) + [0x00] + OTSAttestation.bitcoinTag + [1, 1]) }
        // A pending attestation whose URI holds a query.
        let uri = Array("https://x.example/?a=b".utf8)
        #expect(throws: OTSError.self) { try OTSFile(bytes: head + [0x00] + OTSAttestation.pendingTag + [UInt8(uri.count + 1), UInt8(uri.count)] + uri) }
        // An unknown operation, another file hash, another major version.
        #expect(throws: OTSError.self) { try OTSFile(bytes: head + [0x77]) }
        #expect(throws: OTSError.self) { try OTSFile(bytes: OTSFile.magic + [1, 0x02] + Array(repeating: 0, count: 20) + [0x00] + OTSAttestation.bitcoinTag + [1, 1]) }
        #expect(throws: OTSError.self) { try OTSFile(bytes: OTSFile.magic + [2, 0x08] + Array(repeating: 0, count: 32) + [0x00] + OTSAttestation.bitcoinTag + [1, 1]) }
    }

    @Test("the reference format's readings: a repeated operation keeps the later, padded numbers and an empty URI read, attestations in its order; calendar answers keep only promises; a node budget")
    func referenceReadings() throws {
        let head = OTSFile.magic + [1, 0x08] + Array(repeating: 0, count: 32)
        let btc = { (h: UInt8) -> [UInt8] in [0x00] + OTSAttestation.bitcoinTag + [1, h] }
        // append 01 → Bitcoin 5, then append 01 again → Bitcoin 7: the later branch is the one kept.
        let twice = try OTSFile(bytes: head + [0xff, 0xf0, 1, 1] + btc(5) + [0xf0, 1, 1] + btc(7))
        #expect(twice.timestamp.branches.count == 1 && twice.timestamp.allAttestations.map(\.attestation) == [.bitcoin(height: 7)])
        // A height written with padding groups, and a pending attestation with an empty URI.
        let padded = try OTSFile(bytes: head + [0x00] + OTSAttestation.bitcoinTag + [3, 0x85, 0x80, 0x00])
        #expect(padded.timestamp.attestations == [.bitcoin(height: 5)])
        let empty = try OTSFile(bytes: head + [0x00] + OTSAttestation.pendingTag + [1, 0])
        #expect(empty.timestamp.attestations == [.pending(uri: "")])
        // Serialized as the reference sorts: Bitcoin by height (200 before 300), before pending.
        var t = OTSTimestamp(message: Array(repeating: 0, count: 32))
        t.attestations = [.pending(uri: "https://b.example"), .bitcoin(height: 300), .bitcoin(height: 200), .pending(uri: "https://a.example/long")]
        let order = try OTSTimestamp(message: t.message, bytes: t.bytes).attestations
        #expect(order == [.bitcoin(height: 200), .bitcoin(height: 300), .pending(uri: "https://a.example/long"), .pending(uri: "https://b.example")])
        // A calendar's fresh answer keeps its promises only.
        var answer = OTSTimestamp(message: Array(repeating: 1, count: 32))
        answer.attestations = [.bitcoin(height: 9), .pending(uri: "https://c.example")]
        #expect(answer.pendingOnly?.allAttestations.map(\.attestation) == [.pending(uri: "https://c.example")])
        answer.attestations = [.bitcoin(height: 9)]
        #expect(answer.pendingOnly == nil)
        // 25,000 sibling branches: past the node budget, refused rather than held in memory.
        var many = head
        for i in 0..<25_000 { many += [0xff, 0xf0, 2, UInt8(i & 0xff), UInt8(i >> 8)] + btc(1) }
        many += btc(2)
        #expect(throws: OTSError.self) { try OTSFile(bytes: many) }
        // The sandbox-style header has no real work: a Bitcoin header check refuses it.
        let f = try Self.fixture()
        #expect(f.header.leadingZeroBits < OTSClient.minimumWorkBits)
    }
}
