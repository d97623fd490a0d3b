import Dispatch

/// Runs blocking file I/O (read, write, fsync) off the cooperative thread pool, so that a
/// slow disk never starves the async services.
func onIOThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { cont in
        DispatchQueue.global(qos: .utility).async { cont.resume(returning: work()) }
    }
}
