import COpenSSL
import EvidenceCore
import Foundation

/// A refusal to read or use an OpenTimestamps proof; the message says where and why, and quotes
/// nothing from the hostile bytes but numbers and hex.
public struct OTSError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One operation of an OpenTimestamps proof: what turns the message before it into the message
/// after it. Tags and limits are the format's own (python-opentimestamps `core/op.py`): binary
/// operations carry 1…4096 bytes, no message or result exceeds 4096 bytes.
public enum OTSOp: Sendable, Hashable {
    case append([UInt8])
    case prepend([UInt8])
    case reverse
    case hexlify
    case sha1
    case ripemd160
    case sha256

    static let maxLength = 4096

    public var tag: UInt8 {
        switch self {
        case .append: 0xf0
        case .prepend: 0xf1
        case .reverse: 0xf2
        case .hexlify: 0xf3
        case .sha1: 0x02
        case .ripemd160: 0x03
        case .sha256: 0x08
        }
    }

    var argument: [UInt8] {
        switch self {
        case .append(let a), .prepend(let a): a
        default: []
        }
    }

    /// `ots info`'s name of the operation.
    public var name: String {
        switch self {
        case .append(let a): "append \(Hex.encode(a))"
        case .prepend(let a): "prepend \(Hex.encode(a))"
        case .reverse: "reverse"
        case .hexlify: "hexlify"
        case .sha1: "sha1"
        case .ripemd160: "ripemd160"
        case .sha256: "sha256"
        }
    }

    public func apply(_ message: [UInt8]) throws(OTSError) -> [UInt8] {
        guard message.count <= Self.maxLength else { throw OTSError("a message of \(message.count) bytes (at most \(Self.maxLength))") }
        let result: [UInt8]
        switch self {
        case .append(let a): result = message + a
        case .prepend(let a): result = a + message
        case .reverse:
            guard !message.isEmpty else { throw OTSError("reverse of an empty message") }
            result = message.reversed()
        case .hexlify:
            guard !message.isEmpty, message.count <= Self.maxLength / 2 else { throw OTSError("hexlify of \(message.count) bytes") }
            result = Array(Hex.encode(message).utf8)
        case .sha1: result = try Self.checkedDigest(message, evidence_evp_sha1(), 20, "SHA-1")
        case .ripemd160: result = try Self.checkedDigest(message, evidence_evp_ripemd160(), 20, "RIPEMD-160")
        case .sha256: result = try Self.checkedDigest(message, evidence_evp_sha256(), 32, "SHA-256")
        }
        guard result.count <= Self.maxLength else { throw OTSError("an operation's result of \(result.count) bytes (at most \(Self.maxLength))") }
        return result
    }

    /// A hash a proof asks for; one this OpenSSL cannot compute (RIPEMD-160 under a FIPS
    /// provider) is a refusal of the proof, never a crash.
    static func checkedDigest(_ bytes: [UInt8], _ md: OpaquePointer?, _ size: Int, _ name: String) throws(OTSError) -> [UInt8] {
        guard let md else { throw OTSError("\(name) is not available in this OpenSSL") }
        var out = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &out, &length, md, nil) }
        guard ok == 1, Int(length) == size else { throw OTSError("\(name) failed in this OpenSSL") }
        return Array(out.prefix(size))
    }

    static func digest(_ bytes: [UInt8], _ md: OpaquePointer?, _ size: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &out, &length, md, nil) }
        precondition(ok == 1 && Int(length) == size, "EVP_Digest failed")
        return Array(out.prefix(size))
    }

    /// The canonical order of operations in one node (by tag, then argument), as the reference
    /// implementation writes them.
    static func precedes(_ a: OTSOp, _ b: OTSOp) -> Bool {
        if a.tag != b.tag { return a.tag < b.tag }
        return a.argument.lexicographicallyPrecedes(b.argument)
    }
}

