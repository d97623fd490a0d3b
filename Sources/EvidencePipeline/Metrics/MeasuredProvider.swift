import EvidenceCore
import EvidenceArchive

/// An archive provider whose calls are timed (`evidence_provider_request_duration_seconds`)
/// and whose acknowledged uploads are counted (`evidence_uploaded_bytes_total`), around any
/// provider: the providers themselves know nothing of metrics.
///
/// Behaves exactly as `base` otherwise: same answers, same errors, same hash kind and names.
struct MeasuredProvider: ArchiveProvider {
    let base: any ArchiveProvider
    let metrics: PipelineMetrics

    var account: String { base.account }
    var hashKind: ProviderHashKind { base.hashKind }
    var checksHashOnUpload: Bool { base.checksHashOnUpload }
    func statReportsHash() async -> Bool { await base.statReportsHash() }
    var uploadRefusesExisting: Bool { base.uploadRefusesExisting }
    var digestDeclaredByConfig: Bool { base.digestDeclaredByConfig }
    func sanitize(component: String) -> String { base.sanitize(component: component) }

    func whoami() async throws(ArchiveError) -> String {
        try await metrics.timeProvider(account, .whoami) { () async throws(ArchiveError) in try await base.whoami() }
    }

    func makeFolders(_ path: String) async throws(ArchiveError) {
        try await metrics.timeProvider(account, .makeFolders) { () async throws(ArchiveError) in try await base.makeFolders(path) }
    }

    func stat(_ path: String) async throws(ArchiveError) -> RemoteFile? {
        try await metrics.timeProvider(account, .stat) { () async throws(ArchiveError) in try await base.stat(path) }
    }

    /// Counts `size` bytes once the provider acknowledged the whole file; a failed upload counts none.
    func upload(local: String, size: Int64, hash: String, to path: String,
                progress: (@Sendable (Int64) -> Void)?) async throws(ArchiveError) -> RemoteFile {
        let file = try await metrics.timeProvider(account, .upload) { () async throws(ArchiveError) in
            try await base.upload(local: local, size: size, hash: hash, to: path, progress: progress)
        }
        metrics.recordUploaded(bytes: size, account: account)
        return file
    }

    func download(_ path: String, to local: String) async throws(ArchiveError) {
        try await metrics.timeProvider(account, .download) { () async throws(ArchiveError) in try await base.download(path, to: local) }
    }

    func readBackDigest(_ path: String) async throws(ArchiveError) -> (sha256: SHA256Digest, size: Int64)? {
        try await metrics.timeProvider(account, .download) { () async throws(ArchiveError) in try await base.readBackDigest(path) }
    }

    func share(_ path: String, _ request: ShareRequest) async throws(ArchiveError) -> ShareLink {
        try await metrics.timeProvider(account, .share) { () async throws(ArchiveError) in try await base.share(path, request) }
    }

    func delete(_ path: String) async throws(ArchiveError) {
        try await metrics.timeProvider(account, .delete) { () async throws(ArchiveError) in try await base.delete(path) }
    }
}

extension Archives {
    /// The same accounts, each provider measured into `metrics` (sessions unchanged).
    public func measured(by metrics: PipelineMetrics) -> Archives {
        Archives(providers: providers.mapValues { MeasuredProvider(base: $0, metrics: metrics) }, sessions: sessions)
    }
}
