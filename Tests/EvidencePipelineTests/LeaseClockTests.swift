import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import EvidenceTesting
import Foundation
import Synchronization
import Testing

/// `Lease.keep` takes the job runner's clock and its pause between renewals, so a lease that is
/// renewed, and one that runs out, are shown by moving the clock, not by waiting for it.
@Suite("Lease: renewal and expiry on the injected clock")
struct LeaseClockTests {
    final class Clock: Sendable {
        let time = Mutex(Date(timeIntervalSince1970: 2_000_000_000))
        func now() -> Date { time.withLock { $0 } }
        func advance(_ seconds: Double) { time.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    /// The keeper's pause: each call is counted and waits until the test lets one pass.
    final class Gate: Sendable {
        private struct State { var entered = 0; var permits = 0; var waiting: [CheckedContinuation<Void, Never>] = [] }
        private let state = Mutex(State())
        var entered: Int { state.withLock { $0.entered } }
        func pause(_ seconds: Double) async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let pass = state.withLock { s -> Bool in
                    s.entered += 1
                    if s.permits > 0 { s.permits -= 1; return true }
                    s.waiting.append(c)
                    return false
                }
                if pass { c.resume() }
            }
        }
        func release() {
            let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if s.waiting.isEmpty { s.permits += 1; return nil }
                return s.waiting.removeFirst()
            }
            c?.resume()
        }
        /// Lets every waiting pause go, so a cancelled keeper can end.
        func open() { state.withLock { s in let w = s.waiting; s.waiting = []; s.permits = 1_000; return w }.forEach { $0.resume() } }
    }

    @Test func aRenewedLeaseIsNotTakenAndALeaseLeftUnrenewedIs() async throws {
        let catalog = try SQLiteCatalog.inMemory()
        let clock = Clock()
        _ = try catalog.enqueue(JobSpec(.verify(rule: "cam")), itemID: nil, dedupeKey: "v")
        clock.advance(1)
        let lease = 30.0
        let job = try #require(try catalog.claimJob(kinds: [.verify], owner: "a", lease: lease, now: clock.now()))
        #expect(Lease.renewalInterval(lease: lease) == 10)
        let gate = Gate()
        let finish = Gate()
        let holder = Task {
            await Lease.keep(catalog, job: job.id, owner: "a", lease: lease, now: clock.now, pause: gate.pause) {
                await finish.pause(0)
            }
        }
        defer { gate.open(); finish.open(); holder.cancel() }
        #expect(await waitUntil(timeout: 20) { gate.entered == 1 }, "the keeper never paused")

        // One renewal, 25 s in: the lease now runs to 55 s, so another runner at 40 s finds nothing.
        clock.advance(25)
        gate.release()
        #expect(await waitUntil(timeout: 20) { gate.entered == 2 }, "the keeper did not renew and pause again")
        clock.advance(15)
        #expect(try catalog.claimJob(kinds: [.verify], owner: "b", lease: lease, now: clock.now()) == nil,
                "a lease renewed 15 s ago was taken")

        // No further renewal: past 55 s the job is free for the next runner.
        clock.advance(16)
        let taken = try catalog.claimJob(kinds: [.verify], owner: "b", lease: lease, now: clock.now())
        #expect(taken?.id == job.id, "a lease left unrenewed past its end was not given to the next runner")
        finish.release()
        await holder.value
    }
}
