import EvidenceCore
import Foundation
import SwiftASN1

/// An RFC 4998 `EvidenceRecord` (DER), as this program writes and reads it:
///
///     EvidenceRecord ::= SEQUENCE { version INTEGER (1), digestAlgorithms SEQUENCE OF AlgorithmIdentifier,
///                                   cryptoInfos [0] …, encryptionInfo [1] …,        -- never written, refused
///                                   archiveTimeStampSequence SEQUENCE OF ArchiveTimeStampChain }
///     ArchiveTimeStampChain ::= SEQUENCE OF ArchiveTimeStamp
///     ArchiveTimeStamp ::= SEQUENCE { digestAlgorithm [0] IMPLICIT AlgorithmIdentifier OPTIONAL,
///                                     attributes [1] …,                             -- never written, refused
///                                     reducedHashtree [2] IMPLICIT SEQUENCE OF PartialHashtree OPTIONAL,
///                                     timeStamp ContentInfo }                       -- the RFC 3161 token
///     PartialHashtree ::= SEQUENCE OF OCTET STRING
///
/// SHA-256 and SHA-512 (a hash-tree renewal's chain, RFC 4998 §5.2) are written and accepted,
/// nothing else. Parsing is strict DER (swift-asn1): trailing bytes, a wrong tag, another
/// version or algorithm are refused with what was found.
public struct EvidenceRecord: Sendable, Equatable {
    public struct ArchiveTimeStamp: Sendable, Equatable {
        /// The hash of its tree and of what it covers (the same in every time-stamp of a chain).
        public var algorithm: Imprint.Algorithm = .sha256
        /// The reduced hash tree; empty when the time-stamp is over the covered hash itself.
        public var reducedTree: [[[UInt8]]]
        /// DER `ContentInfo`: the TSA's token (CMS SignedData over a TSTInfo).
        public var token: [UInt8]

        public init(reducedTree: [[[UInt8]]], token: [UInt8], algorithm: Imprint.Algorithm = .sha256) {
            self.reducedTree = reducedTree; self.token = token; self.algorithm = algorithm
        }
    }

    /// Archive time-stamp chains, oldest first (a chain grows by time-stamp renewal, a new chain
    /// starts with a hash-tree renewal, RFC 4998 §5.2).
    public var chains: [[ArchiveTimeStamp]] {
        // A chain changed here is no longer the one read: its DER is written afresh.
        didSet {
            parsedChainDER = parsedChainDER.indices.map { i in
                i < chains.count && i < oldValue.count && chains[i] == oldValue[i] ? parsedChainDER[i] : nil
            }
        }
    }
    /// Each chain's DER as read (nil for chains built here): what a hash-tree renewal covers is
    /// these bytes exactly.
    var parsedChainDER: [[UInt8]?] = []

    public init(chains: [[ArchiveTimeStamp]]) { self.chains = chains }

    /// Records are equal when their chains are (how their DER was read does not matter).
    public static func == (a: EvidenceRecord, b: EvidenceRecord) -> Bool { a.chains == b.chains }

    /// Time-stamp renewal: `stamp` appended to the newest chain (whose DER as read no longer holds).
    public mutating func appendToNewestChain(_ stamp: ArchiveTimeStamp) {
        chains[chains.count - 1].append(stamp)
    }

    /// Hash-tree renewal: a new chain of `stamp`.
    public mutating func appendChain(_ stamp: ArchiveTimeStamp) {
        chains.append([stamp])
    }

    /// A record of one archive time-stamp: `token` over the root `reducedTree` leads to.
    public init(reducedTree: [[[UInt8]]], token: [UInt8]) {
        chains = [[ArchiveTimeStamp(reducedTree: reducedTree, token: token)]]
    }

    // MARK: - DER