/// What a timestamp's message is attested by: a Bitcoin block (its header's merkle root equals
/// the message), a calendar's promise to get it into one (`pending`), or a kind this code does not know.
public enum OTSAttestation: Sendable, Hashable {
    case bitcoin(height: Int)
    case pending(uri: String)
    case unknown(tag: [UInt8], payload: [UInt8])

    static let bitcoinTag: [UInt8] = [0x05, 0x88, 0x96, 0x0d, 0x73, 0xd7, 0x19, 0x01]
    static let pendingTag: [UInt8] = [0x83, 0xdf, 0xe3, 0x0d, 0x2e, 0xf9, 0x0c, 0x8e]
    static let maxPayload = 8192
    static let maxURI = 1000
    /// The reference implementation's allowed URI bytes: no query, fragment, percent-encoding or login.
    static let uriBytes = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._/:".utf8)

    var tag: [UInt8] {
        switch self {
        case .bitcoin: Self.bitcoinTag
        case .pending: Self.pendingTag
        case .unknown(let tag, _): tag
        }
    }

    var payload: [UInt8] {
        var w = OTSWriter()
        switch self {
        case .bitcoin(let height): w.varuint(UInt64(height))
        case .pending(let uri): w.varbytes(Array(uri.utf8))
        case .unknown(_, let payload): return payload
        }
        return w.bytes
    }

    public var description: String {
        switch self {
        case .bitcoin(let h): "Bitcoin block \(h)"
        case .pending(let uri): "pending at \(uri)"
        case .unknown(let tag, _): "unknown attestation \(Hex.encode(tag))"
        }
    }

    /// The reference implementation's order: by tag, then Bitcoin attestations by height,
    /// pending ones by URI, others by payload.
    static func precedes(_ a: OTSAttestation, _ b: OTSAttestation) -> Bool {
        switch (a, b) {
        case (.bitcoin(let x), .bitcoin(let y)): return x < y
        case (.pending(let x), .pending(let y)): return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
        default:
            return a.tag != b.tag ? a.tag.lexicographicallyPrecedes(b.tag) : a.payload.lexicographicallyPrecedes(b.payload)
        }
    }

    public static func isValidURI(_ uri: String) -> Bool {
        !uri.isEmpty && uri.utf8.count <= maxURI && uri.utf8.allSatisfy { uriBytes.contains($0) }
    }
}

/// An OpenTimestamps timestamp: a message, what attests it, and the operations leading on to
/// further messages, each with its own timestamp (a tree). Serialization follows the format of
/// python-opentimestamps (`Timestamp.serialize`): `0xff` before every branch but the last, `0x00`
/// before an attestation (8-byte tag, length-prefixed payload), an operation's tag before its
/// branch. The message itself is not serialized: a reader supplies it.
public struct OTSTimestamp: Sendable, Equatable {
    public struct Branch: Sendable, Equatable {
        public var op: OTSOp
        public var timestamp: OTSTimestamp
    }

    public let message: [UInt8]
    public var attestations: [OTSAttestation] = []
    public var branches: [Branch] = []

    public init(message: [UInt8]) { self.message = message }

    static let maxDepth = 256

    /// Reads a timestamp of `message` from `bytes`, all of it.
    public init(message: [UInt8], bytes: [UInt8]) throws(OTSError) {
        var r = OTSReader(bytes)
        self = try OTSTimestamp.read(&r, message: message, depth: 0)
        guard r.atEnd else { throw OTSError("\(r.remaining) bytes after the timestamp's end") }
    }

    /// Nodes and message bytes one parse may build: every node keeps its message, so a small
    /// hostile file of many short operations under a 4 KiB message would otherwise cost hundreds of MB.
    static let maxNodes = 20_000
    static let maxMessageBytes = 8 << 20

