import EvidenceCore
@testable import EvidenceStore
import Foundation
import Testing

/// RFC 9162 §2.1 straight from its definitions (recursion on D[0:n], no stored levels), with the
/// store's streaming hasher: what the tree's stored-level shortcuts must agree with.
private enum Reference {
    static func h(_ parts: [UInt8]...) -> [UInt8] {
        let hasher = SHA256Hasher()
        for p in parts { hasher.update(p) }
        return Hex.decode(hasher.finalize().hex)!
    }
    static func k(_ n: Int) -> Int { var k = 1; while k * 2 < n { k *= 2 }; return k }
    static func mth(_ d: ArraySlice<[UInt8]>) -> [UInt8] {
        if d.isEmpty { return h() }
        if d.count == 1 { return h([0], d.first!) }
        let k = k(d.count)
        return h([1], mth(d.prefix(k)), mth(d.dropFirst(k)))
    }
    static func path(_ m: Int, _ d: ArraySlice<[UInt8]>) -> [[UInt8]] {
        if d.count == 1 { return [] }
        let k = k(d.count)
        return m < k ? path(m, d.prefix(k)) + [mth(d.dropFirst(k))] : path(m - k, d.dropFirst(k)) + [mth(d.prefix(k))]
    }
    static func subproof(_ m: Int, _ d: ArraySlice<[UInt8]>, _ b: Bool) -> [[UInt8]] {
        if m == d.count { return b ? [] : [mth(d)] }
        let k = k(d.count)
        return m <= k ? subproof(m, d.prefix(k), b) + [mth(d.dropFirst(k))] : subproof(m - k, d.dropFirst(k), false) + [mth(d.prefix(k))]
    }
}

@Suite struct MerkleTreeTests {
    static let events: [[UInt8]] = (0..<70).map { i in Hex.decode(SHA256Hasher.hash(Data("event \(i)".utf8)).hex)! }

    @Test("roots, inclusion and consistency proofs are RFC 9162's for every size up to 34, and each verifies")
    func agreesWithTheDefinitions() {
        let tree = MerkleTree(eventHashes: Self.events)
        let hasher = MerkleHasher()
        #expect(tree.root(size: 0) == Reference.h())
        var acc = MerkleTree.Accumulator()
        for n in 1...34 {
            let d = Self.events[0..<n]
            let root = Reference.mth(d)
            #expect(tree.root(size: n) == root, "root of \(n)")
            acc.append(eventHash: Self.events[n - 1], hasher: hasher)
            #expect(acc.root(hasher: hasher) == root, "accumulated root of \(n)")
            for m in 0..<n {
                let proof = tree.inclusionProof(index: m, size: n)
                #expect(proof == Reference.path(m, d), "PATH(\(m), D[\(n)])")
                #expect(MerkleTree.verifyInclusion(index: m, size: n, leaf: hasher.leaf(Self.events[m]), proof: proof, root: root))
            }
            for old in 1...n {
                let proof = tree.consistencyProof(old: old, new: n)
                #expect(proof == (old == n ? [] : Reference.subproof(old, d, true)), "PROOF(\(old), D[\(n)])")
                #expect(MerkleTree.verifyConsistency(old: old, new: n, oldRoot: Reference.mth(Self.events[0..<old]), newRoot: root, proof: proof))
            }
        }
    }

