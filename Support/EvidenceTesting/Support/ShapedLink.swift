import EvidenceProcess
import Foundation

/// A slow link for tests: a network namespace of its own whose loopback is shaped by
/// `tc qdisc … tbf` to `rate` (both directions share it). Processes started with `prefix`
/// (`ip netns exec NAME`) talk to each other over it; nothing leaves the namespace. Needs root.
///
/// The loopback's MTU is set to 1500 first: with lo's 64 KiB MTU a segment larger than the
/// token bucket is dropped and the link stalls for reasons of the test, not of the code.
public final class ShapedLink: @unchecked Sendable {  // immutable after init
    public let name: String
    public let rate: String

    public var prefix: [String] { ["ip", "netns", "exec", name] }

    public init(rate: String) throws {
        self.rate = rate
        name = "evlink\(getpid())\(Int.random(in: 1000...9999))"
        try Self.run(["ip", "netns", "add", name])
        do {
            try Self.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "mtu", "1500", "up"])
            try Self.run(["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", "lo", "root", "tbf",
                          "rate", rate, "burst", "32kb", "latency", "400ms"])
        } catch {
            _ = try? ChildProcess.run("ip", ["netns", "del", name], timeout: 10)
            throw error
        }
    }

    deinit { _ = try? ChildProcess.run("ip", ["netns", "del", name], timeout: 10) }

    /// Whether this process may make namespaces (root, with `ip` and `tc` installed).
    public static var available: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/tc")
            || getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/sbin/tc")
    }

    static func run(_ argv: [String]) throws {
        let r = try ChildProcess.run(argv[0], Array(argv.dropFirst()), timeout: 20)
        guard r.termination == .exited(0) else { throw LinkError.failed(argv.joined(separator: " ") + ": " + r.output) }
    }

    public enum LinkError: Error { case failed(String) }
}
