import EvidenceConfig
@testable import EvidenceFuzzing
import Foundation
import Testing

/// `Fuzz/` in this checkout: the seed corpora, the regression inputs and the fixture bundle.
let fuzzRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fuzz").path
let fixtures = fuzzRoot + "/fixtures"
/// `FUZZ_ONLY=<target>` narrows the replay to one target when chasing a crash (the whole process dies).
let targetNames = ProcessInfo.processInfo.environment["FUZZ_ONLY"].map { [$0] } ?? ["config", "rule", "qed", "rfc3161", "manifest", "custody", "providers", "webdav", "sandbox-json"]

/// The fast, deterministic part of `make fuzz`: every committed seed and every input that once
/// broke a parser, then seeded mutations of the seeds, through each parser. A crash fails the
/// whole run; a broken contract (wrong error, message without the file, …) fails the test.
@Suite("Fuzz corpus replay")
struct CorpusReplayTests {
    static let mutationsPerSeed = 150

    @Test("every target has a committed seed corpus", arguments: targetNames)
    func seedCorpusExists(_ name: String) throws {
        #expect(FuzzTargets.named(name, fixtures: fixtures) != nil)
        #expect(FuzzCorpus.inputs(fuzzRoot + "/corpus/" + name).count >= 1, "Fuzz/corpus/\(name) is empty")
    }

    @Test("seeds and regression inputs keep every parser's contract", arguments: targetNames)
    func seedsAndRegressions(_ name: String) throws {
        let target = try #require(FuzzTargets.named(name, fixtures: fixtures))
        let inputs = FuzzCorpus.inputs(fuzzRoot + "/corpus/" + name) + FuzzCorpus.inputs(fuzzRoot + "/regressions/" + name)
        for input in inputs {
            #expect(throws: Never.self, "\(name)/\(input.name)") { try target.run(input.data) }
        }
    }

    @Test("seeded mutations of the seeds keep every parser's contract", arguments: targetNames)
    func seededMutations(_ name: String) throws {
        let target = try #require(FuzzTargets.named(name, fixtures: fixtures))
        let seeds = FuzzCorpus.inputs(fuzzRoot + "/corpus/" + name).map(\.data)
        var failures: [String] = []
        for (i, seed) in seeds.enumerated() {
            // One stream per (target, seed): adding a seed does not change the others' inputs.
            var mutator = SeededMutator(seed: UInt64(i + 1) &* 0x1000_0001 ^ UInt64(name.utf8.reduce(0) { $0 &* 31 &+ Int($1) }),
                                        tokens: target.tokens)
            for n in 0..<Self.mutationsPerSeed {
                let input = mutator.mutate(seed, other: seeds[(i + n) % seeds.count])
                do { try target.run(input) } catch {
                    failures.append("seed \(i) mutation \(n) (base64 \(input.base64EncodedString().prefix(200))): \(error)")
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) inputs broke \(name):\n\(failures.prefix(5).joined(separator: "\n"))")
    }
}

/// The oracles themselves must be able to fail, or the replay above proves nothing.
@Suite("Fuzz oracles")
struct FuzzOracleTests {
    @Test("a config error naming another file, or no line in it, breaks the contract")
    func configOracle() {
        #expect(throws: FuzzViolation.self) {
            try FuzzTargets.checkConfigError(ConfigError(file: "other.toml", message: "bad"), file: "evidence.toml",
                                             source: "a = 1\n", target: "config")
        }
        #expect(throws: FuzzViolation.self) {
            try FuzzTargets.checkConfigError(ConfigError(file: "evidence.toml", line: 9, message: "bad"), file: "evidence.toml",
                                             source: "a = 1\n", target: "config")
        }
        #expect(throws: Never.self) {
            try FuzzTargets.checkConfigError(ConfigError(file: "evidence.toml", line: 1, field: "a", message: "bad"),
                                             file: "evidence.toml", source: "a = 1\n", target: "config")
        }
    }

    @Test("the fixture bundle verifies untouched, and a changed manifest or custody log fails a check")
    func bundleOracle() throws {
        for (name, file) in [("manifest", "manifest.json"), ("custody", "custody.jsonl")] {
            let target = try #require(FuzzTargets.named(name, fixtures: fixtures))
            let original = try Data(contentsOf: URL(fileURLWithPath: fixtures + "/bundle/" + file))
            #expect(throws: Never.self) { try target.run(original) }
            #expect(throws: Never.self) { try target.run(original.dropLast()) }
        }
    }

    @Test("the mutator is deterministic and changes its input")
    func mutatorIsDeterministic() {
        var a = SeededMutator(seed: 7, tokens: ["x"])
        var b = SeededMutator(seed: 7, tokens: ["x"])
        let seed = Data("path = \"/srv\"\n".utf8)
        let runA = (0..<50).map { _ in a.mutate(seed, other: seed) }
        let runB = (0..<50).map { _ in b.mutate(seed, other: seed) }
        #expect(runA == runB)
        #expect(runA.contains { $0 != seed })
    }
}
