import EvidenceCore
import Foundation

/// Checks an RFC 4998 evidence record against the SHA-256 digest of the data it claims to cover
/// (RFC 4998 §5.3): the first archive time-stamp's reduced hash tree must hold the digest in its
/// first list and lead to the root its token is over; each later time-stamp of the chain must
/// cover the previous one's token (time-stamp renewal); every token must verify against `trust`
/// (signature, ESS binding, chain to the configured CA). Trust never comes from the record.
public enum EvidenceRecordVerifier {
    public struct Verified: Sendable {
        /// The tokens of the chain, oldest first: the first is the batch's time-stamp.
        public let tokens: [TimestampToken]
        /// The root the first token is over (the digest itself for a record without a tree).
        public let root: SHA256Digest
    }

    /// `trust` nil only shows what the record claims (`inspect`): never for accepting it.
    public static func verify(record data: Data, digest: SHA256Digest, trust: TSATrust?) throws(TimestampError) -> Verified {
        let record = try EvidenceRecord(der: [UInt8](data))
        guard record.chains.count == 1, let chain = record.chains.first else {
            throw TimestampError(.malformedResponse, "the evidence record has \(record.chains.count) hash-tree chains; "
                + "hash-tree renewal (RFC 4998 §5.2) is not read by this version")
        }
        var covered = digest
        var tokens: [TimestampToken] = []
        var firstRoot: SHA256Digest?
        for (index, stamp) in chain.enumerated() {
            let root = try rootOf(stamp, covering: covered, index: index)
            let response = EvidenceRecord.response(wrapping: stamp.token)
            let token: TimestampToken
            do {
                if let trust {
                    token = try TimestampVerifier.verify(response: response, digest: root, trust: trust)
                } else {
                    token = try TimestampVerifier.inspect(response: response, digest: root)
                }
            } catch {
                throw TimestampError(error.kind, "archive time-stamp \(index + 1) of the evidence record: \(error.message)")
            }
            if let previous = tokens.last, token.genTime < previous.genTime {
                throw TimestampError(.verificationFailed, "archive time-stamp \(index + 1) is older than the one it renews")
            }
            tokens.append(token)
            if firstRoot == nil { firstRoot = root }
            covered = SHA256Digest(bytes: HashTree.sha256(stamp.token))
        }
        return Verified(tokens: tokens, root: firstRoot ?? digest)
    }

    /// The root `stamp` leads to from `covered`, which must be in its reduced tree's first list.
    static func rootOf(_ stamp: EvidenceRecord.ArchiveTimeStamp, covering covered: SHA256Digest, index: Int) throws(TimestampError) -> SHA256Digest {
        guard !stamp.reducedTree.isEmpty else { return covered }
        guard let bytes = Hex.decode(covered.hex), stamp.reducedTree[0].contains(bytes) else {
            let what = index == 0 ? "the data's SHA-256 \(covered.hex)" : "the previous time-stamp's SHA-256 \(covered.hex)"
            throw TimestampError(.imprintMismatch, "archive time-stamp \(index + 1) of the evidence record does not cover \(what)")
        }
        guard let root = HashTree.root(of: stamp.reducedTree) else {
            throw TimestampError(.malformedResponse, "archive time-stamp \(index + 1) has an empty list in its reduced hash tree")
        }
        return SHA256Digest(bytes: root)
    }

    /// The record of one batch member: its reduced tree in `tree` and the batch's token from the
    /// TSA's reply. Checked before it is returned, as a reader would check it.
    public static func make(response: Data, tree: HashTree, leaf: SHA256Digest, trust: TSATrust) throws(TimestampError) -> (record: Data, token: TimestampToken) {
        guard let path = tree.path(for: leaf) else {
            throw TimestampError(.requestFailed, "\(leaf.hex) is not a leaf of the batch's hash tree")
        }
        let record = Data(EvidenceRecord(reducedTree: path, token: try EvidenceRecord.token(ofResponse: response)).der())
        let verified = try verify(record: record, digest: leaf, trust: trust)
        return (record, verified.tokens[0])
    }
}

extension EvidenceRecordVerifier {
    /// The records of every leaf of `tree` from one TSA reply over its root: the token is verified
    /// once against `trust`, and each record is read back and must lead to that root from its leaf.
    public static func makeAll(response: Data, tree: HashTree, trust: TSATrust) throws(TimestampError) -> (token: TimestampToken, records: [SHA256Digest: Data]) {
        guard let root = tree.root, let leaves = tree.levels.first else {
            throw TimestampError(.requestFailed, "an empty batch has no root")
        }
        let token = try TimestampVerifier.verify(response: response, digest: root, trust: trust)
        let content = try EvidenceRecord.token(ofResponse: response)
        var records: [SHA256Digest: Data] = [:]
        for bytes in leaves {
            let leaf = SHA256Digest(bytes: bytes)
            guard let path = tree.path(for: leaf) else {
                throw TimestampError(.requestFailed, "\(leaf.hex) is not a leaf of the batch's hash tree")
            }
            let der = EvidenceRecord(reducedTree: path, token: content).der()
            let back = try EvidenceRecord(der: der)
            guard back.chains.count == 1, let stamp = back.chains.first?.first, stamp.token == content,
                  try rootOf(stamp, covering: leaf, index: 0) == root else {
                throw TimestampError(.requestFailed, "the evidence record of \(leaf.hex) does not lead to the batch's root")
            }
            records[leaf] = Data(der)
        }
        return (token, records)
    }
}
