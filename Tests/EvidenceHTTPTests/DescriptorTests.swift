@testable import EvidenceHTTP
import Foundation
import Testing
import EvidenceTesting

extension Loopback {
    /// The client leaves no descriptor behind: once it is released, no socket of this process
    /// touches the test server's port any more, however its requests ended. (Other suites run
    /// in this process at the same time, so sockets are counted by port, not all descriptors.)
    @Suite struct Descriptors {
        @Test func aThousandRequestsWithFaultsLeaveNoSocketBehind() async throws {
            let server = try TestServer(keepAlive: true, routes: [
                "/ok": { _, _ in .respond(200, body: Data("fine".utf8)) },
                "/fail": { _, _ in .respond(500) },
                "/limited": { _, _ in .respond(429) },
                "/drop": { _, _ in .drop },
                "/cut": { _, _ in .stream(200, length: 10_000, dropAfter: 3_000) },
                "/slow": { _, _ in .delay(0.01, .respond(200)) },
            ])
            defer { server.stop() }
            let listening = OpenSockets.touching(port: server.port)
            #expect(listening == 1, "only the server's listening socket before any request")
            let paths = ["/ok", "/fail", "/limited", "/drop", "/cut", "/slow"]
            var client: HTTPClient? = makeClient { $0.maxConcurrentTransfers = 4 }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask { [client] in
                        for i in stride(from: lane, to: 1_000, by: 8) {
                            _ = try? await client!.send(HTTPRequest(url: server.url(paths[i % paths.count])))
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(server.hits("/ok") + server.hits("/drop") + server.hits("/cut") > 400)
            // Kept-alive connections: at most one per transfer slot, each with the server's end.
            let idle = OpenSockets.touching(port: server.port)
            #expect(idle <= 1 + 2 * 4, "\(idle) sockets on the server's port with the client idle")
            client = nil
            #expect(await waitUntil(timeout: 10) { OpenSockets.touching(port: server.port) == 1 })
            #expect(OpenSockets.touching(port: server.port) == 1, "a socket outlived the client")
        }
    }
}

/// This process's sockets with `port` at either end, from `/proc/self/fd` and `/proc/net/tcp*`.
enum OpenSockets {
    static func touching(port: Int) -> Int {
        let hexPort = String(format: "%04X", port)
        var inodes = Set<String>()
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 9 else { continue }
                let local = fields[1].split(separator: ":").last, remote = fields[2].split(separator: ":").last
                if local == Substring(hexPort) || remote == Substring(hexPort) { inodes.insert(String(fields[9])) }
            }
        }
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd),
                  target.hasPrefix("socket:[") else { return false }
            return inodes.contains(String(target.dropFirst(8).dropLast()))
        }.count
    }
}
