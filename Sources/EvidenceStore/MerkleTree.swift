import COpenSSL
import EvidenceCore
import Foundation

/// The custody log as an RFC 9162 Merkle tree (§2.1): leaf i = SHA-256(0x00 ‖ the 32-byte hash of
/// event seq i+1), node = SHA-256(0x01 ‖ left ‖ right), the tree of n leaves split at the largest
/// power of two below n. Inclusion proofs (§2.1.3) and consistency proofs (§2.1.4) are lists of
/// 32-byte hashes, the leaf's (or the old tree's) sibling first, as C2SP `tlog-proof` writes them.
///
/// Every level is kept, one contiguous buffer each (2n hashes in all: 64 MB for a million events),
/// so the root of any prefix and every proof take O(log n) hashes once the tree is built.
public struct MerkleTree: Sendable {
    /// levels[0] holds the leaf hashes; levels[k] the hashes of the complete subtrees of 2^k leaves.
    private var levels: [[UInt8]]
    public private(set) var count: Int

    public init() { levels = [[]]; count = 0 }

    /// The tree over these event hashes (each 32 bytes), in sequence order.
    public init<S: Sequence>(eventHashes: S) where S.Element == [UInt8] {
        self.init()
        let hasher = MerkleHasher()
        for h in eventHashes { append(eventHash: h, hasher: hasher) }
    }

    /// Appends the leaf of one more event (its 32-byte hash) and every complete subtree it closes.
    public mutating func append(eventHash: [UInt8], hasher: MerkleHasher) {
        precondition(eventHash.count == 32, "an event hash is 32 bytes")
        levels[0].append(contentsOf: hasher.leaf(eventHash))
        count += 1
        var index = count - 1
        var level = 0
        while index & 1 == 1 {
            let pair = levels[level].withUnsafeBufferPointer { buf in
                hasher.node(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buf)[(index - 1) * 32 ..< (index + 1) * 32]))
            }
            level += 1
            index >>= 1
            if levels.count == level { levels.append([]) }
            levels[level].append(contentsOf: pair)
        }
    }

    private func stored(level: Int, index: Int) -> [UInt8] {
        Array(levels[level][index * 32 ..< (index + 1) * 32])
    }

    /// MTH(D[lo:hi]) (lo is a multiple of the largest power of two not above hi - lo, as in every
    /// range the proofs below split into; then it takes O(log n) hashes).
    func subtree(_ lo: Int, _ hi: Int, _ hasher: MerkleHasher) -> [UInt8] {
        let n = hi - lo
        precondition(n > 0 && hi <= count)
        if n & (n - 1) == 0, lo % n == 0 {
            return stored(level: n.trailingZeroBitCount, index: lo / n)
        }
        let k = Self.split(n)
        return hasher.node(subtree(lo, lo + k, hasher), subtree(lo + k, hi, hasher))
    }

    /// The root of the first `size` leaves: the tree as it was when the log had `size` events.
    /// The empty tree's root is SHA-256 of nothing.
    public func root(size: Int, hasher: MerkleHasher = MerkleHasher()) -> [UInt8] {
        precondition(size >= 0 && size <= count, "size \(size) outside the tree of \(count)")
        return size == 0 ? hasher.empty() : subtree(0, size, hasher)
    }

    /// The inclusion proof of leaf `index` in the tree of the first `size` leaves (RFC 9162
    /// §2.1.3.1 PATH), the leaf's sibling first.
    public func inclusionProof(index: Int, size: Int, hasher: MerkleHasher = MerkleHasher()) -> [[UInt8]] {
        precondition(index >= 0 && index < size && size <= count)
        var proof: [[UInt8]] = []
        func path(_ m: Int, _ lo: Int, _ hi: Int) {
            let n = hi - lo
            if n == 1 { return }
            let k = Self.split(n)
            if m < k {
                path(m, lo, lo + k); proof.append(subtree(lo + k, hi, hasher))
            } else {
                path(m - k, lo + k, hi); proof.append(subtree(lo, lo + k, hasher))
            }
        }
        path(index, 0, size)
        return proof
    }

    /// The consistency proof between the trees of the first `old` and `new` leaves (RFC 9162
    /// §2.1.4.1 PROOF, SUBPROOF with b = true at the top).
    public func consistencyProof(old: Int, new: Int, hasher: MerkleHasher = MerkleHasher()) -> [[UInt8]] {
        precondition(old > 0 && old <= new && new <= count)
        if old == new { return [] }
        var proof: [[UInt8]] = []
        func sub(_ m: Int, _ lo: Int, _ hi: Int, _ whole: Bool) {
            let n = hi - lo
            if m == n {
                if !whole { proof.append(subtree(lo, hi, hasher)) }
                return
            }
            let k = Self.split(n)
            if m <= k {
                sub(m, lo, lo + k, whole); proof.append(subtree(lo + k, hi, hasher))
            } else {
                sub(m - k, lo + k, hi, false); proof.append(subtree(lo, lo + k, hasher))
            }
        }
        sub(old, 0, new, true)
        return proof
    }

    /// The largest power of two smaller than n (n > 1).
    static func split(_ n: Int) -> Int { 1 << (Int.bitWidth - 1 - (n - 1).leadingZeroBitCount) }

    /// RFC 9162 §2.1.3.2: whether `proof` takes the leaf hash `leaf` at `index` to `root` in a tree
    /// of `size` leaves.
    public static func verifyInclusion(index: Int, size: Int, leaf: [UInt8], proof: [[UInt8]], root: [UInt8],
                                       hasher: MerkleHasher = MerkleHasher()) -> Bool {
        guard index >= 0, index < size, leaf.count == 32, root.count == 32, proof.allSatisfy({ $0.count == 32 }) else { return false }
        var fn = index
        var sn = size - 1
        var r = leaf
        for p in proof {
            if sn == 0 { return false }
            if fn & 1 == 1 || fn == sn {
                r = hasher.node(p, r)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 { fn >>= 1; sn >>= 1 }
                }
            } else {
                r = hasher.node(r, p)
            }
            fn >>= 1; sn >>= 1
        }
        return sn == 0 && r == root
    }

    /// RFC 9162 §2.1.4.2: whether `proof` shows the tree of `new` leaves with `newRoot` extends the
    /// tree of `old` leaves with `oldRoot`.
    public static func verifyConsistency(old: Int, new: Int, oldRoot: [UInt8], newRoot: [UInt8], proof: [[UInt8]],
                                         hasher: MerkleHasher = MerkleHasher()) -> Bool {
        guard old > 0, old <= new, oldRoot.count == 32, newRoot.count == 32, proof.allSatisfy({ $0.count == 32 }) else { return false }
        if old == new { return proof.isEmpty && oldRoot == newRoot }
        guard !proof.isEmpty else { return false }
        var path = proof
        // Step 1: when the old tree is a complete subtree, its root is the first node of the path.
        if old & (old - 1) == 0 { path.insert(oldRoot, at: 0) }
        guard let first = path.first else { return false }
        var fn = old - 1
        var sn = new - 1
        while fn & 1 == 1 { fn >>= 1; sn >>= 1 }
        var fr = first
        var sr = first
        for c in path.dropFirst() {
            if sn == 0 { return false }
            if fn & 1 == 1 || fn == sn {
                fr = hasher.node(c, fr)
                sr = hasher.node(c, sr)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 { fn >>= 1; sn >>= 1 }
                }
            } else {
                sr = hasher.node(sr, c)
            }
            fn >>= 1; sn >>= 1
        }
        return fr == oldRoot && sr == newRoot && sn == 0
    }
}

