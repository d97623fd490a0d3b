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
        /// How many of `tokens` each chain holds (more than one chain: hash-tree renewals).
        public var chainLengths: [Int] = []
    }

    /// `trust` nil only shows what the record claims (`inspect`): never for accepting it.
    /// `at`: the date the newest time-stamp's certificates are checked as of (nil: now). Each
    /// earlier time-stamp is checked as of the time-stamp that renewed it (RFC 4998 §5.3): a
    /// record renewed before its first TSA certificate expired still verifies after it.
    /// `sha512`: the data's SHA-512, needed for a record with a hash-tree renewal (§5.2): that
    /// chain's first time-stamp covers SHA-512(SHA-512(data) ‖ SHA-512(the chains before it)).
    public static func verify(record data: Data, digest: SHA256Digest, trust: TSATrust?, at: Date? = nil,
                              sha512: [UInt8]? = nil) throws(TimestampError) -> Verified {
        let record = try EvidenceRecord(der: [UInt8](data))
        guard record.chains.first?.first?.algorithm == .sha256 else {
            throw TimestampError(.malformedResponse, "the evidence record's first chain is not SHA-256")
        }
        // What each time-stamp claims and the root it must be over; then the signatures.
        var roots: [Imprint] = []
        var claims: [TimestampToken] = []
        var stamps: [EvidenceRecord.ArchiveTimeStamp] = []
        for (k, chain) in record.chains.enumerated() {
            let algorithm = chain[0].algorithm
            let dataHash: [UInt8]
            switch algorithm {
            case .sha256: dataHash = Hex.decode(digest.hex) ?? []
            case .sha512:
                guard let sha512, sha512.count == 64 else {
                    throw TimestampError(.requestFailed, "the evidence record was hash-renewed to SHA-512: checking it needs the data's SHA-512")
                }
                dataHash = sha512
            }
            // The first chain covers the data's hash; a later one the data's hash with the chains before it.
            var covered = k == 0 ? dataHash : algorithm.hash(dataHash + algorithm.hash(record.sequenceDER(chainCount: k)))
            for stamp in chain {
                let index = stamps.count
                let root = try rootOf(stamp, covering: covered, algorithm: algorithm, index: index, first: k == 0 ? nil : k)
                let claim: TimestampToken
                do { claim = try TimestampVerifier.inspect(response: EvidenceRecord.response(wrapping: stamp.token), imprint: root) } catch {
                    throw TimestampError(error.kind, "archive time-stamp \(index + 1) of the evidence record: \(error.message)")
                }
                if let previous = claims.last, claim.genTime < previous.genTime {
                    throw TimestampError(.verificationFailed, "archive time-stamp \(index + 1) is older than the one it renews")
                }
                roots.append(root)
                claims.append(claim)
                stamps.append(stamp)
                covered = algorithm.hash(stamp.token)
            }
        }
        guard let firstRoot = roots[0].sha256 else { throw TimestampError(.malformedResponse, "the first time-stamp is not over a SHA-256 root") }
        let lengths = record.chains.map(\.count)
        guard let trust else { return Verified(tokens: claims, root: firstRoot, chainLengths: lengths) }
        if let at, let newest = claims.last, newest.genTime > at {
            throw TimestampError(.verificationFailed, "the record's newest time-stamp was made \(Timestamp.string(newest.genTime)), "
                + "after the date it is to be checked as of (\(Timestamp.string(at)))")
        }
        var tokens: [TimestampToken] = []
        for (index, stamp) in stamps.enumerated() {
            let asOf = index + 1 < stamps.count ? claims[index + 1].genTime : at
            do {
                tokens.append(try TimestampVerifier.verify(response: EvidenceRecord.response(wrapping: stamp.token), imprint: roots[index],
                                                           trust: trust, at: asOf))
            } catch {
                let when = asOf.map { " as of \(ISO8601DateFormatter().string(from: $0))" } ?? ""
                throw TimestampError(error.kind, "archive time-stamp \(index + 1) of the evidence record\(when): \(error.message)")
            }
        }
        return Verified(tokens: tokens, root: firstRoot, chainLengths: lengths)
    }

    /// The root `stamp` leads to from `covered`, which must be in its reduced tree's first list.
    static func rootOf(_ stamp: EvidenceRecord.ArchiveTimeStamp, covering covered: SHA256Digest, index: Int) throws(TimestampError) -> SHA256Digest {
        let root = try rootOf(stamp, covering: Hex.decode(covered.hex) ?? [], algorithm: .sha256, index: index, first: nil)
        guard let digest = root.sha256 else { throw TimestampError(.malformedResponse, "not a SHA-256 root") }
        return digest
    }

    /// `first`: the chain number when `stamp` starts a hash-tree renewal's chain.
    static func rootOf(_ stamp: EvidenceRecord.ArchiveTimeStamp, covering covered: [UInt8], algorithm: Imprint.Algorithm,
                       index: Int, first: Int?) throws(TimestampError) -> Imprint {
        guard stamp.algorithm == algorithm, let coveredImprint = Imprint(algorithm: algorithm, bytes: covered) else {
            throw TimestampError(.malformedResponse, "archive time-stamp \(index + 1) uses another hash than its chain")
        }
        guard !stamp.reducedTree.isEmpty else { return coveredImprint }
        guard stamp.reducedTree[0].contains(covered) else {
            let what = index == 0 ? "the data's SHA-256 \(coveredImprint.hex)"
                : first.map { "the data's \(algorithm.label) with the \($0) chain(s) before it, \(coveredImprint.hex)" }
                    ?? "the previous time-stamp's \(algorithm.label) \(coveredImprint.hex)"
            throw TimestampError(.imprintMismatch, "archive time-stamp \(index + 1) of the evidence record does not cover \(what)")
        }
        guard let root = HashTree.root(of: stamp.reducedTree, algorithm: algorithm), let imprint = Imprint(algorithm: algorithm, bytes: root) else {
            throw TimestampError(.malformedResponse, "archive time-stamp \(index + 1) has an empty list in its reduced hash tree")
        }
        return imprint
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

    /// The hashes the renewal covers, as Bouncy Castle's `renewTimeStamp` makes them: the hash
    /// (the newest chain's algorithm) of each time-stamp (`ContentInfo`, DER) of the newest
    /// chain, sorted; and the leaf they make.
    public static func renewalGroup(of record: Data) throws(TimestampError) -> (values: [[UInt8]], leaf: [UInt8], algorithm: Imprint.Algorithm) {
        let parsed = try EvidenceRecord(der: [UInt8](record))
        guard let chain = parsed.chains.last, let algorithm = chain.first?.algorithm else {
            throw TimestampError(.malformedResponse, "an evidence record without a chain")
        }
        let values = chain.map { algorithm.hash($0.token) }.sorted(by: HashTree.precedes)
        return (values, HashTree.nodeHash(values, algorithm: algorithm), algorithm)
    }

    /// The signing certificate's expiry of the record's newest time-stamp.
    public static func expiry(of record: Data) -> Date? {
        guard let parsed = try? EvidenceRecord(der: [UInt8](record)), let stamp = parsed.chains.last?.last else { return nil }
        return TSACertificates.signerNotAfter(response: EvidenceRecord.response(wrapping: stamp.token))
    }

    /// Whether the record has a chain over SHA-512 (a hash-tree renewal): checking it needs the data's SHA-512.
    public static func hasSHA512Chain(_ record: Data) -> Bool {
        (try? EvidenceRecord(der: [UInt8](record)))?.chains.contains { $0.first?.algorithm == .sha512 } ?? false
    }

    /// The hash algorithm of the record's newest chain (what its next time-stamp renewal uses).
    public static func newestAlgorithm(of record: Data) -> Imprint.Algorithm? {
        (try? EvidenceRecord(der: [UInt8](record)))?.chains.last?.first?.algorithm
    }

    /// Each record with a new archive time-stamp appended to its newest chain: `response` is the
    /// TSA's reply over the root of `tree`, whose leaves are the records' renewal leaves. Every
    /// renewed record is verified against `trust` before it is returned.
    public static func renew(_ records: [Data], response: Data, tree: HashTree, trust: TSATrust,
                             digests: [SHA256Digest], sha512: [[UInt8]?]? = nil) throws(TimestampError) -> [Data] {
        let token = try EvidenceRecord.token(ofResponse: response)
        var renewed: [Data] = []
        for (i, (record, digest)) in zip(records, digests).enumerated() {
            let group = try renewalGroup(of: record)
            guard group.algorithm == tree.algorithm, var path = tree.path(forValue: group.leaf) else {
                throw TimestampError(.requestFailed, "a record's renewal hash is not a leaf of the renewal tree")
            }
            if group.values.count > 1 || path.isEmpty { path = [group.values] + path.dropFirst() }
            if path == [group.values], group.values.count == 1 { path = [] }
            var parsed = try EvidenceRecord(der: [UInt8](record))
            parsed.appendToNewestChain(EvidenceRecord.ArchiveTimeStamp(reducedTree: path, token: token, algorithm: group.algorithm))
            let der = Data(parsed.der())
            _ = try EvidenceRecordVerifier.verify(record: der, digest: digest, trust: trust, sha512: sha512?[i] ?? nil)
            renewed.append(der)
        }
        return renewed
    }

    /// Hash-tree renewal (RFC 4998 §5.2, Bouncy Castle's `renewHash`): the leaf a record's new
    /// chain covers, `algorithm`(`algorithm`(data) ‖ `algorithm`(DER of every chain so far)).
    public static func hashRenewalLeaf(of record: Data, dataHash: [UInt8], algorithm: Imprint.Algorithm) throws(TimestampError) -> [UInt8] {
        let parsed = try EvidenceRecord(der: [UInt8](record))
        return algorithm.hash(dataHash + algorithm.hash(parsed.sequenceDER(chainCount: parsed.chains.count)))
    }

    /// Each record with a new chain whose first archive time-stamp is `response`'s token over the
    /// root of `tree` (of `hashRenewalLeaf`s), verified against `trust` with the data's SHA-512.
    public static func renewHash(_ records: [Data], response: Data, tree: HashTree, trust: TSATrust,
                                 digests: [SHA256Digest], sha512: [[UInt8]]) throws(TimestampError) -> [Data] {
        let token = try EvidenceRecord.token(ofResponse: response)
        var renewed: [Data] = []
        for (i, record) in records.enumerated() {
            let leaf = try hashRenewalLeaf(of: record, dataHash: sha512[i], algorithm: tree.algorithm)
            guard let path = tree.path(forValue: leaf) else {
                throw TimestampError(.requestFailed, "a record's hash-renewal leaf is not a leaf of the renewal tree")
            }
            var parsed = try EvidenceRecord(der: [UInt8](record))
            parsed.appendChain(EvidenceRecord.ArchiveTimeStamp(reducedTree: path, token: token, algorithm: tree.algorithm))
            let der = Data(parsed.der())
            _ = try EvidenceRecordVerifier.verify(record: der, digest: digests[i], trust: trust, sha512: sha512[i])
            renewed.append(der)
        }
        return renewed
    }
}
