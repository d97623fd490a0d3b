import EvidenceCore
import EvidenceNotary
import EvidenceStore
import EvidencePipeline
import Foundation

extension FuzzTargets {
    static let jsonTokens = ["{", "}", "[", "]", ",", ":", "\"", "null", "true", "-0", "1e999", "9223372036854775808",
                             "\"2024-05-01T12:34:56.123Z\"", "\"\\u0000\"", "\\ud800", "\n"]

    /// `evidence verify DIR` on the fixture bundle with the input as its `manifest.json`.
    /// SHA256SUMS covers the manifest, so any other bytes must fail at least one check.
    static func bundleManifest(fixtures: String) -> FuzzTarget {
        let workspace = BundleWorkspace(fixture: fixtures + "/bundle", target: "manifest")
        return FuzzTarget(name: "manifest", summary: "bundle manifest.json: BundleVerifier.verify", tokens: jsonTokens + [
            "\"format\"", "\"evidence-bundle/1\"", "\"evidence-bundle/2\"", "\"item\"", "\"sha256\"", "\"fileName\"", "\"../../etc/passwd\"", "\"proofs\"",
            "\"kind\"", "\"rfc3161\"", "\"qed\"", "\"state\"", "\"confirmed\"", "\"notary\"", "\"files\"", "\"certificates\"",
            "\"custodyHead\"", "\"generatedAt\"",
        ]) { data throws(FuzzViolation) in
            try workspace.verify(replacing: "manifest.json", with: data)
        }
    }

    /// `evidence verify DIR` on the fixture bundle with the input as its `custody.jsonl`
    /// (each line a canonical-JSON custody event whose hash is recomputed along the chain).
    static func custody(fixtures: String) -> FuzzTarget {
        let workspace = BundleWorkspace(fixture: fixtures + "/bundle", target: "custody")
        return FuzzTarget(name: "custody", summary: "custody.jsonl events: CanonicalJSON + chain check", tokens: jsonTokens + [
            "\"seq\"", "\"itemID\"", "\"at\"", "\"kind\"", "\"actor\"", "\"details\"", "\"prevHash\"", "\"hash\"",
            "9223372036854775807", "-9223372036854775808", "\"0000000000000000000000000000000000000000000000000000000000000000\"",
        ]) { data throws(FuzzViolation) in
            try workspace.verify(replacing: "custody.jsonl", with: data)
            // The same decoding the catalog's chain check relies on, without the bundle around it.
            for line in data.split(separator: UInt8(ascii: "\n")) {
                guard let e = try? CanonicalJSON.decoder().decode(CustodyEvent.self, from: Data(line)) else { continue }
                _ = SHA256Hasher.hash(CustodyEvent.chainInput(prevHash: e.prevHash, body: e.canonicalBody))
                let again = try? CanonicalJSON.decoder().decode(CustodyEvent.self, from: CanonicalJSON.encode(e))
                try require(again == e, "custody", "an event does not survive encode → decode: \(e)")
            }
        }
    }
}

/// A private copy of the fixture bundle in which one file is replaced per input.
final class BundleWorkspace: @unchecked Sendable {
    private let fixture: String
    private let target: String
    private let lock = NSLock()
    private var dir: String?
    private var originals: [String: Data] = [:]

    init(fixture: String, target: String) { self.fixture = fixture; self.target = target }

    deinit { if let dir { try? FileManager.default.removeItem(atPath: dir) } }

    func verify(replacing file: String, with data: Data) throws(FuzzViolation) {
        lock.lock()
        defer { lock.unlock() }
        let dir: String
        let original: Data
        do { (dir, original) = try prepare(file) } catch { throw FuzzViolation(target, "fixture bundle \(fixture): \(error)") }
        // In place, without Data.write's fsync: a scratch copy needs no durability, and an
        // fsync per input made the replay crawl on slow disks.
        do {
            guard let handle = FileHandle(forWritingAtPath: dir + "/" + file) else { throw CocoaError(.fileNoSuchFile) }
            defer { try? handle.close() }
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: data)
        } catch {
            throw FuzzViolation(target, "cannot write \(dir)/\(file): \(error)")
        }
        // The fixture TSA's CA, from beside the bundle (never from inside it), as an auditor passes it.
        let trust = TSATrust(caFiles: [(fixture as NSString).deletingLastPathComponent + "/tsa-ca.pem"])
        let checks = BundleVerifier.verify(dir, trust: trust).checks
        try FuzzTargets.require(!checks.isEmpty, target, "verify reported no checks")
        let failed = checks.filter { !$0.ok }
        if data == original {
            try FuzzTargets.require(failed.isEmpty, target, "the untouched fixture bundle fails: \(failed.map(\.detail))")
        } else {
            try FuzzTargets.require(!failed.isEmpty, target, "a changed \(file) passes every check")
        }
        for c in checks { try FuzzTargets.require(!c.detail.isEmpty || c.ok, target, "failed check \(c.check) without detail") }
    }

    private func prepare(_ file: String) throws -> (String, Data) {
        if let dir, let original = originals[file] { return (dir, original) }
        let fm = FileManager.default
        let dir = self.dir ?? NSTemporaryDirectory() + "evidence-fuzz-\(target)-\(getpid())-\(UUID().uuidString.prefix(8))"
        if self.dir == nil {
            try fm.copyItem(atPath: fixture, toPath: dir)
            self.dir = dir
        }
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture + "/" + file))
        originals[file] = original
        return (dir, original)
    }
}
