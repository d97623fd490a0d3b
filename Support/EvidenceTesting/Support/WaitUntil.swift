import Foundation
import Glibc

/// Polls `condition` until it holds or `timeout` seconds pass; true when it held.
///
/// The pause between polls starts at 2 ms and doubles up to `every` (50 ms unless a costly
/// condition, such as one that runs a process, asks for longer), so a condition that holds soon
/// is seen soon and a long wait costs little. This overload sleeps the calling thread:
/// it is for synchronous helpers. In async code the other overload is chosen (with `await`),
/// which suspends the task instead and leaves the cooperative pool free.
@discardableResult
public func waitUntil(timeout: Double, every: Double = 0.05, _ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    var pause = min(0.002, every)
    while Date() < deadline {
        if condition() { return true }
        usleep(UInt32(pause * 1_000_000))
        pause = min(pause * 2, every)
    }
    return condition()
}

/// Polls `condition` until it holds or `timeout` seconds pass, suspending the task between
/// polls; true when it held.
@discardableResult
public func waitUntil(timeout: Double, every: Double = 0.05, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    let most = max(1, Int(every * 1000))
    var pause = min(2, most)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(pause))
        pause = min(pause * 2, most)
    }
    return condition()
}

/// Asks `condition` (a question to a server, say) until it holds or `timeout` seconds pass,
/// suspending the task between looks as `waitUntil` does; true when it held. An error thrown by
/// `condition` ends the wait and is thrown on. (Named apart from `waitUntil` so that a
/// synchronous condition never has two overloads to choose from.)
@discardableResult
public func pollUntil(timeout: Double, every: Double = 0.05, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    let most = max(1, Int(every * 1000))
    var pause = min(2, most)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(pause))
        pause = min(pause * 2, most)
    }
    return try await condition()
}
