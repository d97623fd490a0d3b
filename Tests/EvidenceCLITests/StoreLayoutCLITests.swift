import EvidenceProcess
import Foundation
import Glibc
import EvidenceTesting
import Testing

/// A home made before the store had one fan-out level (`objects/sha256/ab/cd/<hex>`), opened by
/// this version: its objects are moved up when the store is opened, and a process killed with
/// SIGKILL in the middle of the move loses nothing.
@Suite("CLI: a home of the two-level store layout", .ownThread)
struct StoreLayoutCLITests {
    static func files(_ dir: String) -> [String] {
        (FileManager.default.enumerator(atPath: dir)?.allObjects as? [String] ?? []).filter {
            var st = stat(); return lstat(dir + "/" + $0, &st) == 0 && st.st_mode & S_IFMT == S_IFREG
        }
    }

    /// The store's objects by name: each name's paths, and whether those are one file (a name
    /// under both its places between the link and the unlink of the move is one inode twice).
    static func objectNames(_ dir: String) -> (names: Set<String>, paths: [String: [String]], oneFileEach: Bool) {
        var paths: [String: [String]] = [:]
        for rel in files(dir) { paths[String(rel.split(separator: "/").last!), default: []].append(rel) }
        let oneFileEach = paths.values.allSatisfy { rels in
            Set(rels.map { rel -> UInt64 in var st = stat(); _ = lstat(dir + "/" + rel, &st); return UInt64(st.st_ino) }).count == 1
        }
        return (Set(paths.keys), paths, oneFileEach)
    }

    @Test("the move up one level, killed with SIGKILL again and again, ends with every object in place and fsck clean")
    func moveKilledAndResumed() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        let folder = s.path + "/files"
        for i in 0..<2_000 { s.file("files/f\(i).txt", "file \(i)\n") }
        #expect(cli.run(["ingest", folder], timeout: 300).status == 0)
        let objects = s.home + "/objects/sha256"
        let stored = Self.files(objects)
        #expect(stored.count == 2_000, "\(stored.count) objects")
        let names = Set(stored.map { String($0.split(separator: "/").last!) })
        // The home as the former layout left it.
        for rel in stored {
            let hex = String(rel.split(separator: "/").last!)
            let leaf = objects + "/" + hex.prefix(2) + "/" + hex.dropFirst(2).prefix(2)
            try FileManager.default.createDirectory(atPath: leaf, withIntermediateDirectories: true)
            #expect(rename(objects + "/" + rel, leaf + "/" + hex) == 0)
        }
        #expect(unlink(s.home + "/objects/layout") == 0)

        // Opened by a process killed after a growing delay, until one run finishes by itself.
        var mixedStates = 0, kills = 0, finished = false
        // Small steps until a kill lands mid-move (on tmpfs the whole move takes milliseconds),
        // then larger ones to let it finish.
        var delay: useconds_t = 0
        for _ in 0..<300 where !finished {
            let p = try ChildProcess(CLI.binary, ["--home", s.home, "fsck", "--quick"],
                                     environment: ChildProcess.environment(removing: ["EVIDENCE_HOME", "EVIDENCE_CONFIG"]), stdout: .null, stderr: .null)
            usleep(delay)
            if p.isRunning {
                p.signal(SIGKILL)
                kills += 1
            }
            let end = p.wait()
            if end == .exited(0) || end == .exited(1) { finished = FileManager.default.fileExists(atPath: s.home + "/objects/layout") }
            let now = Self.objectNames(objects)
            #expect(now.names == names, "objects lost after a kill: \(names.subtracting(now.names).count) missing, \(now.names.subtracting(names).count) unknown")
            #expect(now.oneFileEach, "a name under two places with different files after a kill")
            let depths = Set(now.paths.values.joined().map { $0.split(separator: "/").count })
            if depths.contains(2) && depths.contains(3) { mixedStates += 1 }
            delay += mixedStates == 0 ? 2_000 : 20_000
        }
        #expect(finished, "no run finished the move")
        #expect(kills > 0 && mixedStates > 0, "no kill landed in the middle of the move (kills \(kills)): the test proved nothing")
        let after = Self.files(objects)
        #expect(after.count == 2_000 && after.allSatisfy { $0.split(separator: "/").count == 2 }, "objects not moved up")
        let fsck = cli.run(["fsck"], timeout: 300)
        #expect(fsck.status == 0, "\(fsck.stdout)\(fsck.stderr)")
        #expect(fsck.stdout.contains("2000 objects") || fsck.stdout.contains("2,000 objects"), "\(fsck.stdout)")
    }
}
