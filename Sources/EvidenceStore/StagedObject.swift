import EvidenceCore

/// A file read, hashed and copied into the store's `tmp/` by `ObjectStore.stage`: not durable
/// and not in the store until `ObjectStore.commit`. Dropping it uncommitted removes the copy.
///
/// Handed from the thread that staged it to the one that commits it, never used by two at once.
public final class StagedObject: Sendable {
    /// The source path it was read from.
    public let path: String
    public let digest: SHA256Digest
    public let size: Int64
    /// The source as it was when read (identical before and after the read).
    public let source: SourceStat
    /// The extra digests of the same read (`md5`, `sha1`, `sha512` → hex), as asked.
    public let digests: [String: String]
    let temp: TempFile

    init(temp: TempFile, path: String, digest: SHA256Digest, size: Int64, source: SourceStat, digests: [String: String] = [:]) {
        self.digests = digests
        self.temp = temp
        self.path = path
        self.digest = digest
        self.size = size
        self.source = source
    }

    /// Where the copy is while staged: exactly the bytes hashed, readable (the media probe
    /// reads it before the commit).
    public var stagedPath: String { temp.path }

    deinit { if !temp.isPublished { temp.discard() } }
}
