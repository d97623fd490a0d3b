import EvidenceArchive
import EvidenceBlocking
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceStore
import Foundation

/// Copies an item to its rule's archive account: the original at the rule's `remote_path`,
/// and beside it `<remote_path>.<notary>.json|.tsr|.ers` (receipts), `.<origin>-certificate.pdf`
/// and `.manifest.json`.
///
/// Idempotent and crash-safe: a file recorded as archived is skipped; otherwise the remote path
/// is looked at first (for a file under 1 MiB on a provider that refuses to replace a file, only
/// once the upload was refused), and a file already there with the same content (provider
/// digest, or read back) is adopted rather than uploaded again. A different file at that path is never
/// replaced: ours goes beside it as `<stem>-<sha8>.<ext>`. Every upload is verified (provider
/// digest, or read back and re-hashed) before it is recorded; a copy that does not verify is
/// deleted and uploaded again on the next attempt.
public struct ArchiveHandler: JobHandler {
    public let kind = JobKind.archive
    let home: EvidenceHome
    let rules: LiveRules
    let archives: Archives
    /// Called while a file goes up: remote path, bytes sent, file size (the CLI's progress bar).
    let progress: (@Sendable (String, Int64, Int64) -> Void)?

    public init(home: EvidenceHome, rules: LiveRules, archives: Archives,
                progress: (@Sendable (String, Int64, Int64) -> Void)? = nil) {
        self.home = home; self.rules = rules; self.archives = archives; self.progress = progress
    }

    struct Upload {
        var role: ArchiveRole
        var object: SHA256Digest
        var size: Int64
        var remotePath: String
    }

    public func pauseScope(of job: QueuedJob) -> String? {
        job.payload.rule.flatMap { rules[$0]?.archive }.map { CredentialPause.scope(.account, $0) }
    }

    public func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard let itemID = job.itemID, let rule = job.payload.rule.flatMap({ rules[$0] }), let accountName = rule.archive else {
            throw JobError("archive job \(job.id): its rule \"\(job.payload.rule ?? "")\" is gone or has no archive", retryable: true)
        }
        guard let provider = archives.providers[accountName] else {
            throw JobError("archive account \"\(accountName)\" is not configured", retryable: true)
        }
        let home = self.home
        let (plan, done, item) = try await blockingJobWork {
            (try Self.plan(home: home, itemID: itemID, rule: rule, provider: provider), try home.catalog.archivedFiles(itemID: itemID),
             try home.catalog.item(id: itemID))
        }
        let state = item?.state
        // An earlier version of a path that changed since (a file still growing, or replaced):
        // not archived unless its archive had started. It stays stored and notarized.
        if let by = item?.supersededBy, !done.contains(where: { $0.account == accountName }) {
            return .done(ItemLifecycle(rule: rule).transition(from: state ?? .certified, on: .skippedSuperseded(stage: .archive, by: by)))
        }

