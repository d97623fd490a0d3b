// Re-exported: the pipeline's files and its clients (portal, metrics) had `onIOThread` from
// here before it moved to its own module, and still find it without an import of their own.
@_exported import EvidenceBlocking
import Foundation

/// Catalog or store work for a job, off the cooperative pool; a failure is a retryable
/// `JobError` carrying the error's own message (it names the file or the database).
func blockingJobWork<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws(JobError) -> T {
    do { return try await onIOThread(work) } catch { throw JobError("\(error)", retryable: true) }
}
