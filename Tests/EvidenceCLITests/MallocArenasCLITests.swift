import Foundation
import Glibc
import Testing
import EvidenceTesting

/// `evidence run` keeps malloc to one arena per core (EvidenceProcess/MallocArenas.swift), and an
/// operator's own `MALLOC_ARENA_MAX` wins. Counted from outside, in the running process's
/// /proc/PID/maps, after 300 files went through its threads at once.
@Suite("evidence run: malloc arenas", .ownThread)
struct MallocArenasCLITests {
    /// glibc's arenas other than the main one (which grows the program break): each is a
    /// 64 MiB-aligned anonymous reservation, read-write from its start, the rest reserved
    /// (---p) up to exactly 64 MiB. Thread stacks begin with their guard page instead.
    static func arenaHeaps(pid: pid_t) -> Int {
        guard let maps = try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8) else { return -1 }
        let heapSize: UInt64 = 64 << 20
        let regions: [(start: UInt64, end: UInt64, writable: Bool)] = maps.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 5 else { return nil }   // anonymous: no path
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt64(range[0], radix: 16), let end = UInt64(range[1], radix: 16) else { return nil }
            return (start, end, fields[1].hasPrefix("rw"))
        }
        var heaps = 0
        for (i, region) in regions.enumerated() where region.writable && region.start % heapSize == 0 {
            var end = region.end
            var next = i + 1
            while next < regions.count, regions[next].start == end, end < region.start + heapSize {
                end = regions[next].end
                next += 1
            }
            if end == region.start + heapSize { heaps += 1 }
        }
        return heaps
    }

    /// Runs the service with `environment`, drops 300 files at once, and answers the arena heaps
    /// in its memory once all are stored.
    func arenasAfterBurst(environment: [String: String]) throws -> Int {
        let h = RunHarness()
        h.environment = environment
        try h.start()
        let pid = try #require(h.process?.pid)
        for i in 0..<300 { _ = h.write("clip-\(i).bin", randomBytes(50_000)) }
        #expect(waitUntil(timeout: 120) { h.storedInLog() == 300 }, "stored \(h.storedInLog()) of 300: \(h.log.suffix(2000))")
        let heaps = Self.arenaHeaps(pid: pid)
        #expect(h.stop() == 0)
        return heaps
    }

    var limit: Int { max(2, ProcessInfo.processInfo.activeProcessorCount) }

    @Test("at most one arena per core however many threads allocate; the operator's MALLOC_ARENA_MAX is left to glibc")
    func onePerCore() throws {
        // What /proc/PID/maps shows are heaps: an arena that runs out of its first 64 MiB takes a
        // second (seen once, under the whole cli pass's load: 2 heaps with one arena allowed
        // besides the main one). So at most two heaps per arena here, and far fewer than glibc's own.
        let ours = try arenasAfterBurst(environment: [:])
        #expect(ours >= 0 && ours <= 2 * (limit - 1), "\(ours) arena heaps besides the main arena; limit \(limit)")
        // The same burst with the operator's limit: glibc makes arenas for the threads that find
        // the others busy (with 16 allowed, 15 besides the main one here, on two cores), which
        // also shows the count sees them.
        let operators = try arenasAfterBurst(environment: ["MALLOC_ARENA_MAX": "64"])
        #expect(operators > limit - 1 && operators > ours, "\(operators) arena heaps with MALLOC_ARENA_MAX=64, \(ours) with ours")
        let tunables = try arenasAfterBurst(environment: ["GLIBC_TUNABLES": "glibc.malloc.arena_max=64"])
        #expect(tunables > limit - 1, "\(tunables) arenas besides the main one with glibc.malloc.arena_max=64")
    }
}