extension MerkleTree {
    /// The root of a growing tree without its levels: the roots of its complete subtrees, largest
    /// first (O(log n) memory; what an anchor needs to stamp the log's current checkpoint).
    public struct Accumulator: Sendable {
        private var peaks: [(size: Int, hash: [UInt8])] = []
        public private(set) var count = 0

        public init() {}

        public mutating func append(eventHash: [UInt8], hasher: MerkleHasher) {
            precondition(eventHash.count == 32, "an event hash is 32 bytes")
            var size = 1
            var h = hasher.leaf(eventHash)
            while let last = peaks.last, last.size == size {
                peaks.removeLast()
                h = hasher.node(last.hash, h)
                size *= 2
            }
            peaks.append((size, h))
            count += 1
        }

        /// MTH of everything appended: the peaks folded from the right.
        public func root(hasher: MerkleHasher) -> [UInt8] {
            guard var r = peaks.last?.hash else { return hasher.empty() }
            for p in peaks.dropLast().reversed() { r = hasher.node(p.hash, r) }
            return r
        }
    }
}

/// SHA-256 for the tree's many short inputs: one libcrypto context and one fetched algorithm,
/// reused (a fetch per hash costs more than the hash). Not thread-safe: one per thread.
public final class MerkleHasher {
    private let ctx: OpaquePointer
    private let md: OpaquePointer

    public init() {
        guard let c = EVP_MD_CTX_new(), let m = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("SHA-256: out of memory") }
        ctx = c; md = m
    }

    deinit { EVP_MD_CTX_free(ctx); EVP_MD_free(md) }

    private func digest(_ parts: UnsafeRawBufferPointer...) -> [UInt8] {
        precondition(EVP_DigestInit_ex2(ctx, md, nil) == 1, "EVP_DigestInit_ex2 failed")
        for p in parts where p.count > 0 {
            precondition(EVP_DigestUpdate(ctx, p.baseAddress, p.count) == 1, "EVP_DigestUpdate failed")
        }
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        precondition(EVP_DigestFinal_ex(ctx, &out, &len) == 1 && len == 32, "EVP_DigestFinal_ex failed")
        return out
    }

    private static let leafPrefix: [UInt8] = [0]
    private static let nodePrefix: [UInt8] = [1]

    /// SHA-256(0x00 ‖ data).
    public func leaf(_ data: [UInt8]) -> [UInt8] {
        Self.leafPrefix.withUnsafeBytes { p in data.withUnsafeBytes { d in digest(p, d) } }
    }

    /// SHA-256(0x01 ‖ left ‖ right).
    public func node(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        Self.nodePrefix.withUnsafeBytes { p in left.withUnsafeBytes { l in right.withUnsafeBytes { r in digest(p, l, r) } } }
    }

    /// SHA-256(0x01 ‖ 64 bytes: left and right side by side).
    func node(_ pair: UnsafeRawBufferPointer) -> [UInt8] {
        Self.nodePrefix.withUnsafeBytes { p in digest(p, pair) }
    }

    /// SHA-256 of nothing: the empty tree's root.
    public func empty() -> [UInt8] { digest() }

    /// SHA-256 of a string's UTF-8 bytes, with this hasher's reused context (a custody event's hash).
    public func sha256(_ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { digest(UnsafeRawBufferPointer($0)) }
    }
}
