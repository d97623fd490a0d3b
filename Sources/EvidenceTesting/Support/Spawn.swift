import Foundation

/// Starts `process` with no other `Process.run()` of this test process running at once.
///
/// A CLI test pass once crashed inside Foundation's `Process.run()` (SIGSEGV in a memmove,
/// while other tests were starting processes on other threads). Starting is short; waiting
/// for the children stays concurrent.
public func startSerialized(_ process: Process) throws {
    spawnLock.lock()
    defer { spawnLock.unlock() }
    try process.run()
}

private let spawnLock = NSLock()
