import Foundation

/// Deterministic byte mutations of seed inputs, for the replay in `make test`: the same seed
/// number gives the same inputs on every machine, so a failure there reproduces. A small copy
/// of what libFuzzer does (flip, insert, erase, duplicate, splice, dictionary tokens, truncate).
public struct SeededMutator: Sendable {
    private var state: UInt64
    private let tokens: [[UInt8]]

    public init(seed: UInt64, tokens: [String]) {
        state = seed
        self.tokens = tokens.map { Array($0.utf8) }
    }

    /// SplitMix64.
    private mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }

    /// `input` with 1…4 stacked mutations; `other` is another seed to splice from.
    public mutating func mutate(_ input: Data, other: Data) -> Data {
        var b = [UInt8](input)
        for _ in 0...below(4) {
            switch below(8) {
            case 0 where !b.isEmpty:  // flip a bit
                b[below(b.count)] ^= UInt8(1 << below(8))
            case 1:  // insert a random byte
                b.insert(UInt8(truncatingIfNeeded: next()), at: below(b.count + 1))
            case 2 where !b.isEmpty:  // erase a range
                let start = below(b.count)
                b.removeSubrange(start..<min(b.count, start + 1 + below(16)))
            case 3 where !b.isEmpty:  // duplicate a range
                let start = below(b.count)
                let piece = b[start..<min(b.count, start + 1 + below(64))]
                b.insert(contentsOf: piece, at: below(b.count + 1))
            case 4 where !tokens.isEmpty:  // insert a token of the format
                b.insert(contentsOf: tokens[below(tokens.count)], at: below(b.count + 1))
            case 5 where !other.isEmpty:  // splice in part of another seed
                let o = [UInt8](other)
                let start = below(o.count)
                b.insert(contentsOf: o[start..<min(o.count, start + 1 + below(128))], at: below(b.count + 1))
            case 6 where !b.isEmpty:  // truncate
                b.removeSubrange(below(b.count)...)
            case 7 where !b.isEmpty:  // an interesting byte
                b[below(b.count)] = [0x00, 0x0a, 0x22, 0x5c, 0x7f, 0x80, 0xff, 0x30, 0x7b, 0x5b][below(10)]
            default:
                b.append(UInt8(truncatingIfNeeded: next()))
            }
        }
        return Data(b)
    }
}

/// The committed seed inputs: `Fuzz/corpus/<target>/*` and, for found bugs, `Fuzz/regressions/<target>/*`.
public enum FuzzCorpus {
    public static func inputs(_ folder: String) -> [(name: String, data: Data)] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        return names.compactMap { n in FileManager.default.contents(atPath: folder + "/" + n).map { (n, $0) } }
    }
}
