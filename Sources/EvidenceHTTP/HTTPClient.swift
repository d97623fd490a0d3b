import Foundation
import Logging

/// The one HTTP client of the project: libcurl underneath, async on top.
///
/// Transfers run on at most `configuration.maxConcurrentTransfers` dedicated threads (see
/// `TransferPool`); callers simply await. TLS peer and host verification are always on.
/// Nothing secret is logged or put into errors: URLs are redacted, header values are never
/// logged, remote bodies quoted in errors are redacted against the request's credentials.
public final class HTTPClient: Sendable {
    public let configuration: HTTPClientConfiguration
    public let logger: Logger
    private let pool: TransferPool
    /// Requests waiting for a transfer slot (for tests).
    var queuedTransfers: Int { pool.queuedCount }

    public init(configuration: HTTPClientConfiguration = .init(), logger: Logger) {
        _ = CurlGlobal.initialized
        self.configuration = configuration
        self.logger = logger
        self.pool = TransferPool(limit: configuration.maxConcurrentTransfers)
    }

    deinit {
        pool.shutdown()
    }

    /// One attempt, no retry.
    ///
    /// Returns whatever status the server answered (3xx included: redirects are not followed).
    /// Throws `HTTPError` only when no complete answer arrived: `.transport`, `.timeout`, `.tls`,
    /// `.cancelled` (the task was cancelled; a running transfer is aborted), `.tooLarge`.
    /// `progress` is called on a transfer thread with the bytes sent and received so far.
    public func send(_ request: HTTPRequest,
                     progress: (@Sendable (_ sent: Int64, _ received: Int64) -> Void)? = nil)
        async throws(HTTPError) -> HTTPResponse
    {
        try await waitForOrigin(request)
        let job = TransferJob(request: request, configuration: configuration, progress: progress)
        let started = ContinuousClock.now
        let pool = self.pool
        let outcome: TransferJob.Outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard job.attach(continuation) else { return }
                pool.submit { [configuration] easy in
                    // A pause noted while this request waited for a transfer slot holds it too:
                    // `waitForOrigin` ran before the queue, and the queue can be seconds long.
                    // A transfer curl was about to send while the origin was paused sent nothing
                    // (see `Transfer.configure`): it waits like a queued one, then runs again.
                    var outcome: TransferJob.Outcome?
                    var running = false
                    while outcome == nil {
                        guard Self.waitOutPause(job, running: running, maxWait: configuration.retry.maxRetryAfter),
                              running || job.start() else { return }
                        running = true
                        if case .finished(let finished) = Transfer.run(job, on: easy) { outcome = finished }
                    }
                    guard let outcome else { return }
                    // Noted here, on the transfer thread, before it takes the next queued job
                    // (noting it after `send` resumes would be too late for that one).
                    if case .success(let response) = outcome { OriginPause.shared.note(response, url: request.url) }
                    job.finish(outcome)
                }
            }
        } onCancel: {
            job.cancel()
        }
        log(request, outcome, elapsed: ContinuousClock.now - started)
        return try outcome.get()
    }

    /// Waits while the request's origin is paused (see `OriginPause`), plus a random tenth of
    /// the wait so the requests held back do not all go at the same instant. A pause longer
    /// than `retry.maxRetryAfter` is not waited out: `.paused` is thrown with the time left, so
    /// a job queue reschedules instead of holding a worker.
    private func waitForOrigin(_ request: HTTPRequest) async throws(HTTPError) {
        var left = OriginPause.shared.remaining(for: request.url)
        guard left > 0 else { return }
        if left > configuration.retry.maxRetryAfter {
            throw Self.pausedError(request, left: left)
        }
        logger.debug("HTTP \(request.method) \(Redact.url(request.url)) waits \(String(format: "%.2f", left)) s: the server asked to wait")
        while left > 0 {
            do {
                try await Task.sleep(for: .seconds(Self.jittered(left)))
            } catch {
                throw HTTPError(kind: .cancelled, method: request.method, url: Redact.url(request.url))
            }
            // Another answer may have extended the pause meanwhile.
            left = OriginPause.shared.remaining(for: request.url)
        }
    }

    /// The transfer thread's side of `waitForOrigin`: holds `job` while its origin is paused,
    /// looking again after each wait (another answer may have extended the pause). A queued job
    /// sleeps, since cancelling it answers it at once; a running one, which `cancel` does not
    /// answer, looks for cancellation every 0.1 s and stops waiting when it sees it, so that its
    /// transfer reports it. Returns false once the job is answered: cancelled while queued, or
    /// paused longer than the retry policy waits (finished with `.paused`).
    private static func waitOutPause(_ job: TransferJob, running: Bool, maxWait: Double) -> Bool {
        let request = job.request
        var left = OriginPause.shared.remaining(for: request.url)
        while left > 0 {
            if left > maxWait {
                if running || job.start() { job.finish(.failure(pausedError(request, left: left))) }
                return false
            }
            if running {
                if job.isCancelled { return true }
                Thread.sleep(forTimeInterval: min(0.1, left))
            } else {
                Thread.sleep(forTimeInterval: jittered(left))
            }
            left = OriginPause.shared.remaining(for: request.url)
        }
        return true
    }

    /// `left` seconds of pause plus up to a tenth of it (at most 1 s), so held requests spread out.
    static func jittered(_ left: Double) -> Double { left + Double.random(in: 0...min(1, left / 10)) }

    /// Not sent: the origin is paused for longer than the retry policy waits.
    private static func pausedError(_ request: HTTPRequest, left: Double) -> HTTPError {
        pausedError(method: request.method, url: request.url, left: left)
    }

    static func pausedError(method: String, url: String, left: Double) -> HTTPError {
        HTTPError(kind: .paused, method: method, url: Redact.url(url), retryAfter: left.rounded(.up))
    }

    private func log(_ request: HTTPRequest, _ outcome: TransferJob.Outcome, elapsed: Duration) {
        // Debug lines only: their metadata is not built for every request when they are not written.
        guard logger.logLevel <= .debug else { return }
        let milliseconds = Double(elapsed.components.seconds) * 1000
            + Double(elapsed.components.attoseconds) / 1e15
        var metadata: Logger.Metadata = [
            "http.method": .string(request.method),
            "http.url": .string(Redact.url(request.url)),
            "http.duration_ms": .stringConvertible(Int(milliseconds.rounded())),
        ]
        switch outcome {
        case .success(let response):
            metadata["http.status"] = .stringConvertible(response.status)
            logger.debug("HTTP \(request.method) \(Redact.url(request.url)) → \(response.status)", metadata: metadata)
        case .failure(let error):
            metadata["http.error"] = .string(error.description)
            logger.debug("HTTP \(request.method) \(Redact.url(request.url)) failed", metadata: metadata)
        }
    }
}