    @Test("an attacker's proofs: every flipped bit of every hash, another index, another size, a shortened or lengthened path, a rewritten prefix")
    func forgedProofsFail() {
        let tree = MerkleTree(eventHashes: Self.events)
        let hasher = MerkleHasher()
        let n = 45, m = 13
        let root = tree.root(size: n)
        let leaf = hasher.leaf(Self.events[m])
        let proof = tree.inclusionProof(index: m, size: n)
        #expect(MerkleTree.verifyInclusion(index: m, size: n, leaf: leaf, proof: proof, root: root))
        for i in proof.indices {
            for byte in 0..<32 {
                var bad = proof
                bad[i][byte] ^= 1 << UInt8(byte % 8)
                #expect(!MerkleTree.verifyInclusion(index: m, size: n, leaf: leaf, proof: bad, root: root), "hash \(i) byte \(byte)")
            }
        }
        #expect(!MerkleTree.verifyInclusion(index: m + 1, size: n, leaf: leaf, proof: proof, root: root))
        #expect(!MerkleTree.verifyInclusion(index: m, size: n + 1, leaf: leaf, proof: proof, root: tree.root(size: n + 1)))
        #expect(!MerkleTree.verifyInclusion(index: m, size: n, leaf: hasher.leaf(Self.events[m + 1]), proof: proof, root: root))
        #expect(!MerkleTree.verifyInclusion(index: m, size: n, leaf: leaf, proof: Array(proof.dropLast()), root: root))
        #expect(!MerkleTree.verifyInclusion(index: m, size: n, leaf: leaf, proof: proof + [root], root: root))
        #expect(!MerkleTree.verifyInclusion(index: n, size: n, leaf: leaf, proof: proof, root: root))
        // The event's hash itself as a leaf (no 0x00 prefix): a second-preimage attempt.
        #expect(!MerkleTree.verifyInclusion(index: m, size: n, leaf: Self.events[m], proof: proof, root: root))

        let old = 21
        let oldRoot = tree.root(size: old)
        let consistency = tree.consistencyProof(old: old, new: n)
        #expect(MerkleTree.verifyConsistency(old: old, new: n, oldRoot: oldRoot, newRoot: root, proof: consistency))
        for i in consistency.indices {
            for byte in 0..<32 {
                var bad = consistency
                bad[i][byte] ^= 1 << UInt8(byte % 8)
                #expect(!MerkleTree.verifyConsistency(old: old, new: n, oldRoot: oldRoot, newRoot: root, proof: bad), "hash \(i) byte \(byte)")
            }
        }
        // A log whose event #5 was rewritten after the old checkpoint: not consistent with it.
        var rewritten = Self.events
        rewritten[4] = Hex.decode(SHA256Hasher.hash(Data("rewritten".utf8)).hex)!
        let other = MerkleTree(eventHashes: rewritten)
        #expect(!MerkleTree.verifyConsistency(old: old, new: n, oldRoot: oldRoot, newRoot: other.root(size: n),
                                              proof: other.consistencyProof(old: old, new: n)))
        #expect(!MerkleTree.verifyConsistency(old: old, new: n, oldRoot: oldRoot, newRoot: root, proof: []))
        #expect(!MerkleTree.verifyConsistency(old: 16, new: n, oldRoot: tree.root(size: 16), newRoot: root, proof: []))
    }

    @Test("checkpoints and tlog-proofs: written as C2SP says, read back, and hostile text refused with the reason")
    func formats() throws {
        let tree = MerkleTree(eventHashes: Self.events)
        let c = Checkpoint(origin: "example.org/custody", size: 9, root: tree.root(size: 9))
        #expect(c.text == "example.org/custody\n9\n\(Data(tree.root(size: 9)).base64EncodedString())\n")
        #expect(try Checkpoint.parse(c.bytes) == c)
        let proof = TlogProof(index: 3, hashes: tree.inclusionProof(index: 3, size: 9), checkpoint: c.bytes)
        let text = String(decoding: proof.bytes, as: UTF8.self)
        #expect(text.hasPrefix("c2sp.org/tlog-proof@v1\nindex 3\n") && text.hasSuffix("\n\n" + c.text))
        #expect(try TlogProof.parse(proof.bytes) == proof)
        let withExtra = Data(text.replacingOccurrences(of: "@v1\n", with: "@v1\nextra aGk=\n").utf8)
        #expect(try TlogProof.parse(withExtra) == proof)

        for bad in ["example.org/custody\n9\n", "example.org/custody\n09\n\(c.text.split(separator: "\n")[2])\n",
                    "example.org/custody\n9\nAAAA\n", "exa mple\n9\n\(c.text.split(separator: "\n")[2])\n", c.text + "extension\n",
                    "a\u{9b}2Jb\n9\n\(c.text.split(separator: "\n")[2])\n", "a\u{2003}b\n9\n\(c.text.split(separator: "\n")[2])\n",
                    String(c.text.dropLast())] {
            #expect(throws: Checkpoint.FormatError.self, "\(bad.debugDescription)") { try Checkpoint.parse(Data(bad.utf8)) }
        }
        // The refusal quotes the hostile line with its control characters escaped (it reaches a terminal).
        var quoted = ""
        do { _ = try Checkpoint.parse(Data("a\u{1b}[2Jb\n9\n\(c.text.split(separator: "\n")[2])\n".utf8)) } catch { quoted = error.description }
        #expect(quoted.contains("is not a log name") && !quoted.contains("\u{1b}"), "\(quoted.debugDescription)")
        for bad in [text.replacingOccurrences(of: "index 3", with: "index 03"), text.replacingOccurrences(of: "@v1", with: "@v2"),
                    text.replacingOccurrences(of: "\n\n", with: "\n"), text.replacingOccurrences(of: "index 3\n", with: "index 3\n!!!!\n")] {
            #expect(throws: Checkpoint.FormatError.self, "\(bad.debugDescription)") { try TlogProof.parse(Data(bad.utf8)) }
        }
    }
}