    static let sha256OID: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]

    public func der() -> [UInt8] {
        var algorithms: [Imprint.Algorithm] = []
        for chain in chains { for stamp in chain where !algorithms.contains(stamp.algorithm) { algorithms.append(stamp.algorithm) } }
        if algorithms.isEmpty { algorithms = [.sha256] }
        var s = DER.Serializer()
        // Serializing values we built ourselves cannot fail.
        try! s.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(1)
            try s.appendConstructedNode(identifier: .sequence) { s in
                for a in algorithms { try Self.serializeAlgorithm(&s, a, identifier: .sequence) }
            }
            s.serializeRawBytes(sequenceDER(chainCount: chains.count))
        }
        return s.serializedBytes
    }

    /// DER of the ArchiveTimeStampSequence of the first `chainCount` chains: with all of them,
    /// the record's own; with the chains before a hash-tree renewal, what that renewal covers.
    public func sequenceDER(chainCount: Int) -> [UInt8] {
        var s = DER.Serializer()
        s.appendConstructedNode(identifier: .sequence) { (s: inout DER.Serializer) in
            for i in 0..<chainCount { s.serializeRawBytes(chainDER(i)) }
        }
        return s.serializedBytes
    }

    /// One chain's DER: as read when it was read, else as this program writes it.
    func chainDER(_ index: Int) -> [UInt8] {
        if index < parsedChainDER.count, let raw = parsedChainDER[index] { return raw }
        var s = DER.Serializer()
        try! s.appendConstructedNode(identifier: .sequence) { s in
            for stamp in chains[index] {
                try s.appendConstructedNode(identifier: .sequence) { s in
                    try Self.serializeAlgorithm(&s, stamp.algorithm, identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific))
                    if !stamp.reducedTree.isEmpty {
                        try s.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific)) { s in
                            for list in stamp.reducedTree {
                                try s.appendConstructedNode(identifier: .sequence) { s in
                                    for value in list { try s.serialize(ASN1OctetString(contentBytes: value[...])) }
                                }
                            }
                        }
                    }
                    s.serializeRawBytes(stamp.token)
                }
            }
        }
        return s.serializedBytes
    }

    static let sha512OID: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 3]

    /// AlgorithmIdentifier { id-sha256 or id-sha512, NULL }, as OpenSSL writes the time-stamp
    /// request's imprint.
    private static func serializeAlgorithm(_ s: inout DER.Serializer, _ algorithm: Imprint.Algorithm, identifier: ASN1Identifier) throws {
        try s.appendConstructedNode(identifier: identifier) { s in
            try s.serialize(algorithm == .sha256 ? sha256OID : sha512OID)
            try s.serialize(ASN1Null())
        }
    }

    public init(der bytes: [UInt8]) throws(TimestampError) {
        do {
            let root = try DER.parse(bytes)
            guard root.encodedBytes.count == bytes.count else { throw Refusal("trailing bytes after the record") }
            (chains, parsedChainDER) = try DER.sequence(root, identifier: .sequence) { nodes -> ([[ArchiveTimeStamp]], [[UInt8]?]) in
                let version = try Int(derEncoded: &nodes)
                guard version == 1 else { throw Refusal("version \(version), not 1") }
                guard let algorithms = nodes.next() else { throw Refusal("no digestAlgorithms") }
                let found = try Self.children(algorithms, .sequence)
                guard !found.isEmpty else { throw Refusal("empty digestAlgorithms") }
                for node in found { _ = try Self.readAlgorithm(node, identifier: .sequence) }
                guard let sequence = nodes.next() else { throw Refusal("no archiveTimeStampSequence") }
                guard sequence.identifier == .sequence else {
                    throw Refusal("cryptoInfos or encryptionInfo (tag \(sequence.identifier)) are not supported")
                }
                let chainNodes = try Self.children(sequence, .sequence)
                let chains = try chainNodes.map { chain in
                    try Self.children(chain, .sequence).map(Self.parseStamp)
                }
                guard !chains.isEmpty, !chains.contains(where: \.isEmpty) else { throw Refusal("an empty archive time-stamp chain") }
                for chain in chains where chain.contains(where: { $0.algorithm != chain[0].algorithm }) {
                    throw Refusal("the time-stamps of one chain use different hash algorithms")
                }
                return (chains, chainNodes.map { Array($0.encodedBytes) })
            }
        } catch let refusal as Refusal {
            throw TimestampError(.malformedResponse, "not an RFC 4998 evidence record of this program: \(refusal.reason)")
        } catch {
            throw TimestampError(.malformedResponse, "not an RFC 4998 evidence record (DER): \(error)")
        }
    }

    /// The elements of a SEQUENCE (OF) node with this identifier.
    private static func children(_ node: ASN1Node, _ identifier: ASN1Identifier) throws -> [ASN1Node] {
        try DER.sequence(node, identifier: identifier) { nodes in
            var all: [ASN1Node] = []
            while let next = nodes.next() { all.append(next) }
            return all
        }
    }

    struct Refusal: Error { let reason: String; init(_ reason: String) { self.reason = reason } }

    private static func readAlgorithm(_ node: ASN1Node, identifier: ASN1Identifier) throws -> Imprint.Algorithm {
        try DER.sequence(node, identifier: identifier) { nodes in
            let oid = try ASN1ObjectIdentifier(derEncoded: &nodes)
            guard oid == sha256OID || oid == sha512OID else {
                throw Refusal("digest algorithm \(oid), only SHA-256 (\(sha256OID)) and SHA-512 (\(sha512OID)) are accepted")
            }
            if let parameters = nodes.next() {
                _ = try ASN1Null(derEncoded: parameters)
            }
            return oid == sha256OID ? .sha256 : .sha512
        }
    }

    private static func parseStamp(_ node: ASN1Node) throws -> ArchiveTimeStamp {
        try DER.sequence(node, identifier: .sequence) { nodes in
            var tree: [[[UInt8]]] = []
            var algorithm = Imprint.Algorithm.sha256
            var token: [UInt8]?
            var lastTag: UInt = 0
            var seen = false
            while let child = nodes.next() {
                guard token == nil else { throw Refusal("fields after the time-stamp token") }
                if child.identifier.tagClass == .contextSpecific {
                    let tag = child.identifier.tagNumber
                    guard !seen || tag > lastTag else { throw Refusal("archive time-stamp fields out of order") }
                    seen = true; lastTag = tag
                    switch tag {
                    case 0: algorithm = try readAlgorithm(child, identifier: child.identifier)
                    case 2:
                        tree = try Self.children(child, child.identifier).map { list in
                            let values = try DER.sequence(of: ASN1OctetString.self, identifier: .sequence, rootNode: list).map { Array($0.bytes) }
                            guard !values.isEmpty, values.allSatisfy({ $0.count == algorithm.size }) else {
                                throw Refusal("a partial hash tree that is not a list of \(algorithm.size)-byte \(algorithm.label) values")
                            }
                            return values
                        }
                        guard !tree.isEmpty else { throw Refusal("an empty reduced hash tree") }
                    default: throw Refusal("archive time-stamp field [\(tag)] is not supported")
                    }
                } else {
                    guard child.identifier == .sequence else { throw Refusal("the time-stamp is not a ContentInfo") }
                    token = Array(child.encodedBytes)
                }
            }
            guard let token else { throw Refusal("an archive time-stamp without its time-stamp token") }
            return ArchiveTimeStamp(reducedTree: tree, token: token, algorithm: algorithm)
        }
    }

    // MARK: - Tokens and replies

    /// The token (`ContentInfo`) inside a DER `TimeStampResp`.
    public static func token(ofResponse response: Data) throws(TimestampError) -> [UInt8] {
        do {
            let bytes = [UInt8](response)
            let root = try DER.parse(bytes)
            guard root.encodedBytes.count == bytes.count else { throw Refusal("trailing bytes") }
            return try DER.sequence(root, identifier: .sequence) { nodes in
                guard nodes.next()?.identifier == .sequence, let token = nodes.next(), token.identifier == .sequence else {
                    throw Refusal("no time-stamp token")
                }
                return Array(token.encodedBytes)
            }
        } catch {
            throw TimestampError(.malformedResponse, "not a TimeStampResp with a token: \(error)")
        }
    }

    /// A granted `TimeStampResp` around `token`, so the RFC 3161 verifier checks a bare token.
    public static func response(wrapping token: [UInt8]) -> Data {
        var s = DER.Serializer()
        try! s.appendConstructedNode(identifier: .sequence) { s in
            try s.appendConstructedNode(identifier: .sequence) { s in try s.serialize(0) }
            s.serializeRawBytes(token)
        }
        return Data(s.serializedBytes)
    }
}