        // The original, and any copy of 1 MiB or more, is recorded as soon as it is verified: the
        // original's row is what says the item's archive has started (a superseded item's archive
        // goes on only then), and a large copy must not be read back again after a crash. The
        // small ones (receipts, certificates, the manifest) are recorded together, in the
        // transaction that completes the job: a crash (or a lease lost) before that finds them on
        // the server, and the next attempt adopts each after proving it (stat, digest or read-back).
        // A later file's failure still records the verified ones before the attempt ends.
        var pending: [ArchivedFile] = []
        func recordPending() async throws(JobError) {
            guard !pending.isEmpty else { return }
            let files = pending
            try await blockingJobWork { try home.catalog.saveArchivedFiles(files) }
            pending = []
        }
        for upload in plan where !done.contains(where: { $0.account == accountName && $0.role == upload.role && $0.sha256 == upload.object }) {
            do {
                let file = try await place(upload, itemID: itemID, provider: provider)
                if upload.role == .original || upload.size >= Self.recordAtOnce {
                    try await blockingJobWork { try home.catalog.saveArchivedFile(file) }
                } else {
                    pending.append(file)
                }
            } catch {
                try? await recordPending()
                throw error
            }
        }
        let original = plan.first { $0.role == .original }?.remotePath ?? ""
        let details = ["account": accountName, "remote_path": original, "files": String(plan.count)]
        // The small files are recorded with the job's completion, in its transaction.
        guard var finished = ItemLifecycle(rule: rule).transition(from: state ?? .certified, on: .archived(details: details)) else {
            try await recordPending()
            return .done(nil)
        }
        finished.archivedFiles = pending
        return .done(finished)
    }

    /// The original and copies of at least this size are recorded as soon as they are verified; smaller ones with
    /// the job's completion (in its transaction, not one each: half the catalog's cost of archiving an item).
    static let recordAtOnce: Int64 = 1 << 20

    /// The files to archive and where (sanitized paths, never outside the account's root).
    static func plan(home: EvidenceHome, itemID: Int64, rule: WatchRule, provider: any ArchiveProvider) throws -> [Upload] {
        guard let item = try home.catalog.item(id: itemID) else { throw CatalogError.notFound("item \(itemID)") }
        let t = ItemTemplate(item: item, sources: try home.catalog.sources(itemID: itemID), rule: rule)
        let base = RemotePath.sanitized(t.expand(rule.remotePath), for: provider)
        var uploads = [Upload(role: .original, object: item.sha256, size: item.size, remotePath: base)]
        let proofs = try home.catalog.proofs(itemID: itemID).filter { $0.state == .confirmed }
        for p in proofs {
            guard let r = p.receipt else { continue }
            // A receipt the store cannot find (or cannot be asked about now) fails the job: an
            // archive without it would count as complete, and `after` could then act on it.
            guard let size = try home.store.objectSize(r) else {
                throw StoreError.objectCorrupt(path: home.store.location(of: r), detail: "the \(p.notary) receipt of item \(itemID) is missing from the store: run `evidence fsck`")
            }
            uploads.append(Upload(role: .receipt, object: r, size: size,
                                  remotePath: RemotePath.sanitized(base + ".\(p.notary)." + p.kind.receiptExtension, for: provider)))
        }
        for c in try home.catalog.certificates(itemID: itemID) {
            uploads.append(Upload(role: .certificate, object: c.sha256, size: c.size,
                                  remotePath: RemotePath.sanitized(base + ".\(c.origin)-certificate.pdf", for: provider)))
        }
        // The manifest's bytes depend only on what is archived, so a retry produces the same object.
        let manifest = ArchiveManifest(item: item, fileName: t.fileName, proofs: proofs,
                                       files: uploads.map { .init(path: $0.remotePath, role: $0.role.rawValue, sha256: $0.object.hex, size: $0.size) })
        let data = try CanonicalJSON.encoder(pretty: true).encode(manifest)
        let stored = try home.store.put(data)
        uploads.append(Upload(role: .manifest, object: stored.digest, size: Int64(data.count),
                              remotePath: RemotePath.sanitized(base + ".manifest.json", for: provider)))
        return uploads
    }

    /// Puts one file at its path (or beside a different file already there) and verifies it.
    ///
    /// A file of `recordAtOnce` or more is looked at first (a copy already there, from an attempt
    /// a crash cut short, is adopted instead of sent again). A smaller one, on a provider whose
    /// protocol refuses to replace a file (`uploadRefusesExisting`: `.conflict`), is sent without
    /// a look, and the path is looked at only when refused: an item's six small files cost six
    /// requests fewer.
    func place(_ upload: Upload, itemID: Int64, provider: any ArchiveProvider) async throws(JobError) -> ArchivedFile {
        // The object opened through its folder beneath the home (no link followed); the digest and
        // the provider read it by its descriptor's name, which a folder swapped for a link cannot redirect.
        // On an I/O thread: for an S3 store this is a download of the whole object.
        // Opened and hashed in one visit to an I/O thread (the provider's digest of the local
        // bytes, sent with the upload and compared with the provider's).
        let (store, object, kind) = (home.store, upload.object, provider.hashKind)
        let (opened, expected) = try await onIOThread { () -> Result<(Int32, String), JobError> in
            let fd: Int32
            do throws(StoreError) { fd = try store.openObject(object).fd } catch {
                return .failure(JobError("\(store.location(of: object)): \(error.description)", retryable: true))
            }
            do { return .success((fd, try kind.digest(of: "/proc/self/fd/\(fd)"))) } catch {
                close(fd)
                return .failure(JobError("\(error)", retryable: true))
            }
        }.get()
        defer { close(opened) }
        let local = "/proc/self/fd/\(opened)"
        paths: for path in [upload.remotePath, Self.alternate(upload.remotePath, sha8: upload.object.short)] {
            var looked = upload.size >= Self.recordAtOnce || !provider.uploadRefusesExisting
            var existing: RemoteFile?
            if looked {
                do { existing = try await provider.stat(path) } catch { throw Self.jobError(error, account: provider.account) }
            }
            while true {
                if let there = existing {
                    if let how = try await verify(there, path: path, upload: upload, expected: expected, provider: provider) {
                        return ArchivedFile(itemID: itemID, account: provider.account, remotePath: path, role: upload.role,
                                            sha256: upload.object, size: upload.size, verifiedBy: how + " (already there)", remoteID: there.id)
                    }
                    // A shorter file whose bytes are the start of ours is our own upload, cut by the
                    // link (a server that writes in place keeps what arrived): replaced. Anything
                    // else is someone else's file: never replaced; try the alternate name.
                    guard try await isCutCopy(there, path: path, local: local, upload: upload, provider: provider) else { continue paths }
                    do { try await provider.delete(path) } catch { throw Self.jobError(error, account: provider.account) }
                    existing = nil
                }
                let uploaded: RemoteFile
                do {
                    try await provider.makeFolders(RemotePath.parent(path))
                    var report: (@Sendable (Int64) -> Void)?
                    if let progress { let size = upload.size; report = { progress(path, $0, size) } }
                    // Sent once: a transient failure ends this attempt, and the job queue runs the job
                    // again later, which looks at the remote first (a copy that did arrive is adopted).
                    uploaded = try await provider.upload(local: local, size: upload.size, hash: expected, to: path, progress: report)
                    report?(upload.size)
                } catch {
                    guard error.kind == .conflict else { throw Self.jobError(error, account: provider.account) }
                    // Something is there: ours from an attempt cut short, a cut copy, or another file.
                    // Looked at once; a second refusal moves on to the alternate name.
                    guard !looked else { continue paths }
                    looked = true
                    do { existing = try await provider.stat(path) } catch { throw Self.jobError(error, account: provider.account) }
                    continue
                }
                // The provider's digest: from the upload's own answer where it carries one (the
                // provider's digest of what it stored), else from a stat; where the provider
                // reports none, the read-back proves the copy, and a stat first would prove nothing more.
                let stored: RemoteFile?
                if uploaded.hash != nil {
                    stored = uploaded
                } else if await provider.statReportsHash() {
                    do { stored = try await provider.stat(path) } catch { throw Self.jobError(error, account: provider.account) }
                } else {
                    stored = RemoteFile(path: path, size: uploaded.size, hash: nil, id: uploaded.id)
                }
                guard let stored, let how = try await verify(stored, path: path, upload: upload, expected: expected, provider: provider) else {
                    try? await provider.delete(path)
                    throw JobError("\(provider.account): \(path): the uploaded copy does not match \(upload.object.short)… (removed; will upload again)",
                                   retryable: true)
                }
                return ArchivedFile(itemID: itemID, account: provider.account, remotePath: path, role: upload.role,
                                    sha256: upload.object, size: upload.size, verifiedBy: how, remoteID: stored.id ?? uploaded.id)
            }
        }
        throw JobError("\(provider.account): \(upload.remotePath) and its alternate name hold other files; not replacing them", retryable: false)
    }

    /// Whether `remote` is shorter than the object and its bytes, read back, are the object's
    /// first bytes: an interrupted upload of ours, not another file.
    func isCutCopy(_ remote: RemoteFile, path: String, local: String, upload: Upload,
                   provider: any ArchiveProvider) async throws(JobError) -> Bool {
        guard remote.size >= 0, remote.size < upload.size else { return false }
        let temp = home.store.scratchDirectory + "/\(getpid()).prefix-\(UUID().uuidString)"  // pid first: other processes leave it alone
        defer { try? FileManager.default.removeItem(atPath: temp) }
        do { try await provider.download(path, to: temp) } catch { throw Self.jobError(error, account: provider.account) }
        let length = remote.size
        do {
            return try await onIOThread { () throws(StoreError) -> Bool in
                let back = try FileHasher.hash(path: temp)
                guard back.size == length else { return false }
                return SHA256Digest(bytes: try FileHasher.digest(path: local, algorithm: .sha256, offset: 0, length: length)) == back.digest
            }
        } catch {
            throw JobError("\(provider.account): \(path): \(error.description)", retryable: true)
        }
    }

    /// nil when the remote file is not our content; else how it was proven to be.
    func verify(_ remote: RemoteFile, path: String, upload: Upload, expected: String,
                provider: any ArchiveProvider) async throws(JobError) -> String? {
        do {
            return try await Self.proof(of: remote, at: path, size: upload.size, expected: expected, sha256: upload.object,
                                        provider: provider, scratch: home.store.scratchDirectory)
        } catch {
            throw Self.jobError(error, account: provider.account)
        }
    }

    /// How `remote` (at `path`) was proven to hold the bytes of a local file of `size` bytes,
    /// or nil when it does not: the size first, then the provider's digest (`expected`), or —
    /// where the provider reports none — the SHA-256 of a read-back copy against `sha256`.
    /// Item uploads and custody-anchor copies are proven the same way.
    static func proof(of remote: RemoteFile, at path: String, size: Int64, expected: String, sha256: SHA256Digest,
                      provider: any ArchiveProvider, scratch: String) async throws(ArchiveError) -> String? {
        if remote.size >= 0 && remote.size != size { return nil }
        if let h = remote.hash {
            if h == expected { return "\(provider.hashKind.rawValue):\(h)" }
            // A digest that differs: where the copy can be read back, whether the bytes or the
            // provider's digest are wrong. Bytes that are ours under a digest that is not theirs
            // (an ETag declared a SHA-1 that is not one) mean the digests prove nothing: the
            // configuration's error, stopped with its name instead of uploading again and again.
            if provider.digestDeclaredByConfig, let back = try await provider.readBackDigest(path), back.size == size, back.sha256 == sha256 {
                throw ArchiveError(.permanent, "\(provider.account): \(path): the server's \(provider.hashKind.rawValue) digest of the copy "
                                   + "is not that of its bytes (read back, they are ours): the account's etag setting declares "
                                   + "digests the server does not give; remove it, or start the server so that its ETags are SHA-1s")
            }
            return nil
        }
        // No digest from the provider: read it back and re-hash (size and SHA-256 both), as it
        // arrives where the provider can, else from a downloaded copy.
        if let back = try await provider.readBackDigest(path) {
            return back.size == size && back.sha256 == sha256 ? "read-back sha256" : nil
        }
        let temp = scratch + "/\(getpid()).readback-\(UUID().uuidString)"  // pid first: other processes leave it alone
        defer { try? FileManager.default.removeItem(atPath: temp) }
        try await provider.download(path, to: temp)
        do {
            let back = try await onIOThread { () throws(StoreError) in try FileHasher.hash(path: temp) }
            return back.size == size && back.digest == sha256 ? "read-back sha256" : nil
        } catch {
            throw ArchiveError(.local, "\(error)")
        }
    }

    /// `a/b/clip.mp4` → `a/b/clip-1a2b3c4d.mp4`.
    static func alternate(_ path: String, sha8: String) -> String {
        let dir = RemotePath.parent(path)
        let name = String(path.dropFirst(dir.isEmpty ? 0 : dir.count + 1))
        let stemEnd = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 } ?? name.endIndex
        let renamed = name[..<stemEnd] + "-" + sha8 + name[stemEnd...]
        return dir.isEmpty ? String(renamed) : dir + "/" + renamed
    }

    static func jobError(_ e: ArchiveError, account: String) -> JobError {
        JobError(e, account: account, retryable: e.retryable || e.kind == .local)
    }
}

/// `<remote_path>.manifest.json`: what was archived for the item, for whoever finds the files.
struct ArchiveManifest: Encodable {
    struct File: Encodable { var path: String; var role: String; var sha256: String; var size: Int64 }
    var format = "evidence-archive/1"
    var item: Int64
    var sha256: String
    var size: Int64
    var fileName: String
    var dateTaken: Date?
    var media: String?
    var proofs: [Proof]
    var files: [File]

    init(item: Item, fileName: String, proofs: [Proof], files: [File]) {
        self.item = item.id; sha256 = item.sha256.hex; size = item.size; self.fileName = fileName
        dateTaken = item.dateTaken; media = item.media?.summary; self.proofs = proofs; self.files = files
    }
}