    static func read(_ r: inout OTSReader, message: [UInt8], depth: Int) throws(OTSError) -> OTSTimestamp {
        guard depth < maxDepth else { throw OTSError("nested deeper than \(maxDepth) levels") }
        r.nodes += 1
        r.messageBytes += message.count
        guard r.nodes <= maxNodes, r.messageBytes <= maxMessageBytes else {
            throw OTSError("more than \(maxNodes) operations or \(maxMessageBytes >> 20) MiB of messages: not a proof this program reads")
        }
        var t = OTSTimestamp(message: message)
        var seen: [OTSOp: Int] = [:]   // each operation's branch, found without a scan
        func one(_ tag: UInt8, _ r: inout OTSReader) throws(OTSError) {
            if tag == 0x00 {
                let aTag = try r.bytes(8)
                let payload = try r.varbytes(max: OTSAttestation.maxPayload, min: 0)
                var p = OTSReader(payload)
                let attestation: OTSAttestation
                if aTag == OTSAttestation.bitcoinTag {
                    let height = try p.varuint()
                    guard height <= UInt64(Int32.max) else { throw OTSError("a Bitcoin block height of \(height)") }
                    attestation = .bitcoin(height: Int(height))
                } else if aTag == OTSAttestation.pendingTag {
                    let raw = try p.varbytes(max: OTSAttestation.maxURI, min: 0)
                    guard let uri = String(validating: raw, as: UTF8.self), uri.isEmpty || OTSAttestation.isValidURI(uri) else {
                        throw OTSError("a pending attestation's calendar URI has characters the format does not allow")
                    }
                    attestation = .pending(uri: uri)
                } else {
                    attestation = .unknown(tag: aTag, payload: payload)
                    p = OTSReader([])
                }
                guard p.atEnd else { throw OTSError("\(p.remaining) bytes after an attestation's payload") }
                t.attestations.append(attestation)
                return
            }
            let op: OTSOp
            switch tag {
            case 0xf0: op = .append(try r.varbytes(max: OTSOp.maxLength, min: 1))
            case 0xf1: op = .prepend(try r.varbytes(max: OTSOp.maxLength, min: 1))
            case 0xf2: op = .reverse
            case 0xf3: op = .hexlify
            case 0x02: op = .sha1
            case 0x03: op = .ripemd160
            case 0x08: op = .sha256
            default: throw OTSError(String(format: "unknown operation tag 0x%02x at byte %d", tag, r.position - 1))
            }
            let next = try op.apply(message)
            let branch = Branch(op: op, timestamp: try read(&r, message: next, depth: depth + 1))
            // The same operation twice: the reference implementation keeps the later one (a
            // dictionary by operation), so `ots verify` sees only it; so do we.
            if let i = seen[op] { t.branches[i] = branch } else { seen[op] = t.branches.count; t.branches.append(branch) }
        }
        var tag = try r.byte()
        while tag == 0xff {
            try one(try r.byte(), &r)
            tag = try r.byte()
        }
        try one(tag, &r)
        return t
    }

    /// The serialized timestamp (not its message), attestations and operations in canonical order.
    public var bytes: [UInt8] {
        var w = OTSWriter()
        write(&w)
        return w.bytes
    }

    func write(_ w: inout OTSWriter) {
        let atts = attestations.sorted(by: OTSAttestation.precedes)
        let ops = branches.sorted { OTSOp.precedes($0.op, $1.op) }
        precondition(!atts.isEmpty || !ops.isEmpty, "an empty timestamp cannot be serialized")
        for (i, a) in atts.enumerated() {
            let last = i == atts.count - 1 && ops.isEmpty
            w.append(last ? [0x00] : [0xff, 0x00])
            w.append(a.tag)
            w.varbytes(a.payload)
        }
        for (i, b) in ops.enumerated() {
            if i < ops.count - 1 { w.append([0xff]) }
            w.append([b.op.tag])
            if case .append(let a) = b.op { w.varbytes(a) }
            if case .prepend(let a) = b.op { w.varbytes(a) }
            b.timestamp.write(&w)
        }
    }

    /// Levels of operations below this node (0 for attestations alone).
    public var depth: Int { branches.map { 1 + $0.timestamp.depth }.max() ?? 0 }

