import EvidencePortal
import EvidenceStore
import Foundation
import Glibc
import Testing

/// A portal process builds each download in a work folder `<pid>@<host>.<random>.portal` in the
/// store's `tmp/`; the next portal to start removes the folders of writers that no longer run
/// (a crash mid-download). The store's `tmp/` may be shared by several hosts: another host's
/// folder is its own until it is a day old, and nothing but a dead portal's folder is touched.
@Suite("Portal: work folders of dead portal processes are removed, nothing else")
struct StaleWorkFolderTests {
    /// No process has this pid (above every Linux `pid_max`).
    static let deadPid = "2147483646"

    @Test func onlyTheFoldersOfDeadPortalsGo() throws {
        let fixture = try PortalFixture()
        let tmp = fixture.home.store.tmpDir
        let host = TempWriter.host
        let fm = FileManager.default

        func folder(_ name: String, daysOld: Int = 0) throws -> String {
            let path = tmp + "/" + name
            try fm.createDirectory(atPath: path, withIntermediateDirectories: false)
            try Data("part of a download".utf8).write(to: URL(fileURLWithPath: path + "/part"))
            if daysOld > 0 {
                let then = timespec(tv_sec: time(nil) - daysOld * 24 * 3600, tv_nsec: 0)
                let times = [then, then]
                #expect(utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW) == 0)
            }
            return path
        }

        let mine = try folder("\(TempWriter.tag).a.portal")
        let deadHere = try folder("\(Self.deadPid)@\(host).b.portal")
        let deadBareOld = try folder("\(Self.deadPid).c.portal")            // a name from before hosts were in it
        let otherHostToday = try folder("4242@other-station.d.portal")
        let otherHostOld = try folder("4242@other-station.e.portal", daysOld: 2)
        let notAPortals = try folder("\(Self.deadPid)@\(host).f.spool")
        let notATag = try folder("downloads.g.portal")

        // A link named like a dead portal's folder, pointing at a folder outside the store:
        // the link may go, what it points at must not.
        let outside = fixture.dir + "/outside"
        try fm.createDirectory(atPath: outside, withIntermediateDirectories: false)
        try Data("not the portal's".utf8).write(to: URL(fileURLWithPath: outside + "/keep"))
        let link = tmp + "/\(Self.deadPid)@\(host).h.portal"
        #expect(symlink(outside, link) == 0)

        BundleDownload.removeStaleWorkFolders(home: fixture.home)

        func exists(_ path: String) -> Bool {
            var st = stat()
            return lstat(path, &st) == 0
        }
        #expect(exists(mine), "this process's own work folder was removed")
        #expect(exists(otherHostToday), "another host's folder of today was removed: its portal may be running")
        #expect(exists(notAPortals), "a folder that is not a portal's was removed")
        #expect(exists(notATag), "a folder without a writer's tag was removed")
        #expect(!exists(deadHere), "a dead portal's folder on this host was left")
        #expect(!exists(deadBareOld), "a dead portal's folder with an old-style name was left")
        #expect(!exists(otherHostOld), "another host's folder two days old was left")
        #expect(exists(outside + "/keep"), "the clean-up followed a link out of the store")
    }
}
