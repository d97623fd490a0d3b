import EvidenceProcess
import EvidenceTesting
import Foundation
import Glibc
import Synchronization
import Testing

/// `ForkServer`'s mechanics, with a server this test process runs on a thread of its own: each
/// request gets a forked child; whatever the child does (crash, hang, flood its output, reach for
/// the server's socket), the reply says so and the server serves the next request.
@Suite("Fork server: one child per file, the server survives each")
struct ForkServerTests {
    let dir = TempDirectory("fork-server")

    /// A running server and the client's connection to it. The child's behaviour is chosen by
    /// the name it is handed.
    final class Running {
        let connection: ForkServer.Connection
        init(timeout: Double) throws {
            var ends: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
            let server = ends[1]
            let outcome = Outcome()
            let thread = Thread {
                let status = ForkServer.serve(socket: server, announce: "ready", timeout: timeout, childCPUSeconds: 30) { fd, name in
                    Running.child(fd: fd, name: name, serverSocket: server)
                }
                close(server)
                outcome.status.store(status, ordering: .sequentiallyConsistent)
                outcome.done.signal()
            }
            self.outcome = outcome
            thread.start()
            connection = try ForkServer.Connection(socket: ends[0], readyTimeout: 30)
        }

        /// How the server's thread ended.
        final class Outcome: Sendable {
            let status = Atomic<Int32>(-1)
            let done = DispatchSemaphore(value: 0)
        }
        let outcome: Outcome

        /// What a child does, by name. Runs in the forked child only.
        static func child(fd: Int32, name: String, serverSocket: Int32) -> Data {
            switch name {
            case "crash":
                // The test process's crash handler (Swift's backtracer) would report and return
                // from a signal sent with kill: the default action is what a crash meets.
                signal(SIGSEGV, SIG_DFL)
                kill(getpid(), SIGSEGV)
                return Data("survived".utf8)
            case "hang":
                for _ in 0..<100 { sleep(30) }
                return Data("woke".utf8)
            case "flood":
                return Data(repeating: UInt8(ascii: "x"), count: 4 * ForkServer.outputLimit)
            case "stderr":
                let text = "a message on standard error\n"
                _ = text.withCString { write(2, $0, strlen($0)) }
                return Data("ok".utf8)
            case "reach-the-socket":
                // A child taken over by a hostile file tries to speak for the next file.
                let message = "{\"output\":\"forged\",\"errors\":\"\",\"exitCode\":0,\"timedOut\":false}"
                let sent = message.withCString { send(serverSocket, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                return Data((sent < 0 ? "refused: errno \(errno)" : "sent").utf8)
            default:
                var bytes = [UInt8](repeating: 0, count: 65_536)
                let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
                return Data((name + "|").utf8) + Data(bytes[0..<max(0, n)])
            }
        }

        func request(_ name: String, _ path: String, timeout: Double = 30) -> Result<ForkServer.Reply, ForkServer.Failure> {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            defer { close(fd) }
            return connection.request(descriptor: fd, name: name, timeout: timeout)
        }
    }

    @Test("the child gets the file as a descriptor and the name as sent; its output is the reply")
    func descriptorAndName() throws {
        let server = try Running(timeout: 10)
        defer { server.connection.shutDown() }
        #expect(server.connection.announcement == "ready")
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<20_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let path = dir.write("readings.dat", bytes)
        for name in ["readings.dat", "name with spaces and ü.mov"] {
            let reply = try server.request(name, path).get()
            #expect(reply.exitCode == 0 && reply.signal == nil && !reply.timedOut)
            #expect(Data(reply.output.utf8).prefix(name.utf8.count + 1) == Data((name + "|").utf8))
        }
    }

    @Test("a child that crashes is reported with its signal; the next request is served")
    func crash() throws {
        let server = try Running(timeout: 10)
        defer { server.connection.shutDown() }
        let path = dir.write("x.mp4", "clip")
        let crashed = try server.request("crash", path).get()
        #expect(crashed.signal == SIGSEGV && crashed.exitCode == nil && crashed.output.isEmpty, "\(crashed)")
        #expect(try server.request("after", path).get().output == "after|clip")
    }

    @Test("a child that hangs is killed at the server's timeout; the next request is served")
    func hang() throws {
        let server = try Running(timeout: 1)
        defer { server.connection.shutDown() }
        let path = dir.write("x.mp4", "clip")
        let started = ContinuousClock.now
        let hung = try server.request("hang", path).get()
        #expect(hung.timedOut && hung.signal == SIGKILL, "\(hung)")
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(try server.request("after", path).get().output == "after|clip")
    }

    @Test("a child's flood of output is cut at the limit; its standard error is kept apart")
    func floodAndErrors() throws {
        let server = try Running(timeout: 10)
        defer { server.connection.shutDown() }
        let path = dir.write("x.mp4", "clip")
        let flood = try server.request("flood", path).get()
        #expect(flood.output.utf8.count == ForkServer.outputLimit && flood.exitCode == 0)
        let errors = try server.request("stderr", path).get()
        #expect(errors.output == "ok" && errors.errors == "a message on standard error\n")
    }

    @Test("attacker: a child cannot answer for another file through the server's socket (closed before it runs)")
    func theChildCannotReachTheSocket() throws {
        let server = try Running(timeout: 10)
        defer { server.connection.shutDown() }
        let path = dir.write("x.mp4", "clip")
        let reply = try server.request("reach-the-socket", path).get()
        #expect(reply.output == "refused: errno \(EBADF)", "\(reply)")
        #expect(try server.request("next", path).get().output == "next|clip")
    }

    @Test("the server ends, exit 0, when its socket is closed")
    func endsWithItsSocket() throws {
        let server = try Running(timeout: 10)
        server.connection.shutDown()
        #expect(server.outcome.done.wait(timeout: .now() + 30) == .success)
        #expect(server.outcome.status.load(ordering: .sequentiallyConsistent) == 0)
    }
}