    /// This timestamp with every attestation that is not a pending one removed, and branches
    /// left empty by that removed: what a calendar's fresh answer may carry.
    public var pendingOnly: OTSTimestamp? {
        var t = self
        t.attestations.removeAll { if case .pending = $0 { return false } else { return true } }
        t.branches = branches.compactMap { b in b.timestamp.pendingOnly.map { Branch(op: b.op, timestamp: $0) } }
        return t.attestations.isEmpty && t.branches.isEmpty ? nil : t
    }

    /// Every attestation with the message it attests, depth first.
    public var allAttestations: [(message: [UInt8], attestation: OTSAttestation)] {
        var out = attestations.map { (message, $0) }
        for b in branches { out += b.timestamp.allAttestations }
        return out
    }

    /// The first node (depth first) whose message is `target`.
    public func node(withMessage target: [UInt8]) -> OTSTimestamp? {
        if message == target { return self }
        for b in branches { if let found = b.timestamp.node(withMessage: target) { return found } }
        return nil
    }

    /// This timestamp with `other` (a timestamp of the same message) merged in: its attestations
    /// added, its operations merged with equal ones here, new ones added.
    public func merging(_ other: OTSTimestamp) -> OTSTimestamp {
        precondition(other.message == message)
        var t = self
        for a in other.attestations where !t.attestations.contains(a) { t.attestations.append(a) }
        for b in other.branches {
            if let i = t.branches.firstIndex(where: { $0.op == b.op }) {
                t.branches[i].timestamp = t.branches[i].timestamp.merging(b.timestamp)
            } else {
                t.branches.append(b)
            }
        }
        return t
    }

    /// This timestamp with every node whose message is `target` merged with `upgrade`, and the
    /// pending attestations `dropping` removed from those nodes (an upgraded calendar's promise).
    public func merging(_ upgrade: OTSTimestamp, at target: [UInt8], dropping: Set<String> = []) -> OTSTimestamp {
        var t = self
        if message == target {
            t.attestations.removeAll { if case .pending(let uri) = $0 { return dropping.contains(uri) } else { return false } }
            t = t.merging(upgrade)
        }
        for i in t.branches.indices { t.branches[i].timestamp = t.branches[i].timestamp.merging(upgrade, at: target, dropping: dropping) }
        return t
    }

    /// A chain of operations from `message`, ending in `tail` (whose message must be their result).
    public static func chain(from message: [UInt8], ops: [OTSOp], tail: OTSTimestamp) throws(OTSError) -> OTSTimestamp {
        var messages = [message]
        for op in ops { messages.append(try op.apply(messages[messages.count - 1])) }
        guard messages.last == tail.message else { throw OTSError("the operations do not lead to the timestamp's message") }
        var node = tail
        for i in stride(from: ops.count - 1, through: 0, by: -1) {
            var parent = OTSTimestamp(message: messages[i])
            parent.branches = [Branch(op: ops[i], timestamp: node)]
            node = parent
        }
        return node
    }

    /// The operations that take a batch's leaf to the root of its RFC 4998 hash tree (sorted
    /// pairs): each sibling is prepended when it sorts first, appended otherwise, then SHA-256.
    public static func treeOps(leaf: SHA256Digest, in tree: HashTree) -> [OTSOp]? {
        guard let lists = tree.path(for: leaf) else { return nil }
        var node = Hex.decode(leaf.hex) ?? []
        var ops: [OTSOp] = []
        for list in lists.dropFirst() {
            guard list.count == 1 else { return nil }
            let sibling = list[0]
            ops.append(HashTree.precedes(sibling, node) ? .prepend(sibling) : .append(sibling))
            ops.append(.sha256)
            node = HashTree.branch(node, sibling)
        }
        return ops
    }
}

