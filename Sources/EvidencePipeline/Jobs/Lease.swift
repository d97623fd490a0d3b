import EvidenceBlocking
import EvidenceCatalog
import EvidenceCore
import Foundation
import Glibc
import Logging

/// Who holds a job's lease, and keeping a lease alive while its job runs.
///
/// A lease that simply expired after a fixed time let a second worker take a job the first
/// was still running (an upload slower than the lease): the same file uploaded twice. Now a
/// running job's lease is renewed every third of its length, so it expires only when its
/// holder is gone or hung; and a starting service returns only the leases of processes that
/// are gone, not one held by an `evidence archive` running in a terminal.
public enum Lease {
    /// `ROLE@NODE:PID/NONCE` (NODE: the config's `node`, else the host name). The nonce tells
    /// this process from an earlier one that had the same pid (a service restarted as pid 1 in
    /// a container).
    public static func owner(role: String, node: String = ProcessInfo.processInfo.hostName) -> String {
        "\(role)@\(node):\(getpid())/\(nonce)"
    }

    private static let nonce = String(UInt32.random(in: 0...UInt32.max), radix: 16)

    /// The node named in an owner (`ROLE@NODE:PID/NONCE`), or nil for another form.
    public static func node(of owner: String) -> String? { NodeName.of(leaseOwner: owner) }

    /// Whether `owner`'s process is certainly gone: it names this node (as `current` does), and
    /// its pid no longer exists or is this process under another nonce. Owners on another node,
    /// or in a form this version does not write, count as gone only when their lease expires:
    /// there is no pid check across hosts.
    public static func isGone(_ owner: String, current: String) -> Bool {
        guard owner != current else { return false }
        let afterRole = owner.split(separator: "@", maxSplits: 1).last.map(String.init) ?? owner
        let hostAndRest = afterRole.split(separator: "/", maxSplits: 1).first.map(String.init) ?? afterRole
        guard let colon = hostAndRest.lastIndex(of: ":"),
              let pid = Int32(hostAndRest[hostAndRest.index(after: colon)...]), pid > 0 else { return false }
        guard let mine = node(of: current), String(hostAndRest[..<colon]) == mine else { return false }
        if pid == getpid() { return true }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    /// Runs `body` while renewing job `id`'s lease every `lease / 3` seconds (at most every 60 s).
    ///
    /// Time is injected as in `JobRunner`: `now` stamps each renewal (the lease then runs to
    /// `now() + lease`), and `pause` waits between renewals (real sleep by default; a test passes
    /// one it releases by hand, so lease expiry is shown without waiting for it).
    public static func keep<T, E: Error>(_ catalog: any Catalog, job id: Int64, owner: String, lease: Double,
                                         logger: Logger? = nil,
                                         now: @escaping @Sendable () -> Date = { Date() },
                                         pause: @escaping @Sendable (Double) async -> Void = { try? await Task.sleep(for: .seconds($0)) },
                                         _ body: () async throws(E) -> T) async throws(E) -> T {
        let every = renewalInterval(lease: lease)
        let keeper = Task.detached {
            while !Task.isCancelled {
                await pause(every)
                if Task.isCancelled { return }
                let renewed = await onIOThread { try? catalog.renewLease(id, owner: owner, lease: lease, now: now()) }
                if renewed == false { logger?.warning("job \(id): its lease was lost; another runner may take it") }
            }
        }
        defer { keeper.cancel() }
        return try await body()
    }

    /// How often a lease of `lease` seconds is renewed: a third of it, between 0.05 s and 60 s.
    public static func renewalInterval(lease: Double) -> Double { max(0.05, min(60, lease / 3)) }
}
