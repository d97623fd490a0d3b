import EvidenceCore
import Foundation

/// What the pipeline, the CLI and the portal need of a content-addressed store, whichever
/// kind it is: `ObjectStore` (files under the home, the default) or an S3-compatible bucket
/// (`S3ObjectStore` in EvidenceS3). Objects are named by the SHA-256 of their content and never
/// change; every reader that hands bytes on re-hashes them or gets them verified.
///
/// Both kinds keep a local scratch folder (`tmpDir`, the home's `tmp/`) for temp files: bundles,
/// downloads, spools.
public protocol ContentStore: AnyObject, Sendable {
    /// One line naming the store for messages: `the store at /home/objects`, `s3://bucket at https://…`.
    var storeDescription: String { get }
    /// The local scratch folder (the home's `tmp/`), by path.
    var tmpDir: String { get }
    /// The same folder by the descriptor opened when the store was opened (`/proc/self/fd/N`).
    var scratchDirectory: String { get }

    /// Reads `path` once, hashing it, and stores it under its digest. The source's rules are the
    /// local store's: symlinks refused unless `followSymlinks`, anything not a regular file
    /// refused without a blocking open, a file that changes while read refused
    /// (`.changedDuringRead`), reached beneath `root` without following links when given.
    /// Nothing is reported stored before the store made it durable.
    func ingest(path: String, followSymlinks: Bool, beneath root: String?,
                progress: ((Int64) -> Void)?) throws(StoreError) -> ObjectStore.IngestResult
    /// Stores bytes held in memory (proof receipts, certificates, manifests).
    @discardableResult
    func put(_ data: Data) throws(StoreError) -> (digest: SHA256Digest, newObject: Bool)
    /// A small object fully in memory, verified against its name.
    func read(_ d: SHA256Digest) throws(StoreError) -> Data
    /// A readable descriptor positioned at the object's start (the caller closes it) and its stat.
    func openObject(_ d: SHA256Digest) throws(StoreError) -> (fd: Int32, stat: SourceStat)
    /// Re-reads the object and hashes it.
    func hashObject(_ d: SHA256Digest) throws(StoreError) -> FileHasher.Result
    /// Size of the stored object, or nil when the store answered that it does not hold it.
    /// Throws when the store cannot say (a bucket out of reach): "missing" is never a guess,
    /// since a caller acts on it (fsck reports damage; archiving must not leave a proof out).
    func objectSize(_ d: SHA256Digest) throws(StoreError) -> Int64?
    /// Copies the object to `target` (temp beside it, fsync, rename), returning what was read.
    func copyObject(_ d: SHA256Digest, to target: String) throws(StoreError) -> (digest: SHA256Digest, size: Int64)
    /// Lists every object and checks its name, place and (with `rehash`) content.
    func check(rehash: Bool, progress: ((Int, Int) -> Void)?) -> ObjectStore.CheckReport
    /// Where the object is, for display and messages: a path, or `s3://bucket/sha256/…`.
    func location(of d: SHA256Digest) -> String
    /// Calls `body` with the path of a local file holding the object's bytes (the object itself
    /// for the local store; a verified local copy otherwise, removed afterwards).
    func withLocalCopy<T>(of d: SHA256Digest, _ body: (String) -> T) throws(StoreError) -> T
}

extension ContentStore {
    public func ingest(path: String, followSymlinks: Bool = false, beneath root: String? = nil) throws(StoreError) -> ObjectStore.IngestResult {
        try ingest(path: path, followSymlinks: followSymlinks, beneath: root, progress: nil)
    }

    public func check(rehash: Bool = true) -> ObjectStore.CheckReport { check(rehash: rehash, progress: nil) }

    /// Whether the store answered that it holds the object (a store out of reach: false).
    public func contains(_ d: SHA256Digest) -> Bool { ((try? objectSize(d)) ?? nil) != nil }
}

// Public initializers for other store kinds (the memberwise ones are internal).
extension ObjectStore.IngestResult {
    public static func stored(_ digest: SHA256Digest, size: Int64, newObject: Bool, source: SourceStat) -> Self {
        Self(digest: digest, size: size, newObject: newObject, source: source)
    }
}

extension ObjectStore.ObjectProblem {
    public static func problem(_ kind: Kind, at path: String, _ detail: String) -> Self {
        Self(kind: kind, path: path, detail: detail)
    }
}

extension ObjectStore.CheckReport {
    public static var empty: Self { Self() }
}

extension FileHasher.Result {
    public static func hashed(_ digest: SHA256Digest, size: Int64) -> Self { Self(digest: digest, size: size) }
}
