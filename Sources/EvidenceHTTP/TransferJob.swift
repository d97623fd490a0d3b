import Foundation

/// What the awaiting task and the pool thread share for one attempt: the request, the
/// continuation (resumed exactly once) and the cancellation flag that curl's progress callback
/// polls.
final class TransferJob: @unchecked Sendable {
    typealias Outcome = Result<HTTPResponse, HTTPError>

    let request: HTTPRequest
    let configuration: HTTPClientConfiguration
    let progress: (@Sendable (Int64, Int64) -> Void)?

    private enum Phase { case queued, running, finished }
    private let lock = NSLock()
    // Guarded by `lock`.
    private var phase = Phase.queued
    private var cancelled = false
    private var continuation: CheckedContinuation<Outcome, Never>?

    init(request: HTTPRequest, configuration: HTTPClientConfiguration,
         progress: (@Sendable (Int64, Int64) -> Void)?) {
        self.request = request
        self.configuration = configuration
        self.progress = progress
    }

    var cancelledError: HTTPError {
        HTTPError(kind: .cancelled, method: request.method, url: Redact.url(request.url))
    }

    var isCancelled: Bool {
        lock.withLock { cancelled }
    }

    /// Stores the continuation; false (and resumed with `.cancelled`) if the task was cancelled
    /// before it got here.
    func attach(_ continuation: CheckedContinuation<Outcome, Never>) -> Bool {
        lock.lock()
        if cancelled {
            phase = .finished
            lock.unlock()
            continuation.resume(returning: .failure(cancelledError))
            return false
        }
        self.continuation = continuation
        lock.unlock()
        return true
    }

    /// Called by the pool thread before the transfer; false when the job was cancelled while it
    /// waited in the queue (its task has already been answered).
    func start() -> Bool {
        lock.withLock {
            guard phase == .queued, !cancelled else { return false }
            phase = .running
            return true
        }
    }

    func finish(_ outcome: Outcome) {
        lock.lock()
        let continuation = self.continuation
        self.continuation = nil
        phase = .finished
        lock.unlock()
        continuation?.resume(returning: outcome)
    }

    /// A queued job is answered at once; a running one is aborted by curl's progress callback,
    /// which then answers it (after the temporary download file is removed).
    func cancel() {
        lock.lock()
        cancelled = true
        guard phase == .queued, let continuation else {
            lock.unlock()
            return
        }
        self.continuation = nil
        phase = .finished
        lock.unlock()
        continuation.resume(returning: .failure(cancelledError))
    }
}
