import EvidenceSandbox
import Foundation
import Glibc
import EvidenceTesting
import Testing

/// `evidence run` holds no more descriptors after 200 items than after 10: nothing it opens per
/// item (store files, catalog statements, HTTP connections, provider uploads) outlives the item.
@Suite("descriptors: evidence run leaks none per item", .serialized, .ownThread)
struct DescriptorLongTests {
    static func descriptors(of pid: pid_t) -> [String] {
        let dir = "/proc/\(pid)/fd"
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).map { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + fd)) ?? "?"
        }
    }

    /// Descriptors once the service has nothing to do: no job queued or running (`status
    /// --json`), so every item's work is over and whatever it opened is closed, unless leaked.
    /// Idle HTTP connections are kept, at most one per transfer slot and origin.
    static func idleDescriptors(_ h: RunHarness) throws -> [String] {
        let pid = try #require(h.process?.pid)
        #expect(waitUntil(timeout: 120, every: 0.3) { h.jobsLeft() == 0 }, "\(h.cli.run(["status"]).stdout)")
        return descriptors(of: pid)
    }

    @Test("250 items through notarize, certificate, archive and share: evidence run's descriptors stop growing once its pools are warm")
    func runReturnsToItsDescriptorLevel() async throws {
        try await ProviderCLITests().withSandbox { sandbox in
            let h = try ProviderCLITests().harness(.dropbox, sandbox)
            try h.start()
            let started = try Self.idleDescriptors(h)
            var generator = SystemRandomNumberGenerator()
            var dropped = 0
            func drop(_ count: Int) -> Bool {
                for i in dropped..<(dropped + count) {
                    let bytes = (0..<(2_000 + i)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                    h.write("item-\(i).bin", Data(bytes))
                }
                dropped += count
                return ProviderCLITests().waitDone(h, dropped, timeout: 600)
            }
            // The first 50 warm the bounded pools up: SQLite reader connections (2 descriptors
            // each) and kept-alive HTTP connections (one per transfer thread and origin).
            #expect(drop(50), "\(h.log.suffix(2000))")
            let warm = try Self.idleDescriptors(h)
            #expect(drop(100), "\(h.cli.run(["status"]).stdout)\n\(h.log.suffix(2000))")
            let middle = try Self.idleDescriptors(h)
            #expect(drop(100), "\(h.cli.run(["status"]).stdout)\n\(h.log.suffix(2000))")
            let after = try Self.idleDescriptors(h)
            // A leak of one descriptor in twenty items would show as +5 between the last two.
            let counts = "\(started.count) at start, \(warm.count) after 50 items, \(middle.count) after 150, \(after.count) after 250"
            #expect(after.count <= middle.count + 4, "\(counts); new: \(Self.added(after, to: middle))")
            #expect(after.count <= warm.count + 12, "\(counts); new: \(Self.added(after, to: warm))")
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
