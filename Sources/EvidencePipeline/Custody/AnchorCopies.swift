import EvidenceArchive
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation
import Logging

/// `[custody] anchor_archive`: each anchor is copied to an archive account, into
/// `evidence-anchors/`, so that deleting `anchors/` on this machine does not delete the proof.
/// An auditor checks the log against the copies with `evidence log verify --anchors DIR`.
extension ChainAnchors {
    /// Copies `anchor` to `provider` as `evidence-anchors/<name>` unless those bytes are already
    /// there. Proven by the provider's digest, or read back where it reports none; another file
    /// at that path is never replaced. Returns whether it uploaded.
    public static func copy(_ anchor: Anchor, to provider: any ArchiveProvider, scratch: String) async throws(ArchiveError) -> Bool {
        // The checkpoint first: the token verifies only with it beside it. Then the renewed
        // record, when there is one: after the TSA's certificate expires it is what verifies.
        var uploaded = false
        for (file, remote) in anchor.copies {
            if try await copy(file: file, as: remote, to: provider, scratch: scratch) { uploaded = true }
        }
        return uploaded
    }

    private static func copy(file: String, as remote: String, to provider: any ArchiveProvider, scratch: String) async throws(ArchiveError) -> Bool {
        let path = CustodyConfig.archiveFolder + "/" + remote
        let expected: String
        let local: FileHasher.Result
        do {
            expected = try provider.hashKind.digest(of: file)
            local = try FileHasher.hash(path: file)   // a few KB: no need to leave this thread
        } catch {
            throw ArchiveError(.local, "cannot read the anchor \(file): \(error)")
        }
        func matches(_ remote: RemoteFile) async throws(ArchiveError) -> Bool {
            try await ArchiveHandler.proof(of: remote, at: path, size: local.size, expected: expected, sha256: local.digest,
                                           provider: provider, scratch: scratch) != nil
        }
        if let existing = try await provider.stat(path) {
            guard try await matches(existing) else {
                throw ArchiveError(.conflict, "\(provider.account): \(path) holds another file; the anchor is not copied over it")
            }
            return false
        }
        try await provider.makeFolders(CustodyConfig.archiveFolder)
        _ = try await provider.upload(local: file, size: local.size, hash: expected, to: path, progress: nil)
        guard let stored = try await provider.stat(path), try await matches(stored) else {
            try? await provider.delete(path)
            throw ArchiveError(.transient, "\(provider.account): \(path): the copied anchor does not match (removed; copied again later)")
        }
        return true
    }

    /// Queues the copy of anchor `name` (one job per anchor and account, however often asked;
    /// one more for each renewal of its record, `renewal` its number of archive time-stamps).
    public static func enqueueCopy(_ name: String, account: String, catalog: any Catalog, renewal: Int = 0) throws(CatalogError) {
        _ = try catalog.enqueue(JobSpec(.anchorCopy(file: name, account: account)),
                                itemID: nil, dedupeKey: "anchor-copy:\(account):\(name)" + (renewal > 0 ? ":r\(renewal)" : ""))
    }
}

/// The `anchor-copy` job: one anchor to the `[custody] anchor_archive` account.
struct AnchorCopyHandler: JobHandler {
    let kind = JobKind.anchorCopy
    let home: EvidenceHome
    let provider: any ArchiveProvider
    let logger: Logger

    func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard case .anchorCopy(let name, _) = job.payload else {
            throw JobError("job \(job.id) is not an anchor copy", retryable: false)
        }
        guard let anchor = ChainAnchors.list(home).first(where: { $0.name == name }) else {
            throw JobError("anchor \(name) is no longer in \(ChainAnchors.directory(home)); nothing to copy", retryable: false)
        }
        do {
            if try await ChainAnchors.copy(anchor, to: provider, scratch: home.store.scratchDirectory) {
                logger.info("custody anchor copied", metadata: ["anchor": "\(name)", "account": "\(provider.account)",
                                                              "path": "\(CustodyConfig.archiveFolder)/\(name)"])
            }
        } catch {
            throw ArchiveHandler.jobError(error, account: provider.account)
        }
        return .done(nil)
    }
}