/// A `.ots` file (python-opentimestamps `DetachedTimestampFile`): the magic header, major
/// version 1, the file's hash operation (SHA-256 only here) and digest, then its timestamp.
public struct OTSFile: Sendable, Equatable {
    public static let magic: [UInt8] = [0x00] + Array("OpenTimestamps".utf8) + [0x00, 0x00] + Array("Proof".utf8)
        + [0x00, 0xbf, 0x89, 0xe2, 0xe8, 0x84, 0xe8, 0x92, 0x94]
    /// Larger than any proof we make or a calendar sends (a few KB); refused before parsing.
    public static let maxSize = 1 << 20

    public var timestamp: OTSTimestamp
    public var digest: [UInt8] { timestamp.message }

    public init(timestamp: OTSTimestamp) { self.timestamp = timestamp }

    public init(bytes: [UInt8]) throws(OTSError) {
        guard bytes.count <= Self.maxSize else { throw OTSError("\(bytes.count) bytes, more than a proof can be (\(Self.maxSize))") }
        var r = OTSReader(bytes)
        guard (try? r.bytes(Self.magic.count)) == Self.magic else { throw OTSError("not an OpenTimestamps proof (no header)") }
        let version = try r.varuint()
        guard version == 1 else { throw OTSError("OpenTimestamps major version \(version), not 1") }
        let op = try r.byte()
        guard op == 0x08 else { throw OTSError(String(format: "the file's hash operation is 0x%02x, not SHA-256 (0x08)", op)) }
        let digest = try r.bytes(32)
        timestamp = try OTSTimestamp.read(&r, message: digest, depth: 0)
        guard r.atEnd else { throw OTSError("\(r.remaining) bytes after the timestamp's end") }
    }

    public var bytes: [UInt8] {
        var w = OTSWriter()
        w.append(Self.magic)
        w.varuint(1)
        w.append([0x08])
        w.append(timestamp.message)
        timestamp.write(&w)
        return w.bytes
    }
}

struct OTSReader {
    let data: [UInt8]
    var position = 0
    var nodes = 0
    var messageBytes = 0
    init(_ data: [UInt8]) { self.data = data }
    var atEnd: Bool { position == data.count }
    var remaining: Int { data.count - position }

    mutating func byte() throws(OTSError) -> UInt8 {
        guard position < data.count else { throw OTSError("ends early, at byte \(position)") }
        position += 1
        return data[position - 1]
    }

    mutating func bytes(_ n: Int) throws(OTSError) -> [UInt8] {
        guard n >= 0, n <= remaining else { throw OTSError("ends early: \(n) bytes wanted at byte \(position), \(remaining) left") }
        position += n
        return Array(data[(position - n)..<position])
    }

    /// LEB128 of at most 63 bits; padding groups (0x80 … 0x00) beyond them are read as the
    /// reference implementation reads them, up to 16 groups in all.
    mutating func varuint() throws(OTSError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var groups = 0
        while true {
            let b = try byte()
            groups += 1
            let bits = UInt64(b & 0x7f)
            guard groups <= 16, shift <= 56 || bits == 0 else { throw OTSError("a number longer than 63 bits at byte \(position - 1)") }
            if shift <= 56 { value |= bits << shift }
            if b & 0x80 == 0 { return value }
            shift += 7
        }
    }

    mutating func varbytes(max: Int, min: Int) throws(OTSError) -> [UInt8] {
        let n = try varuint()
        guard n <= UInt64(max), n >= UInt64(min) else { throw OTSError("a field of \(n) bytes at byte \(position) (\(min)…\(max) allowed)") }
        return try bytes(Int(n))
    }
}

struct OTSWriter {
    var bytes: [UInt8] = []
    mutating func append(_ b: [UInt8]) { bytes += b }
    mutating func varuint(_ value: UInt64) {
        var v = value
        repeat {
            var b = UInt8(v & 0x7f)
            v >>= 7
            if v != 0 { b |= 0x80 }
            bytes.append(b)
        } while v != 0
    }
    mutating func varbytes(_ b: [UInt8]) { varuint(UInt64(b.count)); bytes += b }
}
