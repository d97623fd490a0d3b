import Foundation
import Glibc
import EvidenceTesting
import Testing

@Suite("CLI: bad input is refused clearly, the rest is ingested", .ownThread)
struct BadInputCLITests {
    @Test("a folder mixing good and bad entries: each bad one named with its reason, the rest stored, exit 1")
    func mixedFolder() throws {
        let s = Scratch()
        let drop = s.path + "/drop"
        s.file("drop/good.txt", "good")
        s.file("drop/empty.bin", "")
        let long = String(repeating: "n", count: 251) + ".txt"
        s.file("drop/" + long, "a 255-byte name")
        #expect(mkfifo(drop + "/camera.fifo", 0o600) == 0)
        #expect(symlink("/etc/hostname", drop + "/outside-link") == 0)
        // A name that is not UTF-8: bytes 0xff 0xfe.
        let badName = Array((drop + "/bad-").utf8CString.dropLast()) + [CChar(bitPattern: 0xff), CChar(bitPattern: 0xfe), 0]
        let fd = open(badName, O_CREAT | O_WRONLY, 0o644)
        #expect(fd >= 0)
        close(fd)

        let cli = CLI(home: s.home)
        let start = Date()
        let r = cli.run(["ingest", "--json", drop], timeout: 30)
        #expect(Date().timeIntervalSince(start) < 20, "a FIFO must not block ingest")
        #expect(r.status == 1)
        let entries = try #require(r.json as? [[String: Any]])
        func status(_ suffix: String) -> String? {
            entries.first { ($0["path"] as? String)?.hasSuffix(suffix) == true }?["status"] as? String
        }
        #expect(status("/good.txt") == "stored")
        #expect(status("/empty.bin") == "stored")
        #expect(status("/" + long) == "stored")
        #expect(status("/camera.fifo") == "rejected")
        #expect(status("/outside-link") == "rejected")
        #expect(r.stderr.contains("camera.fifo: not a regular file (FIFO)"))
        #expect(r.stderr.contains("outside-link: symbolic link (not followed"))
        #expect(r.stderr.contains("not valid UTF-8 (bytes 6261642dfffe)"))
        // Quarantined entries show up in status, which then exits 1.
        let st = cli.run(["status", "--json"])
        #expect(st.status == 1)
        #expect(((st.json as? [String: Any])?["quarantined"] as? [Any])?.count == 3)
        // The bad files are left in place.
        #expect(FileManager.default.fileExists(atPath: drop + "/camera.fifo"))
    }

    @Test("--follow-symlinks ingests the target of a link")
    func followSymlinks() throws {
        let s = Scratch()
        let target = s.file("target.txt", "target")
        #expect(symlink(target, s.path + "/link.txt") == 0)
        let r = CLI(home: s.home).run(["ingest", "--follow-symlinks", s.path + "/link.txt"])
        #expect(r.status == 0, "\(r.stderr)")
    }

    @Test("an unreadable file is refused with its reason (run as an unprivileged user)",
          .enabled(if: getuid() == 0, "needs root to switch to an unprivileged user"))
    func unreadable() throws {
        let s = Scratch()
        chmod(s.path, 0o777)
        // Readable by others on purpose: commands run in-process set this process's umask to 077.
        chmod(s.file("drop/ok.txt", "ok"), 0o644)
        let secret = s.file("drop/locked.txt", "locked")
        chmod(secret, 0o000)
        chmod(s.path + "/drop", 0o755)
        let home = s.path + "/nobody-home"
        let r = CLI.exec(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          CLI.binary, "--home", home, "ingest", s.path + "/drop"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("locked.txt: permission denied"))
        #expect(r.stdout.contains("1 of 2 ingested"))
    }

    @Test("disk full in the store: clear error, exit 1, catalog unchanged, no temp left",
          .enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
    func diskFull() throws {
        let s = Scratch()
        let mnt = s.path + "/small"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        #expect(CLI.exec(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt]).status == 0)
        defer { _ = CLI.exec(["umount", mnt]) }
        let big = s.path + "/big.bin"
        #expect(CLI.exec(["head", "-c", "4000000", "/dev/urandom"]).status == 0)
        _ = CLI.exec(["dd", "if=/dev/urandom", "of=\(big)", "bs=1M", "count=4"])
        let cli = CLI(home: mnt + "/home")
        let small = s.file("small.txt", "fits")
        // One at a time: with two workers the big copy may fill the disk while the small
        // file's catalog commit is under way, and then both fail (correctly, but not what this checks).
        let r = cli.run(["ingest", "-j", "1", small, big])
        #expect(r.status == 1)
        #expect(r.stderr.contains("big.bin: no space left on device"))
        let st = cli.run(["status", "--json"])
        #expect((st.json as? [String: Any])?["items"] as? Int == 1, "status: \(st.status) \(st.stdout) \(st.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mnt + "/home/tmp").isEmpty)
    }
}
