import Foundation
import Synchronization

/// What the awaiting task and the pool thread share for one attempt: the request, the
/// continuation (resumed exactly once) and the cancellation flag that curl's progress callback
/// polls.
final class TransferJob: Sendable {
    typealias Outcome = Result<HTTPResponse, HTTPError>

    let request: HTTPRequest
    let configuration: HTTPClientConfiguration
    let progress: (@Sendable (Int64, Int64) -> Void)?

    private enum Phase { case queued, running, finished }
    private struct State {
        var phase = Phase.queued
        var cancelled = false
        var continuation: CheckedContinuation<Outcome, Never>?
    }
    private let state = Mutex(State())

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
        state.withLock { $0.cancelled }
    }

    /// Stores the continuation; false (and resumed with `.cancelled`) if the task was cancelled
    /// before it got here.
    func attach(_ continuation: CheckedContinuation<Outcome, Never>) -> Bool {
        let attached = state.withLock { s in
            if s.cancelled {
                s.phase = .finished
                return false
            }
            s.continuation = continuation
            return true
        }
        if !attached { continuation.resume(returning: .failure(cancelledError)) }
        return attached
    }

    /// Called by the pool thread before the transfer; false when the job was cancelled while it
    /// waited in the queue (its task has already been answered).
    func start() -> Bool {
        state.withLock { s in
            guard s.phase == .queued, !s.cancelled else { return false }
            s.phase = .running
            return true
        }
    }

    func finish(_ outcome: Outcome) {
        let continuation = state.withLock { s in
            defer { s.continuation = nil; s.phase = .finished }
            return s.continuation
        }
        continuation?.resume(returning: outcome)
    }

    /// A queued job is answered at once; a running one is aborted by curl's progress callback,
    /// which then answers it (after the temporary download file is removed).
    func cancel() {
        let waiting = state.withLock { s -> CheckedContinuation<Outcome, Never>? in
            s.cancelled = true
            guard s.phase == .queued, let continuation = s.continuation else { return nil }
            s.continuation = nil
            s.phase = .finished
            return continuation
        }
        waiting?.resume(returning: .failure(cancelledError))
    }
}
