import EvidenceProcess
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// `ProbeSandbox.enter`, the very function `evidence __probe` calls before it parses a file, run
/// in a fresh child process (an exit test) that then tries what a hostile file taken over the
/// probe would try. Exit code 0: every attempt failed; otherwise standard error says which did not.
@Suite("Media probe sandbox")
struct ProbeSandboxTests {
    @Test("a confined child opens no socket of any family, on any thread, and is in an empty network namespace as root")
    func noNetwork() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            func fail(_ message: String) -> Never {
                FileHandle.standardError.write(Data(("FAIL: " + message + "\n").utf8))
                exit(1)
            }
            let namespaceBefore = readLink("/proc/thread-self/ns/net")
            // A thread started before the sandbox, which tries after it (the filter is on every thread).
            let go = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var fromOtherThread: (fd: Int32, errno: Int32) = (0, 0)
            Thread {
                go.wait()
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                fromOtherThread = (fd, errno)
                done.signal()
            }.start()

            let report = ProbeSandbox.enter()
            guard report.confined else { fail("not confined: \(report)") }
            for (family, name) in [(AF_INET, "AF_INET"), (AF_INET6, "AF_INET6"), (AF_NETLINK, "AF_NETLINK"),
                                   (AF_UNIX, "AF_UNIX"), (AF_PACKET, "AF_PACKET")] {
                let fd = socket(Int32(family), Int32(SOCK_STREAM.rawValue), 0)
                if fd >= 0 || errno != EPERM { fail("socket(\(name)) gave \(fd), errno \(errno)") }
            }
            go.signal()
            done.wait()
            if fromOtherThread.fd >= 0 || fromOtherThread.errno != EPERM {
                fail("a thread started before the sandbox opened a socket: \(fromOtherThread)")
            }
            if getuid() == 0 || report.droppedToUID != nil {
                guard report.networkNamespace, readLink("/proc/thread-self/ns/net") != namespaceBefore else {
                    fail("as root, no new network namespace: \(report)")
                }
            }
            exit(0)
        }
        let errors = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(!errors.contains("FAIL:"), "\(errors)")
    }

    @Test("a confined child reads its inherited descriptor but opens no file, secret or public, executes nothing and changes no file")
    func noFiles() async {
        let dir = TempDirectory("sandbox-files")
        // A secret as the service keeps it (0600, its user's), a public file, and the evidence.
        dir.write("etc/evidence/owncloud.pass", "hunter2", mode: 0o600)
        dir.write("public.txt", "anyone may read this", mode: 0o644)
        dir.write("clip.bin", "the evidence bytes")
        for folder in ["", "/etc", "/etc/evidence"] { chmod(dir.path + folder, 0o755) }
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) { [base = dir.path as String] in
            func fail(_ message: String) -> Never {
                FileHandle.standardError.write(Data(("FAIL: " + message + "\n").utf8))
                exit(1)
            }
            let secret = base + "/etc/evidence/owncloud.pass", readable = base + "/public.txt"
            // Opened before the sandbox, as `evidence __probe` has its file.
            let evidence = open(base + "/clip.bin", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            let originalUID = getuid()

            let report = ProbeSandbox.enter()
            guard report.confined else { fail("not confined: \(report)") }
            if originalUID == 0 {
                guard let uid = report.droppedToUID, uid != 0, getuid() == uid, geteuid() == uid, setuid(0) != 0 else {
                    fail("root was not given up: \(report)")
                }
            }
            for path in [secret, readable, "/etc/passwd", "/proc/self/environ"] {
                let fd = open(path, O_RDONLY)
                if fd >= 0 || errno != EPERM { fail("open(\(path)) gave \(fd), errno \(errno)") }
                let at = openat(AT_FDCWD, path, O_RDONLY)
                if at >= 0 || errno != EPERM { fail("openat(\(path)) gave \(at), errno \(errno)") }
            }
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = buffer.withUnsafeMutableBytes { pread(evidence, $0.baseAddress, 64, 0) }
            guard n > 0, String(decoding: buffer[0..<n], as: UTF8.self) == "the evidence bytes" else {
                fail("the inherited descriptor could not be read (\(n), errno \(errno))")
            }
            if unlink(readable) == 0 || errno != EPERM { fail("unlink succeeded or failed otherwise (errno \(errno))") }
            if mkdir(base + "/new", 0o700) == 0 || errno != EPERM { fail("mkdir succeeded or failed otherwise (errno \(errno))") }
            if rename(readable, base + "/moved") == 0 { fail("rename succeeded") }
            if let started = try? ChildProcess.run("/bin/true") { fail("exec of /bin/true succeeded: \(started.termination)") }
            exit(0)
        }
        let errors = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(!errors.contains("FAIL:"), "\(errors)")
    }

    @Test("attacker: the file is parsed in a fork of the thread that confined itself: as root, nobody in the empty namespace, though another thread of the process keeps root's")
    func theParseIsAForkOfTheConfinedThread() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            func fail(_ message: String) -> Never {
                FileHandle.standardError.write(Data(("FAIL: " + message + "\n").utf8))
                exit(1)
            }
            let namespaceBefore = readLink("/proc/thread-self/ns/net")
            // Another thread of the process, parked as the runtime's are: unshare(CLONE_NEWNET)
            // moves only the calling thread, so this one stays in the host's namespace.
            let go = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var otherNamespace = ""
            Thread {
                go.wait()
                otherNamespace = readLink("/proc/thread-self/ns/net")
                done.signal()
            }.start()
            let report = ProbeSandbox.enter(limitCPU: false)
            guard report.confined else { fail("not confined: \(report)") }
            go.signal()
            done.wait()
            let reply = ForkServer.runOne(descriptor: 0, name: "x", timeout: 30, childCPUSeconds: 30) { _, _ in
                Data("\(getuid()) \(geteuid()) \(readLink("/proc/thread-self/ns/net"))".utf8)
            }
            guard reply.exitCode == 0 else { fail("the child did not exit 0: \(reply)") }
            let parts = reply.output.split(separator: " ").map(String.init)
            guard parts.count == 3 else { fail("the child said \(reply.output)") }
            if getuid() != 0 && report.droppedToUID != nil {
                guard parts[0] == "\(report.droppedToUID!)", parts[1] == parts[0] else { fail("the child runs as \(parts[0])/\(parts[1])") }
                guard parts[2] != namespaceBefore, !parts[2].isEmpty else { fail("the child is in the host's network namespace") }
                // What makes the fork necessary: a thread other than the confining one kept the host's.
                guard otherNamespace == namespaceBefore else { fail("expected the other thread in the host namespace: \(otherNamespace)") }
            }
            exit(0)
        }
        let errors = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(!errors.contains("FAIL:"), "\(errors)")
    }

    @Test("the report says what held, in one line the parent can log")
    func reportLine() {
        var report = ProbeSandbox.Report()
        #expect(!report.confined && report.description.hasPrefix("NOT confined: no seccomp filter"))
        report.syscallFilter = true
        report.networkNamespace = true
        report.droppedToUID = 65534
        report.droppedToGID = 65534
        #expect(report.description == "confined: seccomp filter (no open, socket, exec), empty network namespace, uid 65534 gid 65534")
    }
}

/// The target of a symbolic link, read with readlink (not open: it works inside the sandbox).
func readLink(_ path: String) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    let n = readlink(path, &buffer, buffer.count - 1)
    return n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
}
