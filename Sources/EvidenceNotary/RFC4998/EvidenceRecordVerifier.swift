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
    /// `at`: the date the newest time-stamp's certificates are checked as of (nil: now). Each
    /// earlier time-stamp is checked as of the time-stamp that renewed it (RFC 4998 §5.3): a
    /// record renewed before its first TSA certificate expired still verifies after it.
    public static func verify(record data: Data, digest: SHA256Digest, trust: TSATrust?, at: Date? = nil) throws(TimestampError) -> Verified {
        let record = try EvidenceRecord(der: [UInt8](data))
        guard record.chains.count == 1, let chain = record.chains.first else {
            throw TimestampError(.malformedResponse, "the evidence record has \(record.chains.count) hash-tree chains; "
                + "hash-tree renewal (RFC 4998 §5.2) is not read by this version")
        }
        // What each time-stamp claims and the root it must be over; then the signatures.
        var covered = digest
        var roots: [SHA256Digest] = []
        var claims: [TimestampToken] = []
        for (index, stamp) in chain.enumerated() {
            let root = try rootOf(stamp, covering: covered, index: index)
            let claim: TimestampToken
            do { claim = try TimestampVerifier.inspect(response: EvidenceRecord.response(wrapping: stamp.token), digest: root) } catch {
                throw TimestampError(error.kind, "archive time-stamp \(index + 1) of the evidence record: \(error.message)")
            }
            if let previous = claims.last, claim.genTime < previous.genTime {
                throw TimestampError(.verificationFailed, "archive time-stamp \(index + 1) is older than the one it renews")
            }
            roots.append(root)
            claims.append(claim)
            covered = SHA256Digest(bytes: HashTree.sha256(stamp.token))
        }
        guard let trust else { return Verified(tokens: claims, root: roots[0]) }
        if let at, let newest = claims.last, newest.genTime > at {
            throw TimestampError(.verificationFailed, "the record's newest time-stamp was made \(Timestamp.string(newest.genTime)), "
                + "after the date it is to be checked as of (\(Timestamp.string(at)))")
        }
        var tokens: [TimestampToken] = []
        for (index, stamp) in chain.enumerated() {
            let asOf = index + 1 < chain.count ? claims[index + 1].genTime : at
            do {
                tokens.append(try TimestampVerifier.verify(response: EvidenceRecord.response(wrapping: stamp.token), digest: roots[index],
                                                           trust: trust, at: asOf))
            } catch {
                let when = asOf.map { " as of \(ISO8601DateFormatter().string(from: $0))" } ?? ""
                throw TimestampError(error.kind, "archive time-stamp \(index + 1) of the evidence record\(when): \(error.message)")
            }
        }
        return Verified(tokens: tokens, root: roots[0])
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

/// Time-stamp renewal (RFC 4998 §5.2): a new archive time-stamp over a record's previous ones,
/// before the certificate of the newest expires. Records renewed together share one TSA request:
/// their renewal hashes are the leaves of one tree.
public enum EvidenceRecordRenewal {
    /// A record whose only time-stamp is `response`'s token over the data's hash itself (a
    /// per-item `.tsr` or a custody anchor): RFC 4998's form of a token without a tree.
    public static func record(fromResponse response: Data) throws(TimestampError) -> Data {
        Data(EvidenceRecord(reducedTree: [], token: try EvidenceRecord.token(ofResponse: response)).der())
    }

    /// The hashes the renewal covers, as Bouncy Castle's `renewTimeStamp` makes them: the SHA-256 of
    /// each time-stamp (`ContentInfo`, DER) of the newest chain, sorted; and the leaf they make.
    public static func renewalGroup(of record: Data) throws(TimestampError) -> (values: [[UInt8]], leaf: SHA256Digest) {
        let parsed = try EvidenceRecord(der: [UInt8](record))
        guard let chain = parsed.chains.last else { throw TimestampError(.malformedResponse, "an evidence record without a chain") }
        let values = chain.map { HashTree.sha256($0.token) }.sorted(by: HashTree.precedes)
        return (values, SHA256Digest(bytes: HashTree.nodeHash(values)))
    }

    /// The signing certificate's expiry of the record's newest time-stamp.
    public static func expiry(of record: Data) -> Date? {
        guard let parsed = try? EvidenceRecord(der: [UInt8](record)), let stamp = parsed.chains.last?.last else { return nil }
        return TSACertificates.signerNotAfter(response: EvidenceRecord.response(wrapping: stamp.token))
    }

    /// Each record with a new archive time-stamp appended to its newest chain: `response` is the
    /// TSA's reply over the root of `tree`, whose leaves are the records' renewal leaves. Every
    /// renewed record is verified against `trust` before it is returned.
    public static func renew(_ records: [Data], response: Data, tree: HashTree, trust: TSATrust,
                             digests: [SHA256Digest]) throws(TimestampError) -> [Data] {
        let token = try EvidenceRecord.token(ofResponse: response)
        var renewed: [Data] = []
        for (record, digest) in zip(records, digests) {
            let group = try renewalGroup(of: record)
            guard var path = tree.path(for: group.leaf) else {
                throw TimestampError(.requestFailed, "a record's renewal hash is not a leaf of the renewal tree")
            }
            if group.values.count > 1 || path.isEmpty { path = [group.values] + path.dropFirst() }
            if path == [group.values], group.values.count == 1 { path = [] }
            var parsed = try EvidenceRecord(der: [UInt8](record))
            parsed.chains[parsed.chains.count - 1].append(EvidenceRecord.ArchiveTimeStamp(reducedTree: path, token: token))
            let der = Data(parsed.der())
            _ = try EvidenceRecordVerifier.verify(record: der, digest: digest, trust: trust)
            renewed.append(der)
        }
        return renewed
    }
}
