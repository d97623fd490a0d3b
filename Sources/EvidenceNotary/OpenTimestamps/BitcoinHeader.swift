import COpenSSL
import EvidenceCore
import Foundation

/// An 80-byte Bitcoin block header: version, previous block, merkle root, time, bits, nonce
/// (little-endian fields). Its hash is SHA-256(SHA-256(header)); block explorers show that
/// hash byte-reversed, which is `hashHex`.
public struct BitcoinHeader: Sendable, Equatable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(OTSError) {
        guard bytes.count == 80 else { throw OTSError("a block header of \(bytes.count) bytes, not 80") }
        self.bytes = bytes
    }

    public init(hex: String) throws(OTSError) {
        let text = hex.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 160, let b = Hex.decode(text) else { throw OTSError("a block header that is not 160 hex characters") }
        try self.init(bytes: b)
    }

    /// The merkle root as stored in the header: what a Bitcoin attestation's message must equal.
    public var merkleRoot: [UInt8] { Array(bytes[36..<68]) }
    public var time: Date { Date(timeIntervalSince1970: TimeInterval(le32(68))) }
    public var bits: UInt32 { le32(72) }
    /// The block hash in header byte order.
    public var hash: [UInt8] { OTSOp.digest(OTSOp.digest(bytes, evidence_sha256(), 32), evidence_sha256(), 32) }
    /// The block hash as explorers and `bitcoin-cli` print it.
    public var hashHex: String { Hex.encode(hash.reversed()) }

    func le32(_ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
    }

    /// Leading zero bits of the block hash (as a 256-bit number): the work it shows.
    public var leadingZeroBits: Int {
        var n = 0
        for byte in hash.reversed() {
            if byte == 0 { n += 8; continue }
            n += byte.leadingZeroBitCount
            break
        }
        return n
    }

    /// Whether the header's hash meets the target its own `bits` encode (proof of work done for
    /// that difficulty; which difficulty the chain required is the header source's word).
    public var meetsOwnTarget: Bool {
        let exponent = Int(bits >> 24), mantissa = bits & 0x007f_ffff
        guard bits & 0x0080_0000 == 0, mantissa != 0, exponent <= 32 else { return false }
        // The target as 32 big-endian bytes.
        var target = [UInt8](repeating: 0, count: 32)
        let m = [UInt8((mantissa >> 16) & 0xff), UInt8((mantissa >> 8) & 0xff), UInt8(mantissa & 0xff)]
        for (i, byte) in m.enumerated() {
            let position = 32 - exponent + i
            if position >= 0 && position < 32 { target[position] = byte } else if byte != 0 && position < 0 { return false }
        }
        let value = Array(hash.reversed())
        return !target.lexicographicallyPrecedes(value)
    }
}

@inline(__always) func evidence_sha256() -> OpaquePointer? { evidence_evp_sha256() }
