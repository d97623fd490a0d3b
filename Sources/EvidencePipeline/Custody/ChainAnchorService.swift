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
    let logger: Logger

    func run() async throws {
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

    /// One attempt; false when it failed.
    @discardableResult
    func anchorOnce() async -> Bool {
        do {
            if let a = try await ChainAnchors.anchor(home, tsa: tsa) {
                logger.info("custody head time-stamped", metadata: [
                    "seq": "\(a.seq)", "hash": "\(a.hash)", "tsa": "\(tsa.name)",
                    "gen_time": "\(a.genTime.map { Timestamp.string($0) } ?? "")",
                ])
            }
            return true
        } catch {
            logger.warning("custody anchor failed (retried): \(error)")
            return false
        }
    }
}
