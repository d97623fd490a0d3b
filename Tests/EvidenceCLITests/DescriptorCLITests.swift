import EvidenceSandbox
import Foundation
import Glibc
import Testing

/// `evidence run` holds no more descriptors after 200 items than after 10: nothing it opens per
/// item (store files, catalog statements, HTTP connections, provider uploads) outlives the item.
@Suite("descriptors: evidence run leaks none per item", .serialized)
struct DescriptorCLITests {
    static func descriptors(of pid: pid_t) -> [String] {
        let dir = "/proc/\(pid)/fd"
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).map { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + fd)) ?? "?"
        }
    }

    /// Descriptors once the service has had a moment with nothing to do (idle HTTP connections
    /// are kept, at most one per transfer slot and origin).
    static func idleDescriptors(_ h: RunHarness) throws -> [String] {
        let pid = try #require(h.process?.pid)
        usleep(1_500_000)
        return descriptors(of: pid)
    }

    @Test("200 items through notarize, certificate, archive and share: the descriptor count of evidence run returns to its level after the first 10")
    func runReturnsToItsDescriptorLevel() async throws {
        try await ProviderCLITests().withSandbox { sandbox in
            let h = try ProviderCLITests().harness(.dropbox, sandbox)
            try h.start()
            let started = try Self.idleDescriptors(h)
            var generator = SystemRandomNumberGenerator()
            func drop(_ range: Range<Int>) {
                for i in range {
                    let bytes = (0..<(2_000 + i)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                    h.write("item-\(i).bin", Data(bytes))
                }
            }
            drop(0..<10)
            #expect(ProviderCLITests().waitDone(h, 10, timeout: 120), "\(h.log.suffix(2000))")
            let warm = try Self.idleDescriptors(h)
            drop(10..<210)
            #expect(ProviderCLITests().waitDone(h, 210, timeout: 600), "\(h.cli.run(["status"]).stdout)\n\(h.log.suffix(2000))")
            let after = try Self.idleDescriptors(h)
            // A leak of one descriptor per item would show as +200; connections kept alive to
            // the sandbox may differ by a few between two idle moments.
            #expect(after.count <= warm.count + 4,
                    "\(started.count) at start, \(warm.count) after 10 items, \(after.count) after 210; new: \(Self.added(after, to: warm))")
            #expect(h.stop() == 0)
        }
    }

    /// What `after` holds more of than `before`, by target (for the failure message).
    static func added(_ after: [String], to before: [String]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for t in after { counts[t.hasPrefix("socket:") ? "socket" : t, default: 0] += 1 }
        for t in before { counts[t.hasPrefix("socket:") ? "socket" : t, default: 0] -= 1 }
        return counts.filter { $0.value > 0 }
    }
}
