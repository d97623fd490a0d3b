import Foundation
import Synchronization

/// Slows password guessing: after `free` failed sign-ins within `window` seconds, every further
/// failure is answered only after a delay that doubles with each (from 0.25 s up to `cap`).
/// A correct sign-in is never delayed, so an attack does not lock the auditors out.
final class FailedLogins: Sendable {
    let free: Int
    let window: Double
    let cap: Double
    private let failures = Mutex<[Date]>([])

    init(free: Int = 5, window: Double = 60, cap: Double = 5) {
        self.free = free; self.window = window; self.cap = cap
    }

    /// Records a failure at `now`; returns how long to hold its answer.
    func failed(now: Date = Date()) -> Double {
        let recent = failures.withLock { list -> Int in
            list.removeAll { now.timeIntervalSince($0) > window }
            list.append(now)
            return list.count
        }
        return Self.delay(afterFailures: recent, free: free, cap: cap)
    }

    static func delay(afterFailures n: Int, free: Int, cap: Double) -> Double {
        guard n > free else { return 0 }
        return min(cap, 0.25 * pow(2, Double(min(n - free - 1, 10))))
    }
}
