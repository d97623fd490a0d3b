import EvidenceCore
@testable import EvidencePipeline
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// The media probe runs in a child: whatever that child does to itself, the parent gets a
/// `MediaInfo` with a clear reason, never a crash or a hang.
@Suite("Media probe in a child process")
struct ChildMediaProbeTests {
    /// A stand-in for `evidence __probe` that misbehaves as told.
    let dir = TempDirectory("probe-child")

    func child(_ script: String) -> String {
        let path = dir.write("probe-\(UUID().uuidString.prefix(8)).sh", "#!/bin/sh\n" + script + "\n")
        chmod(path, 0o755)
        return path
    }

    @Test func aChildThatCrashesIsReportedAndTheParentGoesOn() {
        let info = ChildMediaProbe.probe(path: "/x.mp4", name: "x.mp4", executable: child("kill -SEGV $$"), timeout: 10)
        #expect(info?.probeError?.contains("crashed on this file (signal 11)") == true, "\(String(describing: info))")
    }

    @Test func aChildThatHangsIsStoppedAtItsTimeout() {
        let started = Date()
        let info = ChildMediaProbe.probe(path: "/x.mp4", name: "x.mp4", executable: child("sleep 30"), timeout: 1)
        #expect(info?.probeError?.contains("took longer than 1 s") == true, "\(String(describing: info))")
        #expect(Date().timeIntervalSince(started) < 20)
    }

    @Test func whatTheChildPrintsIsTheAnswer() {
        #expect(ChildMediaProbe.probe(path: "/x.mp4", name: nil, executable: child("echo null"), timeout: 10) == nil)
        let info = ChildMediaProbe.probe(path: "/x.mp4", name: nil, executable: child(#"echo '{"container":"mov","streams":[]}'"#), timeout: 10)
        #expect(info?.container == "mov")
        let garbage = ChildMediaProbe.probe(path: "/x.mp4", name: nil, executable: child("echo not json"), timeout: 10)
        #expect(garbage?.probeError?.contains("unreadable") == true)
    }

    @Test func noChildIsStartedForAFileThatIsNotMedia() {
        // The stand-in would fail loudly if it were started.
        #expect(ChildMediaProbe.probe(path: "/no/such/report.txt", name: "report.txt", executable: child("exit 3"), timeout: 10) == nil)
    }
}
