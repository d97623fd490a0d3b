import COpenSSL
import EvidenceCore
import Foundation

/// The hash tree of one batch (RFC 4998 §4.2, as Bouncy Castle's `BinaryTreeRootCalculator`
/// builds it): the leaves are the members' SHA-256 digests in ascending byte order; each level
/// pairs neighbours and hashes the smaller value first; an odd last node is carried up unchanged.
/// The root is what the TSA time-stamps.
public struct HashTree: Sendable {
    /// Level 0 is the sorted, distinct leaves; the last level holds the root alone.
    public let levels: [[[UInt8]]]
    /// The tree's hash: SHA-256, or SHA-512 for a hash-tree renewal's chain.
    public let algorithm: Imprint.Algorithm

    public init(leaves: [SHA256Digest]) {
        self.init(values: leaves.map { Hex.decode($0.hex) ?? [] }, algorithm: .sha256)
    }

    /// A tree of `algorithm` over hash values of that algorithm's size.
    public init(values: [[UInt8]], algorithm: Imprint.Algorithm) {
        var row = Array(Set(values)).sorted(by: HashTree.precedes)
        var levels = [row]
        while row.count > 1 {
            var next: [[UInt8]] = []
            next.reserveCapacity(row.count / 2 + 1)
            var i = 0
            while i + 1 < row.count { next.append(HashTree.branch(row[i], row[i + 1], algorithm: algorithm)); i += 2 }
            if row.count % 2 == 1 { next.append(row[row.count - 1]) }
            levels.append(next)
            row = next
        }
        self.levels = levels
        self.algorithm = algorithm
    }

    public var root: SHA256Digest? { algorithm == .sha256 ? levels.last?.first.map { SHA256Digest(bytes: $0) } : nil }
    /// The root as the imprint a TSA time-stamps.
    public var rootImprint: Imprint? { levels.last?.first.flatMap { Imprint(algorithm: algorithm, bytes: $0) } }
    public var leafCount: Int { levels.first?.count ?? 0 }

    /// The reduced hash tree of `leaf` (RFC 4998 §4.2) in the form Bouncy Castle's generator
    /// writes: the first list holds the leaf alone, each later list one sibling on the way up.
    /// (A first list holding the leaf's sibling too would make the record prove the sibling's
    /// file as well: a record moved to that file would verify.) Nil for a leaf not in the tree;
    /// empty for a tree of one leaf (the time-stamp is then over the leaf itself and the record
    /// carries no reduced tree).
    public func path(for leaf: SHA256Digest) -> [[[UInt8]]]? {
        guard let bytes = Hex.decode(leaf.hex) else { return nil }
        return path(forValue: bytes)
    }

    /// `path(for:)` of a leaf given as its bytes (of the tree's algorithm).
    public func path(forValue bytes: [UInt8]) -> [[[UInt8]]]? {
        guard var index = levels.first?.firstIndex(of: bytes) else { return nil }
        if leafCount == 1 { return [] }
        var lists: [[[UInt8]]] = [[bytes]]
        for level in 0..<(levels.count - 1) {
            let row = levels[level]
            let sibling = index ^ 1
            if sibling < row.count { lists.append([row[sibling]]) }
            index /= 2
        }
        return lists
    }

    /// The root a reduced hash tree leads to (Bouncy Castle's `recoverRootHash`): the first
    /// list's values hashed in ascending order (one value is itself), then each later list's
    /// node paired with it.
    public static func root(of lists: [[[UInt8]]], algorithm: Imprint.Algorithm = .sha256) -> [UInt8]? {
        guard let first = lists.first, !first.isEmpty else { return nil }
        var node = nodeHash(first, algorithm: algorithm)
        for list in lists.dropFirst() {
            guard !list.isEmpty else { return nil }
            node = branch(node, nodeHash(list, algorithm: algorithm), algorithm: algorithm)
        }
        return node
    }

    /// One list of a reduced tree as a node: a single value is itself, several are hashed
    /// together in ascending order.
    static func nodeHash(_ values: [[UInt8]], algorithm: Imprint.Algorithm = .sha256) -> [UInt8] {
        if values.count == 1 { return values[0] }
        return algorithm.hash(values.sorted(by: precedes).flatMap { $0 })
    }

    /// The hash of the two values, the smaller (unsigned bytes, then length) first.
    public static func branch(_ a: [UInt8], _ b: [UInt8], algorithm: Imprint.Algorithm = .sha256) -> [UInt8] {
        precedes(b, a) ? algorithm.hash(b + a) : algorithm.hash(a + b)
    }

    /// Ascending unsigned byte order, a prefix first (Bouncy Castle's `ByteArrayComparator`).
    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        for (x, y) in zip(a, b) where x != y { return x < y }
        return a.count < b.count
    }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &out, &length, evidence_evp_sha256(), nil)
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return out
    }
}
