import EvidenceCore
import EvidenceNotary
import Foundation
import Logging
import ServiceLifecycle

/// Part of `evidence run` with `[custody]`: time-stamps the custody head at start, then every
/// `every` seconds while it moves (a failed attempt is retried after a minute at most); the
/// pipeline anchors once more after everything stopped (`Pipeline.run`).
struct ChainAnchorService: Service {
    let home: EvidenceHome
    let tsa: TSAClient
    let every: Double
    /// `[custody] anchor_archive`: each new anchor (and, at start, the newest) is queued for copying there.
    let copyTo: String?
    /// `[custody] origin`: the checkpoints' first line.
    var origin: String? = nil
    let logger: Logger

    func run() async throws {
        // The shutdown anchor of the previous run was made after its job runner stopped.
        // Only an anchor the log reaches: a file named beyond the head is not copied as the newest.
        if let newest = ChainAnchors.newest(home) { queueCopy(newest) }
        var wait = 0.0
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            if wait > 0 {
                let seconds = wait
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(seconds)) }
                if Task.isShuttingDownGracefully || Task.isCancelled { return }
            }
            wait = await anchorOnce() ? every : min(every, 60)
        }
    }

    /// Queues the copy of `anchor` to the `anchor_archive` account, if one is set.
    func queueCopy(_ anchor: ChainAnchors.Anchor) {
        guard let copyTo else { return }
        do { try ChainAnchors.enqueueCopy(anchor.name, account: copyTo, catalog: home.catalog) } catch {
            logger.warning("cannot queue the copy of anchor \(anchor.name) to \(copyTo): \(error)")
        }
    }

    /// One attempt; false when it failed.
    @discardableResult
    func anchorOnce() async -> Bool {
        do {
            if let a = try await ChainAnchors.anchor(home, tsa: tsa, origin: origin) {
                logger.info("custody head time-stamped", metadata: [
                    "seq": "\(a.seq)", "hash": "\(a.hash)", "tsa": "\(tsa.name)",
                    "gen_time": "\(a.genTime.map { Timestamp.string($0) } ?? "")",
                ])
                queueCopy(a)
            }
            return true
        } catch {
            logger.warning("custody anchor failed (retried): \(error)")
            return false
        }
    }
}
