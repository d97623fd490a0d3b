import Foundation
import Synchronization

/// How many bundles the portal builds at once. A `.zip` build writes about twice the original
/// into the home's `tmp/` (the bundle folder and the archive), a `.tar` only the small files (it
/// streams the original from the store), so a burst of requests, or someone clicking "download"
/// on the biggest recordings, must not fill the disk the store lives on.
final class BuildSlots: Sendable {
    private let used = Mutex(0)
    let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    /// A slot, or nil when all are taken: the caller answers 503 with Retry-After.
    func take() -> Slot? {
        used.withLock { n in
            guard n < limit else { return nil }
            n += 1
            return Slot(release: { [self] in used.withLock { $0 -= 1 } })
        }
    }

    final class Slot: Sendable {
        private let release: @Sendable () -> Void
        init(release: @escaping @Sendable () -> Void) { self.release = release }
        deinit { release() }
    }
}
